internal import CJSONC
internal import CReduxStoreAPI
import ReduxStore

/// The C middleware of a store C created, as the core's middleware: each is called with the
/// action's identifier and payload and an `rdx_next *` that passes an action on.
enum CMiddleware {
    /// The middleware for a store whose handle `owner` will point to.
    static func chain(_ middleware: [rdx_middleware], owner: HandleReference)
        -> [Middleware<JSONCTree>]
    {
        middleware.map { middleware in
            let function = CMiddlewareFunction(middleware: middleware)
            return { _, action, next in
                // The handle outlives every call: C's calls hold it, and its last release
                // applies what was enqueued before letting it go.
                guard let handle = owner.handle else { return next(action) }
                let store = OpaquePointer(Unmanaged.passUnretained(handle).toOpaque())
                action.withCParts { identifier, payload in
                    withoutActuallyEscaping(next) { next in
                        var link = CNextLink(
                            next: next, action: action, identifier: identifier, payload: payload)
                        withUnsafeMutablePointer(to: &link) { link in
                            function(store, identifier, payload, OpaquePointer(link))
                        }
                    }
                }
            }
        }
    }

    /// Checks the middleware C passes to a constructor, and copies them.
    static func check(_ middleware: UnsafePointer<rdx_middleware>?, _ count: Int) throws(StoreError)
        -> [rdx_middleware]
    {
        guard count > 0 else { return [] }
        let middleware = try CInput.required(middleware, "middleware")
        let list = Array(UnsafeBufferPointer(start: middleware, count: count))
        for (index, entry) in list.enumerated() where entry.handle == nil {
            throw StoreError(.invalidArgument, "middleware[\(index)].handle is NULL")
        }
        return list
    }
}

/// The handle of a store, once it exists: the store's middleware is made before its handle,
/// and must not keep the handle alive (the handle holds the store, which holds them).
final class HandleReference: @unchecked Sendable {
    // @unchecked: set once, before the handle is handed to C and any action is dispatched.
    weak var handle: CStoreHandle?
}

/// A C middleware function and its context.
struct CMiddlewareFunction: @unchecked Sendable {
    // @unchecked: C promised the function may be called from any thread with this context.
    let middleware: rdx_middleware

    func callAsFunction(
        _ store: OpaquePointer, _ identifier: UnsafePointer<CChar>, _ payload: OpaquePointer?,
        _ next: OpaquePointer
    ) {
        middleware.handle!(store, identifier, payload, next, middleware.context)
    }
}

/// What an `rdx_next *` points to: the rest of the chain for one middleware call, on that
/// call's stack (so it is valid only during the call, as the header says).
struct CNextLink {
    let next: (any Action) -> Void
    /// The action the middleware was called with, and the pointers it was given for it.
    let action: any Action
    let identifier: UnsafePointer<CChar>
    let payload: OpaquePointer?

    /// `rdx_next_action`: the action as it came when C passes back its own pointers, else a
    /// new action owning copies.
    func pass(identifier: UnsafePointer<CChar>, payload: OpaquePointer?) throws(StoreError) {
        if identifier == self.identifier && payload == self.payload {
            next(action)
        } else {
            next(try CAction(copying: identifier, payload: payload))
        }
    }
}

extension Action {
    /// Runs `body` with this action's identifier and payload as C sees them: a C action's own
    /// pointers; a Swift action's identifier, with a `JSONAction`'s payload encoded to a tree.
    func withCParts<T>(_ body: (UnsafePointer<CChar>, OpaquePointer?) -> T) -> T {
        if let action = asCAction { return body(action.identifierPointer, action.payload) }
        let payload = (self as? JSONAction)?.payload.flatMap { try? JSONCEncoder().encode($0) }
        defer { json_object_put(payload) }
        return identifier.withCString { body($0, payload) }
    }
}
