#if canImport(Glibc)
import Glibc
#endif

/// Formats journal entries as JSON lines, on the journal's writer thread. Made for speed: the
/// writer must keep up with dispatches, which take tens of nanoseconds, so the line is written
/// into one buffer, the timestamp's date and time are reused within a second, the identifier's
/// quoted text is reused while it repeats, and a typed action's properties are printed straight
/// from the snapshot tape they are encoded into (no ``JSONValue``, no json-c tree).
///
/// The line: `{"version":N,"identifier":"…","payload":…,"time":"2026-11-22T10:00:00.000Z"}` and
/// `"typed":true` for a typed action's properties, `"replayable":false` for an action the
/// journal cannot record, `"batch":F` for an action of a batch (F: the batch's first version),
/// `"patch":[…]`; then a newline. A payload or patch that cannot be written (a number JSON cannot
/// hold, an encoding that fails, a line too long) is left out, and the line says why:
/// `"payloadError":"…"` (with `"replayable":false`), `"patchError":"…"`.
struct JournalLineFormatter: ~Copyable {
    private var bytes = ByteBuffer()
    /// The second `secondsText` is for: `2026-11-22T10:00:00`.
    private var second: Int = -1
    private var secondsText: [UInt8] = []

    /// The lines formatted so far, one after the other; valid until the next change.
    var output: UnsafeBufferPointer<UInt8> { bytes.contents }

    /// Forgets the lines formatted so far (keeping the buffer).
    mutating func reset() { bytes.count = 0 }

    /// Forgets the output from `count` bytes on (a line begun there).
    mutating func truncate(to count: Int) { bytes.count = count }

    /// Appends the line of `entry` (newline included) to ``output``, with its patch (or why
    /// there is none) if `includingPatch` (``JournalOptions/recordPatches``: the record may
    /// carry a patch made for another consumer). Returns what the line leaves out and why, when
    /// it leaves out the payload or the patch (the line says it too).
    @discardableResult
    mutating func appendLine(for entry: ChangeRecord, includingPatch: Bool) -> JournalLineProblem? {
        appendLine(for: entry, includingPatch: includingPatch, omittingPayload: nil)
    }

    /// ``appendLine(for:includingPatch:)``; with `omission`, the payload and patch are left out
    /// for that reason.
    @discardableResult
    mutating func appendLine(
        for entry: ChangeRecord, includingPatch: Bool, omittingPayload omission: String?
    ) -> JournalLineProblem? {
        var problem: JournalLineProblem?
        append("{\"version\":")
        appendInteger(entry.version)
        append(",\"identifier\":")
        appendIdentifier(entry.action.identifier)
        if let omission {
            append(",\"replayable\":false,\"payloadError\":")
            appendString(omission)
        } else if let reason = appendPayload(of: entry.action) {
            append(",\"payloadError\":")
            appendString(reason)
            problem = JournalLineProblem(kind: .encode, reason: "version \(entry.version): \(reason)")
        }
        append(",\"time\":\"")
        appendTime(entry.time)
        append("\"")
        if let batch = entry.batch {
            append(",\"batch\":")
            appendInteger(batch.lowerBound)
        }
        if entry.source.isKnown {
            append(",\"source\":")
            appendSource(entry.source)
        }
        let patch = includingPatch ? entry.patch : nil
        var patchError = includingPatch ? entry.patchError : nil
        if let omission, patch != nil || patchError != nil {
            patchError = omission
        } else if let patch {
            let start = bytes.count
            append(",\"patch\":")
            if let path = appendPatch(patch) {
                bytes.count = start
                patchError = unwritableReason("the patch", at: path)
            }
        }
        if let patchError {
            append(",\"patchError\":")
            appendString(patchError)
            if omission == nil, problem == nil {
                problem = JournalLineProblem(kind: .encode, reason: "version \(entry.version): \(patchError)")
            }
        }
        append("}\n")
        return problem
    }

    /// How each action type's payload is printed, found once per type: a protocol cast
    /// (`as? any Encodable`) costs far more than a lookup here.
    private enum Kind {
        case json, other
        /// A ``JournalRecordable`` type, and how to read an action of it's payload: the action
        /// is taken as that type without the runtime's cast (``projection(of:as:)``).
        case recordable((any Action) -> OpaquePointer?)
        case encodable((any Action) -> Result<SnapshotTape, StoreError>)
    }
    private var kinds: [ObjectIdentifier: Kind] = [:]
    /// The last type looked up: a journal's entries are often of one type in a row.
    private var lastType: ObjectIdentifier?
    private var lastKind = Kind.other

