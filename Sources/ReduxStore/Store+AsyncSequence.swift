extension Store {
    /// The store's notifications as an async sequence.
    ///
    /// Each iteration registers a synchronous observer; the stream buffers according to
    /// `bufferingPolicy` (by default only the newest notification is kept, so a slow consumer
    /// sees the latest version, like a queued observer). Ending the iteration, or dropping the
    /// stream, removes the observer. When the store goes away, the sequence ends.
    ///
    /// ```swift
    /// for await change in store.notifications() {
    ///     print(change.version, change.actionIdentifier)
    /// }
    /// ```
    public func notifications(
        named name: StoreNotification.Name = .stateDidChange,
        bufferingPolicy: AsyncStream<StoreNotification>.Continuation.BufferingPolicy =
            .bufferingNewest(1)
    ) -> AsyncStream<StoreNotification> {
        AsyncStream(bufferingPolicy: bufferingPolicy) { continuation in
            let token = addObserver(
                named: name, queue: nil, onRelease: { continuation.finish() }
            ) { notification in
                continuation.yield(notification)
            }
            weak let store: (any AnyStore)? = self
            continuation.onTermination = { _ in
                store?.removeObserver(token)
            }
        }
    }
}
