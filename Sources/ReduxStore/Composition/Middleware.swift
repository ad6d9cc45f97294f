/// A middleware: sees each action before the reducers and decides what reaches them.
///
/// It is called with the store, the action and `next`, the rest of the chain. It may
/// - pass the action on: `next(action)`;
/// - replace it: `next(otherAction)`;
/// - drop it: return without calling `next` (no reducer runs, the version stays, nobody is
///   told);
/// - dispatch other actions: `store.dispatchAction(other)`, which go through the whole chain.
///
/// It reads the state only through ``Store/currentState()`` and ``Store/version``, never
/// `inout`, and runs outside the store's lock on the dispatching thread. `next` applies what
/// it is given before it returns; it may be called more than once, and not after the
/// middleware returned.
public typealias Middleware<State: Codable> =
    @Sendable (_ store: Store<State>, _ action: any Action, _ next: (any Action) -> Void) -> Void

/// A store's middleware, erased so that the dispatch path names no type that depends on the
/// state; `nil` in a store without middleware.
package final class MiddlewareChain: @unchecked Sendable {
    // @unchecked: `run` is immutable and holds only the middleware, which are `@Sendable`
    // (and the state's type, which `make` names).

    /// Runs `action` through the chain for `store`; what reaches the end goes to `final`.
    package let run: (_ store: AnyObject, _ action: any Action, _ final: (any Action) -> Void) -> Void

    private init(run: @escaping (AnyObject, any Action, (any Action) -> Void) -> Void) {
        self.run = run
    }

    /// The chain of `middleware`, in order; `nil` for none.
    package static func make<State: Codable>(_ middleware: [Middleware<State>]) -> MiddlewareChain? {
        guard !middleware.isEmpty else { return nil }
        return MiddlewareChain { store, action, final in
            // The store passes itself: the chain holds no reference to it (no cycle).
            let store = unsafeDowncast(store, to: Store<State>.self)
            func step(_ index: Int, _ action: any Action) {
                guard index < middleware.count else {
                    final(action)
                    return
                }
                middleware[index](store, action) { next in step(index + 1, next) }
            }
            step(0, action)
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
    /// Every action dispatched to the store — by ``dispatchAction(_:)``, ``enqueueAction(_:)``,
    /// ``dispatchActions(_:)``, an effect or C — goes through the middleware in order; what the
    /// last one passes to `next` is applied. A batch's actions pass one by one, then what passed
    /// is applied as one. An action a reducer dispatches passes the chain too, once the current
    /// action was applied and the lock released (so unlike a store without middleware, actions
    /// of other threads may come between), on the same thread, before the outer dispatch
    /// returns.
    ///
    /// - Parameters:
    ///   - reducers: run in this order for every action that reaches them.
    ///   - state: the initial state (deep-copied, as by ``init(reducers:state:)``).
    ///   - middleware: called in this order for every action.
    public convenience init(
        reducers: [Reducer<State>], state: State, middleware: [Middleware<State>]
    ) {
        self.init(
            reducers: reducers, adopting: Self.deepCopy(state), version: 0,
            middleware: MiddlewareChain.make(middleware))
    }
}