    private mutating func kind(of action: any Action) -> Kind {
        let type = ObjectIdentifier(Swift.type(of: action))
        if type == lastType { return lastKind }
        lastType = type
        if let kind = kinds[type] {
            lastKind = kind
            return kind
        }
        let kind: Kind
        if action is JSONAction {
            kind = .json
        } else if let recordable = action as? any JournalRecordable {
            kind = .recordable(Self.payloadReader(for: recordable))
        } else if let encodable = action as? any Encodable {
            kind = .encodable(Self.encoder(for: encodable))
        } else {
            kind = .other
        }
        kinds[type] = kind
        lastKind = kind
        return kind
    }

    /// Reads the payload of an action of `example`'s type `A`, which the caller checks (a
    /// ``Kind`` is found by the action's type).
    private static func payloadReader<A: JournalRecordable>(for example: A) -> (any Action) -> OpaquePointer? {
        { projection(of: $0, as: A.self).journalPayload }
    }

    /// Encodes actions of `sample`'s type into a tape of its own, reused from one action to
    /// the next (the writer thread alone uses it); the cast back to the type is to a concrete
    /// type, which is cheap.
    private static func encoder<E: Encodable>(for sample: E) -> (any Action) -> Result<SnapshotTape, StoreError> {
        let encoder = SnapshotEncoder()
        let tape = SnapshotTape()
        return { action in
            guard let action = action as? E else {
                return .failure(StoreError(.encode, "an action of another type under the same type's identity"))
            }
            do throws(StoreError) {
                try encoder.encode(action, into: tape)
                return .success(tape)
            } catch {
                return .failure(error)
            }
        }
    }

    /// Prints `,"payload":…` (and `,"typed":true` for a typed action's properties), or
    /// `,"replayable":false` for an action the journal cannot record. Returns why the payload
    /// was left out when it could not be written (with `,"replayable":false` printed).
    private mutating func appendPayload(of action: any Action) -> String? {
        let start = bytes.count
        var reason: String
        switch kind(of: action) {
        case .other:
            append(",\"replayable\":false")
            return nil
        case .encodable(let encode):
            switch encode(action) {
            case .success(let tape):
                append(",\"payload\":")
                guard appendTape(tape) else {
                    reason = unwritableReason("its payload", at: failedPointer())
                    break
                }
                append(",\"typed\":true")
                return nil
            case .failure(let error):
                reason = "its payload could not be encoded: \(error.message)"
            }
        case .json:
            guard let payload = projection(of: action, as: JSONAction.self).payload else { return nil }
            append(",\"payload\":")
            guard appendValue(payload) else {
                reason = unwritableReason("its payload", at: failedPointer())
                break
            }
            return nil
        case .recordable(let payload):
            guard let tree = payload(action) else { return nil }
            do throws(StoreError) {
                let text = try JSONCText.print(tree)
                append(",\"payload\":")
                appendText(text)
                return nil
            } catch {
                reason = "its payload could not be written: \(error.message)"
            }
        }
        bytes.count = start
        append(",\"replayable\":false")
        return reason
    }

    /// Prints `"File.swift:42"`: the file's name without its folders, a colon and the line, as
    /// a JSON string (a lent file name may hold any bytes: escaped, and invalid UTF-8
    /// replaced). The text up to the line is made once per file and kept (``sourcePrefix``):
    /// lines from one file in a row cost a copy and the line's digits.
    private mutating func appendSource(_ source: DispatchSite) {
        if source.file != sourceFile || sourcePrefix.isEmpty {
            let start = bytes.count
            appendString(String(decoding: source.fileNameBytes, as: UTF8.self) + ":")
            // Without the closing quote, which follows the line.
            sourcePrefix = Array(bytes.contents[start..<(bytes.count - 1)])
            sourceFile = source.file
            bytes.count = start
        }
        sourcePrefix.withUnsafeBufferPointer { bytes.append($0) }
        appendInteger(UInt64(source.line))
        append("\"")
    }

