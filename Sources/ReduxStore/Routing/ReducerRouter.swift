/// How a store made from ``Reducers`` finds an action's reducers: the store's one erased reducer,
/// which looks up the type the action was boxed as (``boxedType(of:)``) in a table and runs the
/// reducers listed there.
///
/// Each entry of the table (a ``Route``) is made the first time an action of its type arrives:
/// the reducers of that type and those of every action, in the order they were added. In a store
/// with identifier reducers, a route also keeps the list for each registered identifier actions
/// of its type were seen with (merged with the type's, in order), and the identifier it saw
/// last, so that a type whose actions keep one identifier finds its list by one comparison of
/// strings, not a hash. Lists are made once and never change; the lookups afterwards allocate
/// nothing.
///
/// The table is a small open-addressing hash of type identities: a lookup costs a
/// multiplication, a shift and one or two comparisons, where a `Dictionary` lookup hashes the
/// key with SipHash; its slots hold the routes unretained, so that a lookup retains and
/// releases nothing (both measured in the DocC article "Routed reducers").
///
/// Thread safety: the router runs only as the store's reducer, so only on the thread holding
/// the store's lock; the table and the routes' memos are touched there only. What it was made
/// with is immutable.
final class ReducerRouter: @unchecked Sendable {
    // @unchecked: the table and the routes' memos change only under the store's lock (see
    // above); the rest is immutable after `init`.

    /// The reducers one action runs, in order, as one function (``compose(_:)``), and which
    /// reducers those are (their indexes, for the checks).
    final class Plan {
        let indexes: [Int]
        let run: ErasedReducer

        init(indexes: [Int], run: @escaping ErasedReducer) {
            self.indexes = indexes
            self.run = run
        }
    }

    /// The reducers of one action type.
    final class Route {
        /// The type's identity (``ActionContainer/identity(of:)``).
        let type: UInt
        /// The reducers of this type and those of every action, in the order they were added:
        /// what an action of this type runs when its identifier has no reducers of its own.
        let plan: Plan
        /// `plan.run`, one load nearer.
        let run: ErasedReducer
        /// For each identifier with reducers that actions of this type were seen with: `plan`
        /// merged with that identifier's reducers, in order. Grows under the store's lock, at
        /// most to the number of identifiers with reducers.
        @exclusivity(unchecked) var byIdentifier: [JSONKey: Plan] = [:]
        /// The last identifier this type's actions were seen with (`nil` before the first), and
        /// its plan (`plan` or one of `byIdentifier`, which keep it alive).
        @exclusivity(unchecked) var lastIdentifier: String?
        @exclusivity(unchecked) var lastPlan: Unmanaged<Plan>

        init(type: UInt, plan: Plan) {
            self.type = type
            self.plan = plan
            run = plan.run
            lastPlan = .passUnretained(plan)
        }
    }

    /// Every reducer, in the order added, and what it matches.
    private let reducers: [RoutedReducer]
    /// Whether any reducer matches by identifier: if not, no action's identifier is read.
    private let matchesIdentifiers: Bool
    /// The identifiers with reducers of their own.
    private let identifiers: Set<JSONKey>
    /// The decoders of the registered action types, by identifier (``Reducers/actions``).
    private let decoders: [JSONKey: ActionTypes.DecodeJSONAction]
    /// `JSONAction`'s type identity.
    private let jsonActionType = ActionContainer.identity(of: JSONAction.self)

    /// One slot of the table: a type identity's bits (0: empty) and its route, held unretained
    /// (``routes`` keeps it), so that a lookup retains nothing.
    struct Slot {
        var key: UInt = 0
        var route: Unmanaged<Route>?
    }

    /// The table: each route in the slot its type's hash gives or the first free one after it.
    /// At most half full.
    @exclusivity(unchecked) private var slots: ContiguousArray<Slot>
    /// Every route, in the order made: what keeps them alive.
    @exclusivity(unchecked) private var routes: [Route] = []
    /// `slots.count - 1`, and the shift that takes a hash's top bits as an index.
    @exclusivity(unchecked) private var mask: Int
    @exclusivity(unchecked) private var shift: UInt

