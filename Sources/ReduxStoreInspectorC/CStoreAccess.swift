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

    func openLog(_ capacity: Int) -> UInt64? {
        let claim = rdx_store_open_action_log(store, capacity, true)
        return claim == 0 ? nil : claim
    }
    func closeLog(_ claim: UInt64) { _ = rdx_store_close_action_log(store, claim) }
    func tickLog() { _ = rdx_store_tick_action_log(store) }

    /// The store's action log, read through `rdx_store_read_action_log`. The C interface has no
    /// wake-up: with nothing new, the read says to ask again after
    /// 5 ms (the least time between two reads of a page's sender).
    func readLog(after version: UInt64, limit: Int, wake: (@Sendable () -> Void)?) -> LogRead? {
        let reader = LogReader()
        var dropped: UInt64 = 0
        var now: UInt64 = 0
        let status = withExtendedLifetime(reader) {
            rdx_store_read_action_log(store, version, limit, { _, change, context in
                guard let change, let context else { return }
                Unmanaged<LogReader>.fromOpaque(context).takeUnretainedValue().read(change.pointee)
            }, Unmanaged.passUnretained(reader).toOpaque(), nil, &dropped, &now)
        }
        guard status == RDX_OK else { return nil }
        return LogRead(
            changes: reader.changes, dropped: dropped, version: now,
            retryAfter: reader.changes.isEmpty ? .milliseconds(5) : nil)
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

/// Makes the changes of one read of a C store's action log into ``PlainChange``s (C lends their
/// trees and strings for the call only); a file's name is made once for all the changes
/// dispatched from that file.
final class LogReader: @unchecked Sendable {
    // @unchecked: used by one read, on one thread.
    private(set) var changes: [LoggedChange] = []
    /// The last source file read and its name.
    private var file: String?
    private var fileName: String?

    func read(_ change: rdx_change) {
        var payload: JSONValue?
        if let tree = change.payload { payload = try? JSONCDecoder().decode(JSONValue.self, from: tree) }
        let seconds = change.time_ns.quotientAndRemainder(dividingBy: 1_000_000_000)
        changes.append(.plain(PlainChange(
            version: change.version, identifier: String(cString: change.identifier), payload: payload,
            typed: false, patch: nil, source: change.file.map { "\(name(of: $0)):\(change.line)" },
            batch: change.batch_last > 0 ? change.batch_first...change.batch_last : nil,
            time: PlainChange.timeText(timespec(tv_sec: Int(seconds.quotient), tv_nsec: Int(seconds.remainder))))))
    }

    /// `path`'s last component.
    private func name(of path: UnsafePointer<CChar>) -> String {
        let text = String(cString: path)
        if text == file, let fileName { return fileName }
        let name = text.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? text
        file = text
        fileName = name
        return name
    }
}
