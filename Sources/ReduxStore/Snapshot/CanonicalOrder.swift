// Unordered collections in a canonical order, for the text that equal states share in every
// process: Swift seeds its hashes per process, so a `Set` (and a `Dictionary` whose keys are
// neither strings nor integers) encodes its elements in a different order in each.

/// A collection whose encoded order is its hash order: in a canonical encode it is written as
/// the same JSON array in every process, its elements sorted by their canonical JSON text.
protocol CanonicallyOrdered {
    /// The value as a JSON value in canonical order, or `nil` when its own encoding is canonical
    /// already (a dictionary encoded as an object: the object's keys are sorted when written).
    func canonicallyOrdered() throws(StoreError) -> JSONValue?
}

extension Set: CanonicallyOrdered where Element: Encodable {
    func canonicallyOrdered() throws(StoreError) -> JSONValue? {
        var elements: [(text: String, value: JSONValue)] = []
        elements.reserveCapacity(count)
        for element in self {
            let value = try JSONValue(canonicallyEncoding: element)
            elements.append((value.description, value))
        }
        // Compared by UTF-8 bytes: the same order for the same texts, whatever the process.
        elements.sort { $0.text.utf8.lexicographicallyPrecedes($1.text.utf8) }
        return .array(elements.map(\.value))
    }
}

extension Dictionary: CanonicallyOrdered where Key: Encodable, Value: Encodable {
    func canonicallyOrdered() throws(StoreError) -> JSONValue? {
        // The keys Swift's own `encode(to:)` writes as an object's keys.
        if Key.self == String.self || Key.self == Int.self || Key.self is any CodingKeyRepresentable.Type {
            return nil
        }
        var entries: [(text: String, key: JSONValue, value: JSONValue)] = []
        entries.reserveCapacity(count)
        for (key, value) in self {
            let encodedKey = try JSONValue(canonicallyEncoding: key)
            entries.append((encodedKey.description, encodedKey, try JSONValue(canonicallyEncoding: value)))
        }
        entries.sort { $0.text.utf8.lexicographicallyPrecedes($1.text.utf8) }
        // The shape Swift's own encoding has: keys and values alternating in one array.
        var flat: [JSONValue] = []
        flat.reserveCapacity(entries.count * 2)
        for entry in entries {
            flat.append(entry.key)
            flat.append(entry.value)
        }
        return .array(flat)
    }
}

extension JSONValue {
    /// Makes a JSON value of any `Encodable` value with its unordered collections in a canonical
    /// order: a `Set`'s elements, and the entries of a `Dictionary` whose keys are neither
    /// strings nor integers, sorted by their canonical JSON text. Equal values give equal JSON
    /// values, and so the same ``description``, in every process, whatever its hash seed. A
    /// number keeps its kind (``TapeBuffer/jsonValue(at:)``): a `Double` or `Float` is a
    /// `double` even when whole (`1.0`), as json-c keeps a C program's doubles, so that a
    /// process reading the text back has the kind every other process has.
    ///
    /// Costs more than ``init(encoding:)`` for each unordered collection (each element is encoded
    /// on its own first); the same for everything else.
    ///
    /// Package: replication stores and compares snapshots in this form.
    package init(canonicallyEncoding value: some Encodable) throws(StoreError) {
        let tape = SnapshotTape()
        try SnapshotEncoder().encode(value, into: tape, canonicalOrder: true)
        guard tape.buffer.pointee.slotCount > 0 else {
            throw StoreError(.encode, "the value encoded nothing")
        }
        self = withExtendedLifetime(tape) { tape.buffer.pointee.jsonValue(at: 0) }
    }
}