    init(_ reducers: [RoutedReducer], decoders: [JSONKey: ActionTypes.DecodeJSONAction]) {
        self.reducers = reducers
        var identifiers = Set<JSONKey>()
        var types = 0
        for reducer in reducers {
            switch reducer.match {
            case .identifier(let identifier): identifiers.insert(identifier)
            case .type: types += 1
            case .always: break
            }
        }
        self.identifiers = identifiers
        matchesIdentifiers = !identifiers.isEmpty
        self.decoders = decoders
        // Room for the registered types and as many others at half load, 16 slots at least.
        var capacity = 16
        while capacity < 4 * types { capacity *= 2 }
        slots = ContiguousArray(repeating: Slot(), count: capacity)
        mask = capacity - 1
        shift = UInt(UInt.bitWidth - capacity.trailingZeroBitCount)
    }

    /// Runs the reducers that handle `action`, in order, on the state at `address`. Called by
    /// the store under its lock (it is the store's reducer); allocates nothing once the action's
    /// type has a route (and, in a store with identifier reducers, its identifier a plan).
    @inline(__always)
    func run(_ address: UnsafeMutableRawPointer, _ action: any Action) {
        let type = boxedType(of: action)
        if type == jsonActionType, !decoders.isEmpty, runDecoded(address, action) { return }
        let route = self.route(of: type)
        if matchesIdentifiers {
            runMatchingIdentifier(route, address, action)
        } else {
            route._withUnsafeGuaranteedRef { $0.run(address, action) }
        }
    }

    /// The end of ``run(_:_:)`` in a store with identifier reducers.
    @inline(__always)
    private func runMatchingIdentifier(
        _ route: Unmanaged<Route>, _ address: UnsafeMutableRawPointer, _ action: any Action
    ) {
        let identifier = action.identifier
        let plan = route._withUnsafeGuaranteedRef { $0.plan(for: identifier, in: self) }
        plan._withUnsafeGuaranteedRef { $0.run(address, action) }
    }

    /// For a ``JSONAction`` in a store with registered action types: if its identifier is
    /// registered and its payload decodes into a type other than `JSONAction`, runs the
    /// decoded action's reducers and returns `true`; otherwise `false` (routed by identifier).
    @inline(never)
    private func runDecoded(_ address: UnsafeMutableRawPointer, _ action: any Action) -> Bool {
        let json = projection(of: action, as: JSONAction.self)
        guard let decode = decoders[JSONKey(json.identifier)],
              let decoded = try? decode(json)
        else { return false }
        let type = boxedType(of: decoded)
        guard type != jsonActionType else { return false }
        let route = self.route(of: type)
        if matchesIdentifiers {
            runMatchingIdentifier(route, address, decoded)
        } else {
            route._withUnsafeGuaranteedRef { $0.run(address, decoded) }
        }
        return true
    }

    /// The route of the type `type`, made on its first action.
    @inline(__always)
    private func route(of type: UInt) -> Unmanaged<Route> {
        var index = home(of: type)
        while true {
            let slot = slots[index]
            if slot.key == type { return slot.route.unsafelyUnwrapped }
            if slot.key == 0 { return addRoute(of: type, at: index) }
            index = (index &+ 1) & mask
        }
    }