    /// The file of the last source printed, and its text up to the line (`"File.swift:`).
    private var sourceFile: UnsafeRawPointer?
    private var sourcePrefix: [UInt8] = []

    /// Where the last value that could not be printed held what stopped it: the JSON Pointer's
    /// tokens from the inside out, filled as the printing functions return `false`.
    private var failedTokens: [String] = []
    /// What stopped the last value that could not be printed: a number JSON cannot hold, or
    /// what a reader of the journal (json-c) refuses to parse.
    private var failure = Unwritable.nonFinite

    private enum Unwritable {
        /// NaN or an infinity.
        case nonFinite
        /// A container nested past ``StoreLimits/maximumNestingDepth``.
        case tooDeep
        /// An object key holding U+0000, which json-c cannot hold in a key.
        case nulInKey
    }

    /// Why `what` (`its payload`, `the patch`) could not be written, the place being `pointer`:
    /// `… holds a number JSON cannot hold (NaN or an infinity) at "/pointer"`, `… nests deeper
    /// than 256 levels at "/pointer"`, or `… holds an object key with U+0000 at "/pointer"`.
    private mutating func unwritableReason(_ what: String, at pointer: String) -> String {
        defer { failure = .nonFinite }
        switch failure {
        case .nonFinite:
            return "\(what) holds a number JSON cannot hold (NaN or an infinity) at \"\(pointer)\""
        case .tooDeep:
            return "\(what) nests deeper than \(StoreLimits.maximumNestingDepth) levels at \"\(pointer)\""
        case .nulInKey:
            return "\(what) holds an object key with U+0000, which the journal's reader (json-c) cannot hold "
                + "in a key, at \"\(pointer)\""
        }
    }

    /// The JSON Pointer of ``failedTokens``, emptying them.
    private mutating func failedPointer() -> String {
        defer { failedTokens.removeAll() }
        return failedTokens.reversed().map { "/" + JSONPointerPath.escape($0) }.joined()
    }

    /// Prints RFC 6902 operations as ``JSONPatch/Operation`` encodes them; for a value that
    /// cannot be printed (``appendValue(_:depth:)``), returns where it stopped, as a JSON Pointer
    /// into the state (with part of the operations printed).
    private mutating func appendPatch(_ operations: [JSONPatch.Operation]) -> String? {
        bytes.append(0x5B)
        for (index, operation) in operations.enumerated() {
            if index > 0 { bytes.append(0x2C) }
            switch operation.op {
            case .add: append("{\"op\":\"add\",\"path\":")
            case .remove: append("{\"op\":\"remove\",\"path\":")
            case .replace: append("{\"op\":\"replace\",\"path\":")
            }
            appendString(operation.path)
            if let value = operation.value {
                append(",\"value\":")
                guard appendValue(value) else { return operation.path + failedPointer() }
            }
            bytes.append(0x7D)
        }
        bytes.append(0x5D)
        return nil
    }

    /// Prints `value`, a container at nesting level `depth` (the value itself counts as one),
    /// as JSON; `false` (with part of it printed) for a non-finite number, a container nested
    /// past ``StoreLimits/maximumNestingDepth`` or a key holding U+0000 (``failure``), whose
    /// place is then in ``failedTokens``.
    private mutating func appendValue(_ value: JSONValue, depth: Int = 1) -> Bool {
        switch value {
        case .null: append("null")
        case .bool(let flag): append(flag ? "true" : "false")
        case .int(let number): append(number)
        case .uint(let number): appendInteger(number)
        case .double(let number):
            guard number.isFinite else { return false }
            appendDouble(number)
        case .string(let text): appendString(text)
        case .array(let elements):
            guard depth <= StoreLimits.maximumNestingDepth else {
                failure = .tooDeep
                return false
            }
            append("[")
            for (index, element) in elements.enumerated() {
                if index > 0 { append(",") }
                guard appendValue(element, depth: depth + 1) else {
                    failedTokens.append(String(index))
                    return false
                }
            }
            append("]")
        case .object(let members):
            guard depth <= StoreLimits.maximumNestingDepth else {
                failure = .tooDeep
                return false
            }
            append("{")
            var first = true
            for (key, member) in members {
                if !first { append(",") }
                first = false
                guard !key.string.utf8.contains(0) else {
                    failure = .nulInKey
                    failedTokens.append(key.string)
                    return false
                }
                appendString(key.string)
                append(":")
                guard appendValue(member, depth: depth + 1) else {
                    failedTokens.append(key.string)
                    return false
                }
            }
            append("}")
        }
        return true
    }

