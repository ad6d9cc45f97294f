/// A store's reducers, each for the actions it handles: those of one type (``on(_:_:)``), those
/// of one identifier (``on(identifier:_:)``), or every action (``always(_:)``).
///
/// ```swift
/// struct Increment: Action { let identifier = "counter.increment"; var by = 1 }
/// struct Reset: Action { let identifier = "counter.reset" }
///
/// var reducers = Reducers<Counter>()
/// reducers.on(Increment.self) { state, increment in state.count += increment.by }
/// reducers.on(Reset.self) { state, _ in state.count = 0 }
/// reducers.on(identifier: "counter.double") { state, _ in state.count *= 2 }
/// reducers.always { state, action in state.actionsSeen += 1 }
/// let store = Store(reducers: reducers, state: Counter())
/// ```
///
/// The store runs, for each action, the reducers that handle it, in the order they were added
/// (whichever of the three calls added them); the others do not run. It finds them by one
/// lookup of the action's type, not by asking each reducer: a reducer added with ``on(_:_:)``
/// receives the action as its type, with no cast in the reducer, and a store with fifty
/// reducers costs what one with a single reducer costs (<doc:RoutedReducers> has the figures).
///
/// Which reducers handle an action:
/// - ``on(_:_:)`` reducers of the action's type: exactly that type. For a struct or an enum,
///   that is the type of the value; for a class instance, the type it was dispatched as (the
///   static type of the expression given to ``Store/dispatchAction(_:file:line:)``): an
///   instance of a subclass dispatched as the subclass does not reach the superclass's
///   reducers, as it would reach an `as?` cast.
/// - ``on(identifier:_:)`` reducers whose identifier is the action's ``Action/identifier``,
///   compared code point by code point (as ``ActionTypes`` and C compare identifiers): those of a
///   ``JSONAction`` and those of a typed action alike. So a typed action is seen both by the
///   reducers of its type and by those of its identifier.
/// - ``always(_:)`` reducers: every action.
///
/// A ``JSONAction`` (what C sends, or a journal's untyped entry) whose identifier is registered
/// in ``actions`` is decoded into its type once, before any reducer runs, and every reducer that
/// handles it receives the decoded action: it is routed as if that typed action had been
/// dispatched. The journal, the change feed and the middleware still see the ``JSONAction``
/// that was dispatched. A payload that does not decode into the registered type leaves the
/// action a ``JSONAction``, routed by its identifier. Other ``JSONAction``s are routed by their
/// identifier (and reach ``on(_:_:)`` reducers of `JSONAction.self`, if any).
///
/// A store made from `Reducers` works as any other: middleware, batches,
/// ``Store/enqueueAction(_:file:line:)``, nested dispatch, observers, the change feed, the journal, history
/// and replay (`Store(replaying:from:reducers:actions:through:)` takes a `Reducers` too) see no
/// difference. The reducers run under the store's lock, as every reducer does.
public struct Reducers<State>: Sendable {
    /// The reducers, in the order they were added.
    @usableFromInline var entries: [RoutedReducer] = []

    /// The typed actions a dispatched ``JSONAction`` is decoded into, by identifier, before it
    /// is routed (see the type's overview). Empty by default: every ``JSONAction`` is routed by
    /// its identifier.
    public var actions: ActionTypes

    /// No reducers, and no registered action types.
    public init() {
        actions = ActionTypes()
    }

    /// No reducers yet; ``JSONAction``s whose identifier `actions` registers are decoded into
    /// their types and routed by type.
    public init(actions: ActionTypes) {
        self.actions = actions
    }

    /// The number of reducers added.
    public var count: Int { entries.count }

    /// Adds a reducer for actions of type `A`, which it receives as `A`.
    ///
    /// It runs for each action of exactly type `A` (see the type's overview for class actions)
    /// and for each ``JSONAction`` that ``actions`` decodes into an `A`, in the order the
    /// reducers were added. The store finds it by one lookup of the action's type; calling it
    /// costs no cast.
    ///
    /// - Parameters:
    ///   - type: the action type this reducer handles.
    ///   - reduce: mutates the state in place for one such action.
    // Inlinable, so that the wrapper `erasedTyped` makes is specialized for the caller's state
    // and action types, with `reduce` inlined into it: each dispatch costs less than through the
    // generic wrapper.
    @inlinable
    public mutating func on<A: Action>(
        _ type: A.Type, _ reduce: @escaping @Sendable (_ state: inout State, _ action: A) -> Void
    ) {
        entries.append(RoutedReducer(match: .type(ActionContainer.identity(of: A.self)), reduce: erasedTyped(reduce)))
    }

