/// A middleware: sees each action before the reducers and decides what reaches them.
///
/// It is called with the store, the action and `next`, the rest of the chain. It may
/// - pass the action on: `next(action)`;
/// - replace it: `next(otherAction)`;
/// - drop it: return without calling `next` (no reducer runs, the version stays, nobody is
///   told);
/// - dispatch other actions: `store.dispatchAction(other)`, which go through the whole chain,
///   inside this call: at most ``StoreLimits/maximumMiddlewareDepth`` (64) such dispatches run
///   inside one another on a thread, and one more traps (see ``Store/dispatchAction(_:file:line:)``).
///
/// It reads the state only through ``Store/currentState()`` and ``Store/version``, never
/// `inout`, and runs outside the store's lock on the dispatching thread. `next` applies what
/// it is given before it returns; it may be called more than once, and not after the
/// middleware returned (on another thread too, from a call the middleware waits for).
public typealias Middleware<State: Codable> =
    @Sendable (_ store: Store<State>, _ action: any Action, _ next: (any Action) -> Void) -> Void

/// A store's middleware, erased so that the dispatch path names no type that depends on the
/// state (no generic metadata per action); `nil` in a store without middleware.
final class MiddlewareChain: @unchecked Sendable {
    // @unchecked: immutable; holds only the middleware, which are `@Sendable`.

    /// One middleware, taking the store as an object (the store passes itself: the chain holds no
    /// reference to it, so there is no cycle).
    typealias Erased = (_ store: AnyObject, _ action: any Action, _ next: (any Action) -> Void) -> Void

    /// One middleware, in an object of its own: a closure read from an array is called through
    /// a reabstraction thunk that boxes its `next` argument on the heap per call (an array keeps
    /// closures in their most general form); a closure in a stored property is called as it is.
    /// (One allocation less per action and middleware; Benchmarks/README.md, "What composition
    /// costs", has the figures.)
    private final class Step {
        let handle: Erased
        init(_ handle: @escaping Erased) { self.handle = handle }
    }

    private let steps: [Step]

    private init(_ steps: [Step]) {
        self.steps = steps
    }

    /// The chain of `middleware`, in order; `nil` for none.
    static func make<State: Codable>(_ middleware: [Middleware<State>]) -> MiddlewareChain? {
        guard !middleware.isEmpty else { return nil }
        return MiddlewareChain(middleware.map { middleware in
            Step { store, action, next in
                middleware(unsafeDowncast(store, to: Store<State>.self), action, next)
            }
        })
    }

    /// Runs `action` through the chain from the middleware at `index` for `store`; what reaches
    /// the end goes to `final`.
    func run(
        _ store: AnyObject, _ action: any Action, from index: Int = 0,
        final: (any Action) -> Void
    ) {
        guard index < steps.count else {
            final(action)
            return
        }
        steps[index].handle(store, action) { next in
            run(store, next, from: index + 1, final: final)
        }
    }
}

extension Store {
    /// Creates a store whose actions pass through `middleware` before the reducers.
    ///
    /// ```swift
    /// let dropEmpty: Middleware<Todos> = { store, action, next in
    ///     if let add = action as? AddTodo, add.title.isEmpty { return }   // dropped
    ///     next(action)
    /// }
    /// let store = Store(reducers: [todosReducer], state: Todos(), middleware: [dropEmpty])
    /// ```
    ///
    /// Every action dispatched to the store — by ``dispatchAction(_:file:line:)``,
    /// ``enqueueAction(_:file:line:)``, ``dispatchActions(_:file:line:)``, an effect or C — goes
    /// through the middleware in order; what the last one passes to `next` is applied. A batch's
    /// actions pass one by one, then what passed is applied as one. An action a reducer dispatches
    /// passes the chain too, once the current action was applied and the lock released (so unlike
    /// a store without middleware, actions of other threads may come between), on the same
    /// thread, before the outer dispatch returns; actions the reducers keep dispatching pass one
    /// after the other, in the order they were dispatched (as without middleware), not one inside
    /// another, however many.
    ///
    /// - Parameters:
    ///   - reducers: run in this order for every action that reaches them.
    ///   - state: the initial state (deep-copied, as by ``init(reducers:state:)``).
    ///   - middleware: called in this order for every action.
    public convenience init(
        reducers: [Reducer<State>], state: State, middleware: [Middleware<State>]
    ) {
        self.init(
            reducers: reducers, adopting: Self.deepCopy(state), version: 0, middleware: middleware)
    }
}