    /// Prints the value on `tape` as JSON, keys in encoding order; `false` (with part of it
    /// printed) for a non-finite number, which JSON cannot hold.
    private mutating func appendTape(_ tape: SnapshotTape) -> Bool {
        let buffer = tape.buffer.pointee
        guard buffer.slotCount > 0 else { return false }
        return appendTapeValue(0, buffer)
    }

    private mutating func appendTapeValue(_ node: UInt32, _ tape: TapeBuffer) -> Bool {
        let slot = tape.slots[Int(node)]
        switch slot.tag {
        case .pending: append("{}")
        case .null: append("null")
        case .bool: append(slot.payload != 0 ? "true" : "false")
        case .int: append(slot.int64)
        case .uint: appendInteger(slot.payload)
        case .bigint: appendText(tape.strings[slot.stringIndex])
        case .double:
            let number = slot.double
            guard number.isFinite else { return false }
            appendDouble(number)
        case .float:
            let number = slot.float
            guard number.isFinite else { return false }
            appendText(number.description)
        case .string: appendString(tape.strings[slot.stringIndex])
        default:
            let isObject = slot.tag == .object
            bytes.append(isObject ? 0x7B : 0x5B)
            var child = slot.first
            var first = true
            var index = 0
            while child != 0 {
                if !first { bytes.append(0x2C) }
                first = false
                if isObject {
                    appendString(tape.strings[Int(tape.slots[Int(child)].key)])
                    bytes.append(0x3A)
                }
                guard appendTapeValue(child, tape) else {
                    failedTokens.append(isObject ? tape.strings[Int(tape.slots[Int(child)].key)] : String(index))
                    return false
                }
                child = tape.slots[Int(child)].next
                index += 1
            }
            bytes.append(isObject ? 0x7D : 0x5D)
        }
        return true
    }

    @inline(__always)
    private mutating func append(_ text: StaticString) {
        bytes.appendShort(text.utf8Start, count: text.utf8CodeUnitCount)
    }

    /// The last identifier printed and its quoted text: an action type's identifier is most
    /// often the same string each time, which compares equal at once. Compared code point by
    /// code point: `"cafe\u{301}"` after `"caf\u{E9}"` (one Swift string) is printed as it is.
    private var lastIdentifier = ""
    private var lastIdentifierText = ByteBuffer(capacity: 64)

    private mutating func appendIdentifier(_ identifier: String) {
        if !JSONKey.sameCodePoints(identifier, lastIdentifier) {
            let start = bytes.count
            appendString(identifier)
            lastIdentifier = identifier
            lastIdentifierText.count = 0
            lastIdentifierText.append(UnsafeBufferPointer(rebasing: bytes.contents[start...]))
            return
        }
        bytes.append(lastIdentifierText.contents)
    }

    /// A finite double as JSON text that reads back as a double of the same value and sign:
    /// `2.0`, `-0.0`, `0.1`, `1e+16`.
    private mutating func appendDouble(_ number: Double) {
        if number == number.rounded() && number.magnitude < 1e15 {
            appendText((number.sign == .minus ? "-" : "") + String(Int64(number.magnitude)) + ".0")
        } else {
            appendText("\(number)")
        }
    }

    private mutating func appendText(_ text: String) {
        var text = text
        text.withUTF8 { bytes.append($0) }
    }

