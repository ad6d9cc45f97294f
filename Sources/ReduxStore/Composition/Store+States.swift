// `SendableMetatype`: the stream's closures copy states, which needs the state's type; every
// concrete type but one with an actor-isolated conformance has it.
extension Store where State: SendableMetatype {
    /// The store's state as an async sequence of snapshots: first the state now, then the state
    /// after changes.
    ///
    /// ```swift
    /// for await state in store.states() {
    ///     render(state)
    /// }
    /// ```
    ///
    /// Each element is a ``currentState()`` snapshot, taken when the consumer asks for the next
    /// element, not on the dispatching thread: a burst of actions costs the dispatchers nothing
    /// but a signal, and a slow consumer skips to the newest state (nothing is buffered but one
    /// pending signal, so memory never grows). Actions that do not notify
    /// (``Action/notifiesObservers``) do not wake the consumer. The sequence ends when the store
    /// is freed (it holds the store weakly) or when the consumer stops iterating or its task is
    /// cancelled; its observer is removed then.
    public func states() -> AsyncStream<State> {
        let (changes, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        // The first element is the state now.
        continuation.yield()
        let token = addObserver(named: .stateDidChange, queue: nil, onRelease: { continuation.finish() }) {
            _ in continuation.yield()
        }
        let consumer = StatesConsumer(changes: changes, store: self, token: token)
        return AsyncStream(unfolding: { await consumer.next() }, onCancel: { consumer.stop() })
    }
}

/// The consumer side of ``Store/states()``: waits for a change signal, then takes a snapshot.
private final class StatesConsumer<State: Codable & SendableMetatype>: @unchecked Sendable {
    // @unchecked: `iterator` is used by the one task iterating the stream (AsyncStream's
    // unfolding closure is never called concurrently); `store` is weak and immutable.
    private var iterator: AsyncStream<Void>.Iterator
    private weak var store: Store<State>?
    private let token: ObserverToken

    init(changes: AsyncStream<Void>, store: Store<State>, token: ObserverToken) {
        iterator = changes.makeAsyncIterator()
        self.store = store
        self.token = token
    }

    deinit { stop() }

    func next() async -> State? {
        guard await iterator.next() != nil, let store else { return nil }
        return store.currentState()
    }

    /// Removes the observer (the stream ended or was cancelled).
    func stop() {
        store?.removeObserver(token)
    }
}
