internal import CJSONC
internal import CReduxStoreAPI
@_spi(Bindings) import ReduxStore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

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
                            CNextLinks.whileLive(link) { next in
                                function(store, identifier, payload, next)
                            }
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

/// The rest of the chain for one middleware call, on that call's stack: what an `rdx_next *`
/// names (see ``CNextLinks``) while the call runs.
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
        if let parts = cParts { return body(parts.identifier, parts.payload) }
        let payload = (self as? JSONAction)?.payload.flatMap { try? JSONCEncoder().encode($0) }
        defer { json_object_put(payload) }
        return identifier.withCString { body($0, payload) }
    }
}

/// The `rdx_next *` of the middleware calls running on each thread.
///
/// C is not handed the address of a call's ``CNextLink`` (on the call's stack: gone, or reused by
/// another call, once it returns) but a number no other call ever gets, as a pointer C never reads
/// through. `rdx_next_action` looks it up among the calls running on its own thread, innermost
/// first: a `next` kept after its call returned, used on another thread, or made up is not found
/// there and is refused, without reading any memory it points to.
enum CNextLinks {
    /// The next call's number; never 0 (NULL).
    private static let serial = Atomic<UInt>(1)

    /// This thread's running calls, innermost last: a list the thread owns (a pthread key frees
    /// it when the thread exits).
    private struct Running {
        var calls: [(number: UInt, link: UnsafeMutablePointer<CNextLink>)] = []
    }

    private static let storage = ThreadStorage<Running> { ThreadStorage<Running>.free($0) }

    /// Runs `body` (the middleware call) with the `rdx_next *` that names `link` on this thread
    /// until `body` returns.
    static func whileLive<T>(
        _ link: UnsafeMutablePointer<CNextLink>, _ body: (OpaquePointer) -> T
    ) -> T {
        let number = serial.wrappingAdd(1, ordering: .relaxed).oldValue
        guard let running = storage.value(orMake: { Running() }) else {
            preconditionFailure("ReduxStore: out of memory for this thread's middleware calls")
        }
        running.pointee.calls.append((number, link))
        defer { running.pointee.calls.removeLast() }
        return body(OpaquePointer(bitPattern: number)!)
    }

    /// The link `next` names, if its middleware call is running on this thread.
    static func link(_ next: OpaquePointer) throws(StoreError) -> UnsafeMutablePointer<CNextLink> {
        let number = UInt(bitPattern: next)
        if let running = storage.existing {
            for call in running.pointee.calls.reversed() where call.number == number {
                return call.link
            }
        }
        throw StoreError(
            .invalidArgument,
            "next is not the next of a middleware call running on this thread: it was kept after "
                + "its middleware returned, is used on another thread than the one its middleware "
                + "runs on, or is not a next at all (a next is valid only during its middleware's "
                + "call, on that call's thread)")
    }
}