    private mutating func appendInteger(_ value: UInt64) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // room for 20 digits, filled from the end
        withUnsafeMutableBytes(of: &digits) { buffer in
            var index = buffer.count
            var rest = value
            repeat {
                index -= 1
                buffer[index] = 0x30 + UInt8(rest % 10)
                rest /= 10
            } while rest > 0
            bytes.append(UnsafeBufferPointer(
                start: buffer.baseAddress!.assumingMemoryBound(to: UInt8.self) + index,
                count: buffer.count - index))
        }
    }

    private mutating func append(_ value: Int64) {
        if value < 0 {
            bytes.append(0x2D)
            appendInteger(value.magnitude)
        } else {
            appendInteger(UInt64(value))
        }
    }

    /// A JSON string: quotes, and `\"`, `\\` and `\u00XX` for control characters.
    private mutating func appendString(_ text: String) {
        var text = text
        let plain = text.withUTF8 { utf8 in
            // Most identifiers need no escape: copied at once.
            guard !utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) else { return false }
            bytes.append(0x22)
            bytes.append(utf8)
            bytes.append(0x22)
            return true
        }
        if plain { return }
        bytes.append(0x22)
        for byte in text.utf8 {
            switch byte {
            case 0x22: bytes.append(0x5C); bytes.append(0x22)
            case 0x5C: bytes.append(0x5C); bytes.append(0x5C)
            case 0x0A: bytes.append(0x5C); bytes.append(0x6E)
            case 0x0D: bytes.append(0x5C); bytes.append(0x72)
            case 0x09: bytes.append(0x5C); bytes.append(0x74)
            case 0..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                for escaped in [0x5C, 0x75, 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 15)]] {
                    bytes.append(escaped)
                }
            default: bytes.append(byte)
            }
        }
        bytes.append(0x22)
    }

    /// `2026-11-22T10:00:00.000Z`; the part before the milliseconds is made once per second.
    private mutating func appendTime(_ time: timespec) {
        if Int(time.tv_sec) != second {
            second = Int(time.tv_sec)
            var seconds = time.tv_sec
            var parts = tm()
            gmtime_r(&seconds, &parts)
            func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
            secondsText = Array(("\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
                + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))").utf8)
        }
        secondsText.withUnsafeBufferPointer { bytes.append($0) }
        let milliseconds = Int(time.tv_nsec / 1_000_000)
        bytes.append(0x2E)
        bytes.append(0x30 + UInt8(milliseconds / 100))
        bytes.append(0x30 + UInt8(milliseconds / 10 % 10))
        bytes.append(0x30 + UInt8(milliseconds % 10))
        bytes.append(0x5A)
    }
}

/// A part of a journal line left out, and why (``JournalLineFormatter/appendLine(for:includingPatch:)``).
struct JournalLineProblem {
    /// ``StoreError/Kind/encode`` for a value JSON cannot hold, ``StoreError/Kind/limit`` for a
    /// line too long.
    let kind: StoreError.Kind
    /// `version N: …`.
    let reason: String
}

/// A growable byte buffer whose appends are a capacity test and a `memcpy` (an array's
/// `append(contentsOf:)` cost far more a call, five calls a line).
struct ByteBuffer: ~Copyable {
    private var start: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    var count = 0

    init(capacity: Int = 1 << 16) {
        self.capacity = capacity
        start = .allocate(capacity: capacity)
    }

    deinit { start.deallocate() }

    var contents: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: start, count: count) }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        if count == capacity { grow(to: count + 1) }
        start[count] = byte
        count += 1
    }

    @inline(__always)
    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress else { return }
        if count + bytes.count > capacity { grow(to: count + bytes.count) }
        (start + count).update(from: source, count: bytes.count)
        count += bytes.count
    }

    /// Appends `byte` `repeated` times.
    mutating func append(repeating byte: UInt8, count repeated: Int) {
        if count + repeated > capacity { grow(to: count + repeated) }
        (start + count).initialize(repeating: byte, count: repeated)
        count += repeated
    }

    /// Replaces the last byte (there is one) with `byte`.
    mutating func setLast(_ byte: UInt8) {
        precondition(count > 0)
        start[count - 1] = byte
    }

    /// Appends a few bytes (a JSON punctuation run): copied in a loop, which for a handful of
    /// bytes costs less than a call to `memcpy`.
    @inline(__always)
    mutating func appendShort(_ source: UnsafePointer<UInt8>, count added: Int) {
        if count + added > capacity { grow(to: count + added) }
        let target = start + count
        for index in 0..<added { target[index] = source[index] }
        count += added
    }

    private mutating func grow(to needed: Int) {
        var newCapacity = capacity * 2
        while newCapacity < needed { newCapacity *= 2 }
        let bigger = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        bigger.update(from: start, count: count)
        start.deallocate()
        start = bigger
        capacity = newCapacity
    }
}