    /// The slot where the search for `key` starts: the top bits of a Fibonacci hash (a
    /// multiplication by 2⁶⁴/φ), which spreads type metadata addresses, multiples of 8 or 16
    /// close together, over the table.
    @inline(__always)
    private func home(of key: UInt) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) &>> shift)
    }

    /// Makes the route of `type`, whose key belongs at `index` (empty), and keeps it; grows
    /// the table first when it would be more than half full.
    @inline(never)
    private func addRoute(of type: UInt, at index: Int) -> Unmanaged<Route> {
        let route = Route(type: type, plan: plan(where: { $0 == .type(type) || $0 == .always }))
        routes.append(route)
        if 2 * routes.count > slots.count {
            grow()  // puts every route in, this one too
        } else {
            slots[index] = Slot(key: type, route: .passUnretained(route))
        }
        _checkInvariants()
        return .passUnretained(route)
    }

    /// Doubles the table and puts every route of `routes` in again.
    private func grow() {
        let capacity = slots.count * 2
        slots = ContiguousArray(repeating: Slot(), count: capacity)
        mask = capacity - 1
        shift = UInt(UInt.bitWidth - capacity.trailingZeroBitCount)
        for route in routes { insert(route) }
    }

    /// Puts `route` at its hash's index or the first free one after it (there is one).
    private func insert(_ route: Route) {
        var index = home(of: route.type)
        while slots[index].key != 0 { index = (index &+ 1) & mask }
        slots[index] = Slot(key: route.type, route: .passUnretained(route))
    }

    /// The plan of the reducers whose match passes `include`, in the order added.
    fileprivate func plan(where include: (RoutedReducer.Match) -> Bool) -> Plan {
        let indexes = reducers.indices.filter { include(reducers[$0].match) }
        return Plan(indexes: indexes, run: compose(indexes[...]))
    }

    /// One function that calls the reducers at `indexes` in order (``composed(_:_:)``), each
    /// read from its ``RoutedReducer``.
    private func compose(_ indexes: ArraySlice<Int>) -> ErasedReducer {
        composed(indexes) { reducers[$0].reduce }
    }

    /// Whether `identifier` has reducers of its own.
    fileprivate func hasReducers(for identifier: JSONKey) -> Bool {
        identifiers.contains(identifier)
    }

    /// Checks the table (internal-checks builds): every route is where a lookup finds it, at most
    /// half the slots are used, and each route's plan lists, in order, exactly the reducers of its
    /// type and those of every action.
    func _checkInvariants() {
        #if REDUXSTORE_INTERNAL_CHECKS
        precondition(slots.count == mask + 1 && slots.count.nonzeroBitCount == 1
                        && Int(shift) == UInt.bitWidth - slots.count.trailingZeroBitCount,
                     "ReduxStore: the reducer table's size is not a power of two, or its mask or shift not its size's")
        precondition(2 * routes.count <= slots.count, "ReduxStore: the reducer table is more than half full")
        var used = 0
        for index in slots.indices where slots[index].key != 0 {
            used += 1
            guard let route = slots[index].route?.takeUnretainedValue(),
                  route.type == slots[index].key,
                  routes.contains(where: { $0 === route })
            else {
                preconditionFailure("ReduxStore: a reducer table key without its route, or a route not kept")
            }
            // Reachable: no empty slot between the key's home and its slot.
            var probe = home(of: slots[index].key)
            while probe != index {
                precondition(slots[probe].key != 0, "ReduxStore: a reducer table route a lookup cannot reach")
                probe = (probe + 1) & mask
            }
            let expected = reducers.indices.filter {
                reducers[$0].match == .type(route.type) || reducers[$0].match == .always
            }
            precondition(route.plan.indexes == expected,
                         "ReduxStore: a route's reducers are not its type's and every action's, in order")
        }
        precondition(used == routes.count, "ReduxStore: the reducer table holds another number of routes than it made")
        #endif
    }
}

extension ReducerRouter.Route {
    /// The plan of an action of this type with identifier `identifier`: `plan`, merged with the
    /// identifier's reducers if it has any. The caller holds the store's lock; the plan lives as
    /// long as the route.
    @inline(__always)
    func plan(for identifier: String, in router: ReducerRouter) -> Unmanaged<ReducerRouter.Plan> {
        if let last = lastIdentifier, JSONKey.sameCodePoints(last, identifier) { return lastPlan }
        return plan(remembering: identifier, in: router)
    }

    /// ``plan(for:in:)`` for an identifier other than the last one: looks it up (making its
    /// merged plan the first time) and remembers it as the last.
    @inline(never)
    private func plan(remembering identifier: String, in router: ReducerRouter) -> Unmanaged<ReducerRouter.Plan> {
        let key = JSONKey(identifier)
        let chosen: ReducerRouter.Plan
        if let known = byIdentifier[key] {
            chosen = known
        } else if router.hasReducers(for: key) {
            chosen = router.plan(where: { $0 == .type(type) || $0 == .always || $0 == .identifier(key) })
            byIdentifier[key] = chosen
        } else {
            chosen = plan
        }
        lastIdentifier = identifier
        lastPlan = .passUnretained(chosen)
        return lastPlan
    }
}

/// The identity of the type `action` was boxed as: for a struct or an enum its type; for a class
/// instance the type it was dispatched as. Read from the existential container
/// (``ActionContainer/typeIdentity(of:)``), where `type(of:)` calls into the runtime (which also
/// looks through a class instance to its dynamic class), and opening the existential calls a
/// helper to find the value.
@inline(__always)
func boxedType(of action: any Action) -> UInt {
    ActionContainer.typeIdentity(of: action)
}
