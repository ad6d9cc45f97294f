/// One store's pass of actions through its middleware on a thread, and the actions its reducers
/// dispatched meanwhile, which pass the chain in this order once the current one was applied.
struct MiddlewarePass {
    let store: ObjectIdentifier
    /// The pass this one is nested in.
    let outer: UnsafeMutablePointer<MiddlewarePass>?
    /// What the reducers dispatched meanwhile (``FIFO``).
    var dispatched = FIFO<QueuedAction>()
}
