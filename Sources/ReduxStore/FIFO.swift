/// Work handed in while other work of the same kind runs, done after it, in the order it was
/// handed in: the store's one rule for what its callbacks dispatch.
///
/// - An action a reducer dispatches is applied after the action being reduced, before the
///   dispatch that applied that one returns, on the same thread (``StoreCore/nested``).
/// - In a store with middleware, the same actions pass the chain after the current one, in
///   order (``MiddlewarePass/dispatched``).
/// - The notification of an action an observer dispatches is delivered after the round in
///   progress (``DeliveryFrame/pending``).
///
/// Each is a queue of this type, drained by one loop, `while let next = queue.popFirst()`, which
/// takes what the work it does appends in turn: so the order is the order of the dispatches,
/// and a callback that dispatches again and again grows neither the stack nor the queue (once
/// all is taken the queue is emptied, keeping its storage). What a transaction leaves to do
/// after its lock is released (the rounds and actions of its queue) waits in order in the
/// thread's pending work (``ThreadContext/pending``).
///
/// Invariant (``_checkInvariants()``, internal-checks builds): the cursor is within the
/// elements, and a queue whose elements were all taken holds none.
struct FIFO<Element> {
    /// `nil` until the first element: a queue nothing was handed to has nothing to release.
    private var elements: [Element]?
    /// The next element to take.
    private var next = 0

    init() {}

    /// A queue of `elements`, oldest first; `nil` for none.
    init(_ elements: [Element]?) {
        self.elements = elements
    }

    /// Whether nothing is left to take.
    @inline(__always)
    var isEmpty: Bool { elements?.isEmpty ?? true }

    /// Hands in `element`, to be taken after everything handed in before it.
    mutating func append(_ element: Element) {
        if elements == nil { elements = [] }
        elements!.append(element)
    }

    /// Hands in `elements`, in their order.
    mutating func append(contentsOf elements: some Sequence<Element>) {
        if self.elements == nil { self.elements = [] }
        self.elements!.append(contentsOf: elements)
    }

    /// Takes the oldest element not yet taken; `nil` when none is left. Taking the last one
    /// empties the queue, keeping its storage for what comes next.
    @inline(__always)
    mutating func popFirst() -> Element? {
        guard let count = elements?.count, next < count else { return nil }
        let element = elements![next]
        next += 1
        if next == count {
            elements!.removeAll(keepingCapacity: true)
            next = 0
        }
        return element
    }

    /// Takes every element not yet taken, oldest first, leaving the queue empty.
    mutating func takeAll() -> [Element] {
        guard var taken = elements else { return [] }
        elements = nil
        if next > 0 { taken.removeFirst(next) }
        next = 0
        return taken
    }

    /// Checks the invariant (under REDUXSTORE_INTERNAL_CHECKS).
    func _checkInvariants() {
        #if REDUXSTORE_INTERNAL_CHECKS
        let count = elements?.count ?? 0
        precondition(next <= count && (next < count || next == 0),
                     "ReduxStore: a queue of dispatched work has its cursor past its elements")
        #endif
    }
}
