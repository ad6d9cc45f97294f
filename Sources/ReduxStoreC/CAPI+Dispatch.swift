// The C dispatch path, every entry point in one place: rdx_store_dispatch_action,
// rdx_store_dispatch_json, rdx_store_enqueue_action, rdx_store_dispatch_batch_json and their
// `_at` forms (which record where C dispatched from). Each checks its arguments, then hands the
// action to the handle's store (`CStoreHandle.dispatch`), which the core applies.
internal import CJSONC
public import CReduxStoreAPI
@_spi(Bindings) import ReduxStore
#if canImport(Glibc)
import Glibc
#endif

@c @implementation
public func rdx_store_dispatch_action(
    _ store: OpaquePointer?, _ identifier: UnsafePointer<CChar>?, _ payload: OpaquePointer?
) -> rdx_status {
    dispatchFromC(store, identifier, payload, enqueue: false, source: .unknown)
}

@c @implementation
public func rdx_store_dispatch_json(
    _ store: OpaquePointer?, _ actionJSON: UnsafePointer<CChar>?
) -> rdx_status {
    dispatchJSONFromC(store, actionJSON, source: .unknown)
}

@c @implementation
public func rdx_store_enqueue_action(
    _ store: OpaquePointer?, _ identifier: UnsafePointer<CChar>?, _ payload: OpaquePointer?
) -> rdx_status {
    dispatchFromC(store, identifier, payload, enqueue: true, source: .unknown)
}

@c @implementation
public func rdx_store_dispatch_action_at(
    _ store: OpaquePointer?, _ identifier: UnsafePointer<CChar>?, _ payload: OpaquePointer?,
    _ file: UnsafePointer<CChar>?, _ line: Int32
) -> rdx_status {
    withSource(file, line) { source in dispatchFromC(store, identifier, payload, enqueue: false, source: source) }
}

@c @implementation
public func rdx_store_dispatch_json_at(
    _ store: OpaquePointer?, _ actionJSON: UnsafePointer<CChar>?, _ file: UnsafePointer<CChar>?,
    _ line: Int32
) -> rdx_status {
    withSource(file, line) { source in dispatchJSONFromC(store, actionJSON, source: source) }
}

@c @implementation
public func rdx_store_enqueue_action_at(
    _ store: OpaquePointer?, _ identifier: UnsafePointer<CChar>?, _ payload: OpaquePointer?,
    _ file: UnsafePointer<CChar>?, _ line: Int32
) -> rdx_status {
    withSource(file, line) { source in dispatchFromC(store, identifier, payload, enqueue: true, source: source) }
}

@c @implementation
public func rdx_store_dispatch_batch_json_at(
    _ store: OpaquePointer?, _ actionsJSON: UnsafePointer<CChar>?, _ file: UnsafePointer<CChar>?,
    _ line: Int32
) -> rdx_status {
    withSource(file, line) { source in dispatchBatchFromC(store, actionsJSON, source: source) }
}

/// Runs `body` with C's `file` and `line` as a source, borrowed for the call; `RDX_EINVAL` for a
/// negative line.
private func withSource(
    _ file: UnsafePointer<CChar>?, _ line: Int32, _ body: (DispatchSite) -> rdx_status
) -> rdx_status {
    guard line >= 0 else {
        return StoreError(.invalidArgument, "line is \(line): a line number is 0 or more").record()
    }
    return body(DispatchSite(borrowingFile: file, line: UInt(line)))
}

@c @implementation
public func rdx_store_dispatch_batch_json(
    _ store: OpaquePointer?, _ actionsJSON: UnsafePointer<CChar>?
) -> rdx_status {
    dispatchBatchFromC(store, actionsJSON, source: .unknown)
}

/// `rdx_store_dispatch_batch_json` (and its `_at` form).
func dispatchBatchFromC(
    _ store: OpaquePointer?, _ actionsJSON: UnsafePointer<CChar>?, source: DispatchSite
) -> rdx_status {
    status { () throws(StoreError) in
        try CStoreHandle.with(store) { (handle) throws(StoreError) in
            let text = try CInput.required(actionsJSON, "actions_json")
            let length = strnlen(text, StoreLimits.maximumJSONTextSize + 1)
            // Applied inside the parse, while the parsed tree lives: the actions may borrow from
            // it (``CStoreCore/makeBatchAction(identifier:payload:)``).
            try JSONInput.withParsedBatch(text, length: length) { (parts) throws(StoreError) in
                var actions: [any Action] = []
                actions.reserveCapacity(parts.count)
                for (index, part) in parts.enumerated() {
                    do throws(StoreError) {
                        actions.append(
                            try handle.core.makeBatchAction(identifier: part.identifier, payload: part.payload))
                    } catch {
                        throw error.prefixed("[\(index)]")
                    }
                }
                guard let forwarding = handle.forwarding else {
                    try handle.core.dispatchBatch(actions, source: source)
                    return
                }
                // Every element checked, a forwarding store's library orders them one by one:
                // each handed on in order, and applied before the next. A failure after the
                // first says that the elements before it were stored: its error is about its
                // own element only.
                for (index, action) in actions.enumerated() {
                    do throws(StoreError) {
                        try action.withCParts { identifier, payload in
                            Result { () throws(StoreError) in
                                try forwarding.forward(
                                    handle, identifier: identifier, payload: payload, enqueue: false, source: source)
                            }
                        }.get()
                    } catch {
                        guard index > 0 else { throw error.prefixed("[0]") }
                        let stored = index == 1 ? "element [0] was stored" : "elements [0] to [\(index - 1)] were stored"
                        throw StoreError(error.kind, "[\(index)] (\(stored) before it): \(error.message)")
                    }
                }
            }
        }
    }
}

/// `rdx_store_dispatch_action` and `rdx_store_enqueue_action` (and their `_at` forms): the
/// arguments checked, then the action applied or queued.
func dispatchFromC(
    _ store: OpaquePointer?, _ identifier: UnsafePointer<CChar>?, _ payload: OpaquePointer?,
    enqueue: Bool, source: DispatchSite
) -> rdx_status {
    status { () throws(StoreError) in
        try CStoreHandle.with(store) { (handle) throws(StoreError) in
            if enqueue { try handle.checkCanEnqueue() }
            if !enqueue, payload == nil, let identifier, try handle.dispatchKept(identifier, source: source) { return }
            let identifier = try CInput.identifier(identifier)
            try CInput.tree(payload, "payload")
            try handle.dispatch(
                identifier: identifier, payload: payload, enqueue: enqueue, source: source, offering: true)
        }
    }
}

/// `rdx_store_dispatch_json` (and its `_at` form).
func dispatchJSONFromC(
    _ store: OpaquePointer?, _ actionJSON: UnsafePointer<CChar>?, source: DispatchSite
) -> rdx_status {
    status { () throws(StoreError) in
        try CStoreHandle.with(store) { (handle) throws(StoreError) in
            try CInput.withParsedAction(actionJSON) { (identifier, payload) throws(StoreError) in
                try handle.dispatch(identifier: identifier, payload: payload, enqueue: false, source: source)
            }
        }
    }
}
