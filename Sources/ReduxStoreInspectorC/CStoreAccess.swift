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
        let context = Unmanaged.passRetained(HeardChangeCopier(listener))
        let token = rdx_store_add_change_listener(store, false, { _, change, context in
            guard let change, let context else { return }
            Unmanaged<HeardChangeCopier>.fromOpaque(context).takeUnretainedValue().hear(change.pointee)
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
        let context: Unmanaged<HeardChangeCopier>
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

    func state(at version: UInt64?) throws(StoreError) -> (version: UInt64, value: JSONValue) {
        var read = version ?? 0
        let tree = version.map { rdx_store_state_at_version(store, $0) } ?? rdx_store_current_state_version(store, &read)
        guard let tree else { throw StoreError(.invalidArgument, Self.lastError) }
        defer { json_object_put(tree) }
        return (read, try JSONCDecoder().decode(JSONValue.self, from: tree))
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

/// Copies each change the inspector's listener hears into a ``HeardChange`` for its log. Called
/// under the store's lock, once per action: it copies the identifier and the payload (which C
/// only lends for the call) and nothing that grows with the state; the file's name is copied
/// once for all the changes dispatched from one file.
final class HeardChangeCopier: @unchecked Sendable {
    // @unchecked: `file` and `fileName` are used by `hear` alone, which the store calls for one
    // action at a time.
    let listener: InspectorListener
    /// The last source file heard, copied, and its name.
    private var file: UnsafeMutablePointer<CChar>?
    private var fileName: String?

    init(_ listener: InspectorListener) { self.listener = listener }

    deinit { free(file) }

    func hear(_ change: rdx_change) {
        var payload: JSONValue?
        if let tree = change.payload { payload = try? JSONCDecoder().decode(JSONValue.self, from: tree) }
        listener.receive(.heard(HeardChange(
            version: change.version, identifier: String(cString: change.identifier), payload: payload,
            file: change.file.map(name(of:)), line: change.line,
            batch: change.batch_last > 0 ? change.batch_first...change.batch_last : nil, time: change.time_ns)))
    }

    /// `path`'s last component.
    private func name(of path: UnsafePointer<CChar>) -> String {
        if let file, let fileName, strcmp(file, path) == 0 { return fileName }
        free(file)
        file = strdup(path)
        let text = String(cString: path)
        let name = text.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? text
        fileName = name
        return name
    }
}
