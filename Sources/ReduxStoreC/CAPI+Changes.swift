// The change feed's C functions: change listeners and action logs.
internal import CJSONC
public import CReduxStoreAPI
@_spi(Bindings) import ReduxStore
import Synchronization

@c @implementation
public func rdx_store_add_change_listener(
    _ store: OpaquePointer?, _ includePatches: Bool, _ listener: rdx_change_fn?,
    _ context: UnsafeMutableRawPointer?
) -> UInt64 {
    recording(0) { () throws(StoreError) -> UInt64 in
        return try CStoreHandle.with(store) { (handle) throws(StoreError) -> UInt64 in
            let listener = try CInput.required(listener, "listener")
            return handle.addChangeListener(
                CChangeCall(function: listener, context: context, handle: handle), includingPatches: includePatches)
        }
    }
}

@c @implementation
public func rdx_store_remove_change_listener(_ store: OpaquePointer?, _ token: UInt64) -> rdx_status {
    status { () throws(StoreError) in
        try CStoreHandle.with(store) { (handle) throws(StoreError) in
            guard handle.removeChangeListener(token: token) else {
                throw StoreError(
                    .invalidArgument, "token \(token) is not a change listener of this store (unknown, or removed already)")
            }
        }
    }
}

@c @implementation
public func rdx_store_open_action_log(_ store: OpaquePointer?, _ capacity: Int, _ ticked: Bool) -> UInt64 {
    recording(0) { () throws(StoreError) -> UInt64 in
        return try CStoreHandle.with(store) { (handle) throws(StoreError) in
            handle.core.openActionLog(capacity, ticked: ticked)
        }
    }
}

@c @implementation
public func rdx_store_close_action_log(_ store: OpaquePointer?, _ token: UInt64) -> rdx_status {
    status { () throws(StoreError) in
        try CStoreHandle.with(store) { (handle) throws(StoreError) in
            guard handle.core.closeActionLog(token) else {
                throw StoreError(.invalidArgument, "token \(token) is not an open claim on this store's action log (unknown, or closed already)")
            }
        }
    }
}

@c @implementation
public func rdx_store_tick_action_log(_ store: OpaquePointer?) -> rdx_status {
    status { () throws(StoreError) in
        try CStoreHandle.with(store) { (handle) throws(StoreError) in handle.core.tickActionLog() }
    }
}

@c @implementation
public func rdx_store_read_action_log(
    _ store: OpaquePointer?, _ after: UInt64, _ limit: Int, _ each: rdx_change_fn?,
    _ context: UnsafeMutableRawPointer?, _ count: UnsafeMutablePointer<Int>?,
    _ dropped: UnsafeMutablePointer<UInt64>?, _ version: UnsafeMutablePointer<UInt64>?
) -> rdx_status {
    status { () throws(StoreError) in
        try CStoreHandle.with(store) { (handle) throws(StoreError) in
            let each = try CInput.required(each, "each")
            guard let read = handle.core.readActionLog(after: after, limit: limit) else {
                throw StoreError(.invalidArgument, "this store keeps no action log: no claim on it is open (rdx_store_open_action_log)")
            }
            // Outside the store's lock: `each` may call the store.
            let call = CChangeCall(function: each, context: context, handle: handle)
            for record in read.records { call(record, includingPatch: false) }
            count?.pointee = read.records.count
            dropped?.pointee = read.dropped
            version?.pointee = read.version
        }
    }
}

/// A C change listener and what it is called with. It holds a reference to the handle, so the
/// `rdx_store *` it passes stays valid for the call even if the listener releases it.
struct CChangeCall: @unchecked Sendable {
    // @unchecked: C promised the function may be called from any thread with this context.
    let function: rdx_change_fn
    let context: UnsafeMutableRawPointer?
    let handle: CStoreHandle

    /// Calls the listener with `record`, its trees and strings borrowed for the call.
    func callAsFunction(_ record: ChangeRecord, includingPatch: Bool) {
        if let parts = record.action.cParts {
            // A C action: its own identifier and payload.
            call(record, identifier: parts.identifier, payload: parts.payload, includingPatch: includingPatch)
            return
        }
        // Another's payload is made for the call and put after.
        var madePayload: OpaquePointer?
        if case .success(let value?) = ChangeRecord.payloadValue(of: record.action) {
            madePayload = try? JSONCEncoder().encode(value)
        }
        defer { json_object_put(madePayload) }
        record.action.identifier.withCString { identifier in
            call(record, identifier: identifier, payload: madePayload, includingPatch: includingPatch)
        }
    }

    private func call(
        _ record: ChangeRecord, identifier: UnsafePointer<CChar>, payload: OpaquePointer?, includingPatch: Bool
    ) {
        let patch = includingPatch ? record.patch.flatMap { try? JSONCEncoder().encode($0) } : nil
        defer { json_object_put(patch) }
        let nanoseconds = Int64(record.time.tv_sec) * 1_000_000_000 + Int64(record.time.tv_nsec)
        var change = rdx_change(
            version: record.version, identifier: identifier, payload: payload, patch: patch,
            file: record.source.file?.assumingMemoryBound(to: CChar.self),
            line: UInt32(truncatingIfNeeded: record.source.line),
            batch_first: record.batch?.lowerBound ?? 0, batch_last: record.batch?.upperBound ?? 0,
            time_ns: nanoseconds)
        function(OpaquePointer(Unmanaged.passUnretained(handle).toOpaque()), &change, context)
    }
}