    /// Adds a reducer for actions whose ``Action/identifier`` is `identifier`.
    ///
    /// It runs for each ``JSONAction`` of that identifier and for each typed action whose
    /// identifier is the same (code point by code point), in the order the reducers were added.
    /// A typed action it handles reaches it as that type, boxed in `any Action`. In a store that
    /// has such reducers, each dispatched typed action's identifier is read once to find them; a
    /// store without them never reads it.
    ///
    /// - Parameters:
    ///   - identifier: the identifier of the actions this reducer handles.
    ///   - reduce: mutates the state in place for one such action.
    public mutating func on(identifier: String, _ reduce: @escaping Reducer<State>) {
        entries.append(RoutedReducer(match: .identifier(JSONKey(identifier)), reduce: erased(reduce)))
    }

    /// Adds a reducer for every action (the broadcast shape of ``Store/init(reducers:state:)``),
    /// run in the order the reducers were added.
    ///
    /// - Parameter reduce: mutates the state in place for one action.
    public mutating func always(_ reduce: @escaping Reducer<State>) {
        entries.append(RoutedReducer(match: .always, reduce: erased(reduce)))
    }
}

extension Store {
    /// Creates a store whose reducers each handle the actions they were added for (see
    /// ``Reducers``), its initial state, and optionally its middleware.
    ///
    /// ```swift
    /// var reducers = Reducers<Counter>()
    /// reducers.on(Increment.self) { state, increment in state.count += increment.by }
    /// let store = Store(reducers: reducers, state: Counter())
    /// store.dispatchAction(Increment(by: 2))
    /// ```
    ///
    /// Everything else is as with a list of reducers (`init(reducers:state:middleware:)`): the
    /// store keeps a deep copy of `state`, starts at version 0, and passes every action through
    /// `middleware` (in order) before the reducers that handle it.
    ///
    /// Cost per dispatch: finding the action's reducers is a lookup of its type in a small table
    /// (and, in a store with ``Reducers/on(identifier:_:)`` reducers, one comparison of its
    /// identifier), made under the store's lock. The first action of a type builds that type's
    /// list of reducers (a few allocations, once); after that a dispatch allocates nothing when
    /// the action is a value of up to three words and no observer has a queue. A ``JSONAction``
    /// that ``Reducers/actions`` decodes costs its decode.
    ///
    /// - Parameters:
    ///   - reducers: the reducers and the action types ``JSONAction``s are decoded into.
    ///   - state: the initial state (deep-copied).
    ///   - middleware: called in this order for every action; none by default.
    public convenience init(reducers: Reducers<State>, state: State, middleware: [Middleware<State>] = []) {
        self.init(
            routing: reducers, adopting: Self.deepCopy(state), version: 0, middleware: middleware)
    }

    /// `init(reducers:state:middleware:)` for a state the caller made (a restored file, a
    /// replay's start) and a version to start at.
    ///
    /// Package: a replica starts its store at a snapshot's version with it.
    package convenience init(
        routing reducers: Reducers<State>, adopting state: State, version: UInt64,
        middleware: [Middleware<State>] = [], refusingLocalChanges refusal: String? = nil
    ) {
        let router = ReducerRouter(reducers.entries, decoders: reducers.actions.jsonActionDecoders)
        self.init(
            erasedReducer: { address, action in router.run(address, action) }, adopting: state,
            version: version, middleware: middleware, refusingLocalChanges: refusal)
    }

    /// Opens a store saved by ``save(to:)``, with routed reducers: its state and version as they
    /// were saved. Reads and refuses files as `init(contentsOf:reducers:)` with a list of
    /// reducers does.
    ///
    /// - Throws: ``StoreError`` as `init(contentsOf:reducers:)` with a list of reducers does; the
    ///   file is never changed.
    public convenience init(contentsOf path: String, reducers: Reducers<State>) throws(StoreError) {
        let (state, version) = try StoreFile.readState(State.self, from: path)
        self.init(routing: reducers, adopting: state, version: version)
    }
}

/// One reducer of a ``Reducers`` list: what it matches and the reducer erased to a function of
/// the state's address.
@usableFromInline
struct RoutedReducer: Sendable {
    /// Which actions a routed reducer handles.
    @usableFromInline
    enum Match: Sendable, Equatable {
        /// Actions boxed as exactly this type, by its identity (``ActionContainer/identity(of:)``,
        /// ``ReducerRouter/run(_:_:)``).
        case type(UInt)
        /// Actions of this identifier (code points compared).
        case identifier(JSONKey)
        /// Every action.
        case always
    }

