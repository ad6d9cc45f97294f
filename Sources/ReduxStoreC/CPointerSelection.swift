internal import CJSONC
internal import CReduxStoreAPI
import ReduxStore
#if canImport(Glibc)
import Glibc
#endif

/// A JSON Pointer C handed in (RFC 6901), checked and copied: `""` or text starting with `/`.
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
        guard let copy = strdup(pointer) else {
            throw StoreError(.outOfMemory, "out of memory copying the pointer")
        }
        text = copy
    }

    deinit { free(text) }
}

/// One `rdx_store_observe_pointer` registration: the pointer, and the version of the newest
/// change not yet told to the observer, shared by the selection (which sets it under the store's
/// lock) and the observer's call (which takes it).
final class PointerObservation: Sendable {
    let pointer: JSONPointerText
    let newest = Locked(SelectedValue<UInt64>())

    init(pointer: JSONPointerText) { self.pointer = pointer }
}

/// The selection of `rdx_store_observe_pointer`: the value at a JSON Pointer of the state, kept
/// as a deep copy and compared with `json_object_equal` after each notifying action.
final class JSONPointerSelection<State: Codable>: StateSelection, @unchecked Sendable {
    // @unchecked: `last` and `started` are touched only by the store holding its lock; `newest`
    // is behind its own lock; `pointer` is immutable.
    let observation: PointerObservation
    /// The value read last: a deep copy this selection owns (`nil` for JSON null or absent).
    private var last: OpaquePointer?
    /// Whether the value read last was there at all.
    private var lastFound = false
    private var started = false

    init(_ observation: PointerObservation) {
        self.observation = observation
    }

    deinit { json_object_put(last) }

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

    func start(state: UnsafeMutableRawPointer) {
        _ = read(state)
        started = true
    }

    func update(state: UnsafeMutableRawPointer, version: UInt64) -> Bool {
        guard started else {
            start(state: state)
            return false
        }
        guard read(state) else { return false }
        observation.newest.withLock { $0.set(version, at: version) }
        return true
    }

    /// Reads the value and keeps a copy if it differs from the one kept; returns whether it
    /// did. A state that cannot be encoded, or memory running out, counts as no change.
    private func read(_ state: UnsafeMutableRawPointer) -> Bool {
        let state = state.assumingMemoryBound(to: State.self)
        let result = try? Self.withTree(of: state.pointee) { (root) throws(StoreError) -> Bool in
            var node: OpaquePointer?
            let found = json_pointer_get(root, observation.pointer.text, &node) == 0
            if found == lastFound && (!found || json_object_equal(node, last) != 0) {
                return false
            }
            let copy = found ? try JSONCTree.deepCopy(node) : nil
            json_object_put(last)
            last = copy
            lastFound = found
            return true
        }
        return result ?? false
    }
}

/// A C observer of a JSON Pointer and what it is called with (see ``CObserverCall``).
struct CPointerObserverCall: @unchecked Sendable {
    // @unchecked: C promised the function may be called from any thread with this context.
    let function: rdx_observer_fn
    let context: UnsafeMutableRawPointer?
    let handle: CStoreHandle
    let observation: PointerObservation

    /// Calls the observer if its value changed since it was last called.
    func callAsFunction() {
        guard let version = observation.newest.withLock({ $0.take() }) else { return }
        let store = OpaquePointer(Unmanaged.passUnretained(handle).toOpaque())
        function(store, observation.pointer.text, version, context)
    }
}
