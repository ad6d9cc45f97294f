internal import CJSONC
internal import CReduxStoreAPI
import ReduxStore
import ReduxStoreInspector
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A C store's operations, through the functions of `reduxstore.h` alone: this library and
/// libreduxstore.so share no Swift types (each may carry its own copy of the Swift runtime), only
/// the C interface.
final class CStoreAccess: StoreAccess, @unchecked Sendable {
    // @unchecked: `store` is a C store pointer, whose functions are thread-safe; the rest is
    // immutable.
    let store: OpaquePointer
    /// The identifiers a page may dispatch; nil: any; empty: none.
    let identifiers: [String]?

    /// Holds a reference to `store` until ``detached()``.
    init(store: OpaquePointer, identifiers: [String]?) {
        self.store = store
        self.identifiers = identifiers
        _ = rdx_store_retain(store)
    }

    var name: String { "rdx_store" }
    var version: UInt64 { rdx_store_version(store) }
    var dispatchableIdentifiers: [String]? { identifiers }

    var keptVersions: [UInt64] {
        // The history may grow between the two calls: ask again until it fits.
        var capacity = rdx_store_history_versions(store, nil, 0)
        while true {
            var versions = [UInt64](repeating: 0, count: capacity + 16)
            let count = versions.withUnsafeMutableBufferPointer {
                rdx_store_history_versions(store, $0.baseAddress, $0.count)
            }
            if count <= versions.count { return Array(versions.prefix(count)) }
            capacity = count
        }
    }

    func add(_ listener: InspectorListener) {
        let context = Unmanaged.passRetained(listener)
        let token = rdx_store_add_change_listener(store, listener.includingPatches, { _, change, context in
            guard let change, let context else { return }
            let listener = Unmanaged<InspectorListener>.fromOpaque(context).takeUnretainedValue()
            listener.receive(.plain(PlainChange(change.pointee)))
        }, context.toOpaque())
        guard token != 0 else {
            context.release()
            return
        }
        listener.attachment.withLock { $0 = Attachment(token: token, context: context) }
    }

    /// What ``add(_:)`` registered.
    private struct Attachment: @unchecked Sendable {
        // @unchecked: the context is released once, by `remove`.
        let token: UInt64
        let context: Unmanaged<InspectorListener>
    }

    func remove(_ listener: InspectorListener) {
        let attached = listener.attachment.withLock { attachment -> Attachment? in
            defer { attachment = nil }
            return attachment as? Attachment
        }
        guard let attached else { return }
        // Once this returns the listener is not called again: its context can go.
        _ = rdx_store_remove_change_listener(store, attached.token)
        attached.context.release()
    }

    /// The C interface has no "while no action is applied": a change applied between reading the
    /// backlog and adding the listener reaches the page as a gap (it then fetches the state).
    func whileNoActionIsApplied<T>(_ body: (_ add: (InspectorListener) -> Void) -> T) -> T {
        body { add($0) }
    }

    func state(at version: UInt64?) throws(StoreError) -> (version: UInt64, value: JSONValue) {
        let version = version ?? rdx_store_version(store)
        guard let tree = rdx_store_state_at_version(store, version) else {
            throw StoreError(.invalidArgument, Self.lastError)
        }
        defer { json_object_put(tree) }
        return (version, try JSONCDecoder().decode(JSONValue.self, from: tree))
    }

    func restore(version: UInt64) throws(StoreError) -> UInt64 {
        let status = rdx_store_restore_version(store, version)
        guard status == RDX_OK else { throw StoreError(.invalidArgument, Self.lastError) }
        return rdx_store_version(store)
    }

    func dispatch(identifier: String, payload: JSONValue?) throws(StoreError) -> UInt64 {
        guard identifiers?.contains(identifier) ?? true else {
            throw StoreError(.invalidArgument, "\"\(identifier)\" is not an identifier this program lets the page dispatch")
        }
        let tree = try payload.map { (value) throws(StoreError) in try JSONCEncoder().encode(value) } ?? nil
        defer { json_object_put(tree) }
        let status = rdx_store_dispatch_action_at(store, identifier, tree, nil, 0)
        guard status == RDX_OK else {
            throw StoreError(.invalidArgument, "\(String(cString: rdx_status_string(status))): \(Self.lastError)")
        }
        return rdx_store_version(store)
    }

    func detached() {
        rdx_store_release(store)
    }

    static var lastError: String { rdx_last_error().map { String(cString: $0) } ?? "" }
}

extension PlainChange {
    /// A C listener's change, its borrowed trees and strings copied.
    init(_ change: rdx_change) {
        func value(_ tree: OpaquePointer?) -> JSONValue? {
            guard let tree else { return nil }
            return try? JSONCDecoder().decode(JSONValue.self, from: tree)
        }
        var source: String?
        if let file = change.file {
            let path = String(cString: file)
            let name = path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? path
            source = "\(name):\(change.line)"
        }
        let time = timespec(
            tv_sec: Int(change.time_ns / 1_000_000_000), tv_nsec: Int(change.time_ns % 1_000_000_000))
        self.init(
            version: change.version, identifier: String(cString: change.identifier),
            payload: value(change.payload), typed: false, patch: value(change.patch), source: source,
            batch: change.batch_last > 0 ? change.batch_first...change.batch_last : nil,
            time: PlainChange.timeText(time))
    }
}