    @usableFromInline let match: Match
    /// The reducer. One of ``Match/type(_:)`` assumes the action is of that type: it may be
    /// called only with such actions (``ReducerRouter`` sees to that).
    @usableFromInline let reduce: SendableErasedReducer

    @usableFromInline
    init(match: Match, reduce: @escaping SendableErasedReducer) {
        self.match = match
        self.reduce = reduce
    }
}

/// An ``ErasedReducer`` that may be shared between threads: how ``Reducers`` keeps its reducers.
@usableFromInline
typealias SendableErasedReducer = @Sendable (UnsafeMutableRawPointer, any Action) -> Void

/// One function that calls, in order, the reducer `reducer(element)` gives for each of
/// `elements`: nothing for none, that reducer itself for one, and for more a closure that calls
/// the composition of the first half, then that of the second (so the calls nest only as deep as
/// the logarithm of their number). Each reducer is made once, here, and captured: a closure calls
/// what it captured without retaining it, where a loop over an array retains each element it
/// calls, and an array keeps a closure in its most general form, so that each call read from one
/// goes through a reabstraction thunk (two, for a generic closure, and a lookup of its type's
/// metadata when the code is not specialized).
func composed<Element>(
    _ elements: ArraySlice<Element>, _ reducer: (Element) -> ErasedReducer
) -> ErasedReducer {
    switch elements.count {
    case 0: return { _, _ in }
    case 1: return reducer(elements.first!)
    default:
        let middle = elements.startIndex + elements.count / 2
        let first = composed(elements[..<middle], reducer)
        let second = composed(elements[middle...], reducer)
        return { address, action in
            first(address, action)
            second(address, action)
        }
    }
}

/// `reducer` erased to a function of the state's address, as the store calls its reducers.
///
/// A class state: each reducer gets its own copy of the reference, so the stored reference is
/// never held `inout` and a read from inside the reducer (through the store) is no overlapping
/// access. A reducer that assigns a new object replaces the stored one when it returns.
func erased<State>(_ reducer: @escaping Reducer<State>) -> SendableErasedReducer {
    if State.self is AnyObject.Type {
        return { address, action in
            let stored = address.assumingMemoryBound(to: State.self)
            var reference = stored.pointee
            reducer(&reference, action)
            stored.pointee = reference
        }
    }
    return { address, action in
        reducer(&address.assumingMemoryBound(to: State.self).pointee, action)
    }
}

/// A typed reducer erased to a function of the state's address and an action that must be boxed
/// as an `A` (as ``erased(_:)``, for a class state too). Its action is not cast: the router
/// calls it only for actions boxed as exactly `A` (``projection(of:as:)`` checks it cheaply).
@inlinable
func erasedTyped<State, A: Action>(
    _ reduce: @escaping @Sendable (inout State, A) -> Void
) -> SendableErasedReducer {
    if State.self is AnyObject.Type {
        return { address, action in
            let stored = address.assumingMemoryBound(to: State.self)
            var reference = stored.pointee
            reduce(&reference, projection(of: action, as: A.self))
            stored.pointee = reference
        }
    }
    return { address, action in
        reduce(&address.assumingMemoryBound(to: State.self).pointee, projection(of: action, as: A.self))
    }
}

/// The `A` inside `action`, which the caller knows was boxed as exactly `A`: the existential is
/// opened (its boxed type becomes `T`) and the value taken as an `A` by `_identityCast`, which
/// checks that `T` is `A` (one comparison of type metadata, trapping if they differ) and then
/// reinterprets the value, an ordinary copy of an `A`. A cast (`action as! A`) would establish
/// through the runtime's dynamic cast what the router's lookup already did, at a cost on every
/// dispatch (<doc:RoutedReducers> has the times).
///
/// A trivial `A` of at most three words lies at the start of the container's inline buffer
/// (``ActionContainer``'s layout, checked at start-up): it is read from there as bytes, with no
/// value witness called to copy it out and destroy the copy.
@inlinable @inline(__always)
func projection<A: Action>(of action: any Action, as _: A.Type) -> A {
    if _isPOD(A.self) && ActionContainer.fitsInline(A.self) {
        return withUnsafeBytes(of: action as any Action) { container in
            assert(ActionContainer.typeIdentity(at: container.baseAddress!) == ActionContainer.identity(of: A.self),
                   "ReduxStore: an action read as a type it was not boxed as")
            return container.load(as: A.self)
        }
    }
    func open<T: Action>(_ value: T) -> A { _identityCast(value, to: A.self) }
    return open(action)
}
