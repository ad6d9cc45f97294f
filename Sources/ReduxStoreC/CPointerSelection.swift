internal import CJSONC
internal import CReduxStoreAPI
@_spi(Bindings) import ReduxStore
#if canImport(Glibc)
import Glibc
#endif

/// A JSON Pointer C handed in (RFC 6901), checked and copied: `""` or text starting with `/`,
/// each `~` followed by `0` or `1`.
final class JSONPointerText: @unchecked Sendable {
    // @unchecked: immutable C string this object owns.
    let text: UnsafeMutablePointer<CChar>

    init(checking pointer: UnsafePointer<CChar>?) throws(StoreError) {
        let pointer = try CInput.required(pointer, "pointer")
        let length = strnlen(pointer, StoreLimits.maximumJSONTextSize + 1)
        guard length <= StoreLimits.maximumJSONTextSize else {
            throw StoreError(.limit, "pointer is longer than \(StoreLimits.maximumJSONTextSize) bytes")
        }
        guard length == 0 || pointer.pointee == 0x2F /* "/" */ else {
            throw StoreError(
                .invalidArgument,
                "pointer \"\(String(cString: pointer))\" is not a JSON Pointer: it must be \"\" "
                    + "(the whole state) or start with \"/\"")
        }
        try Self.checkEscapes(pointer, length: length)
        guard let copy = strdup(pointer) else {
            throw StoreError(.outOfMemory, "out of memory copying the pointer")
        }
        text = copy
    }

    deinit { free(text) }

    /// Refuses a `~` that is not followed by `0` or `1` (json-c would look such a pointer up as
    /// it is, and it would never name what its writer meant).
    private static func checkEscapes(_ pointer: UnsafePointer<CChar>, length: Int)
        throws(StoreError)
    {
        var index = 0
        while let found = memchr(pointer + index, 0x7E /* "~" */, length - index) {
            index = UnsafeRawPointer(pointer).distance(to: UnsafeRawPointer(found)) + 1
            let problem: String
            if index == length {
                problem = "it ends in \"~\""
            } else if pointer[index] == 0x30 || pointer[index] == 0x31 {  // "0", "1"
                continue
            } else {
                // "~" and the character after it, whole.
                let escape = String(cString: pointer + index - 1).prefix(2)
                problem = "\"\(escape)\" is not an escape"
            }
            throw StoreError(
                .invalidArgument,
                "pointer \"\(String(cString: pointer))\" is not a JSON Pointer: \(problem) "
                    + "(\"~0\" is \"~\" and \"~1\" is \"/\")")
        }
    }
}

/// The value at a JSON Pointer of a store's state, as `rdx_store_observe_pointer` selects it:
/// written flat (``FlatJSON``) after each notifying action and compared with the value written
/// the time before.
final class PointerValue<State: Codable>: @unchecked Sendable {
    // @unchecked: touched only by the store holding its lock (the selection's closures).
    let pointer: JSONPointerText
    /// The value read last, and a buffer to write the next one into (the two trade places
    /// after each read, so neither is allocated again once large enough).
    private var last = FlatJSON()
    private var next = FlatJSON()
    /// Whether the value read last was there at all.
    private var lastFound = false
    private var started = false

    init(pointer: JSONPointerText) { self.pointer = pointer }

    /// The selection the store runs: reads and compares this value.
    var selection: StateSelection {
        StateSelection(compare: { [self] state in compare(state) }, current: { () })
    }

    /// Runs `body` with the state as a json-c tree: a C store's own tree (borrowed), or a Swift
    /// state encoded for the call.
    static func withTree<T>(
        of state: borrowing State, _ body: (OpaquePointer?) throws(StoreError) -> T
    ) throws(StoreError) -> T {
        if let tree = copy state as? JSONCTree { return try body(tree.object) }
        let root = try JSONCEncoder().encode(state)
        defer { json_object_put(root) }
        return try body(root)
    }

    /// Reads the value and keeps it, flat: `true` when it differs from the one kept before
    /// (never for the first read). A state that cannot be encoded, or memory running out,
    /// counts as no change.
    private func compare(_ state: UnsafeMutableRawPointer) -> Bool {
        let state = state.assumingMemoryBound(to: State.self)
        let changed = try? Self.withTree(of: state.pointee) { (root) throws(StoreError) -> Bool in
            var node: OpaquePointer?
            let found = json_pointer_get(root, pointer.text, &node) == 0
            guard next.write(found ? node : nil) else { return false }
            let same = found == lastFound && next.sameValue(as: last)
            // Kept even when it is the same value: its members may be in a newer order, which
            // the next comparison then finds byte for byte.
            swap(&last, &next)
            lastFound = found
            defer { started = true }
            return started && !same
        }
        return changed ?? false
    }
}

/// A C observer of a JSON Pointer and what it is called with (see ``CObserverCall``).
struct CPointerObserverCall: @unchecked Sendable {
    // @unchecked: C promised the function may be called from any thread with this context.
    let function: rdx_observer_fn
    let context: UnsafeMutableRawPointer?
    let handle: CStoreHandle
    let pointer: JSONPointerText
    let selection: StateSelection

    /// Calls the observer if its value changed since it was last called, with the version of
    /// that change.
    func callAsFunction() {
        guard let (_, version) = selection.takeNewest() else { return }
        let store = OpaquePointer(Unmanaged.passUnretained(handle).toOpaque())
        function(store, pointer.text, version, context)
    }
}
