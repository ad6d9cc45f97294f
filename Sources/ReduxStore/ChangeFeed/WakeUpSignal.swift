/// A wake-up without polling: ``ring()`` (from under a store's lock: it only signals) ends every
/// ``wait()`` running, or the next one if none is; ``close()`` ends every wait from then on.
/// How the readers of a store's action log wait for its next record: each leaves its ring as
/// the log's wake-up (``Store/readActionLog(after:limit:wake:)``).
final class WakeUpSignal: Sendable {
    private struct State {
        var rung = false
        var closed = false
        /// Every task waiting: one, unless several iterate one sequence at once.
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Locked(State())

    init() {}

    func ring() {
        let waiters = state.withLock { state in
            defer { state.waiters = [] }
            if state.waiters.isEmpty { state.rung = true }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func close() {
        let waiters = state.withLock { state in
            defer { state.waiters = [] }
            state.closed = true
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    /// Returns once rung (since the last wait) or closed, or at cancellation.
    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.rung || state.closed || Task.isCancelled {
                        state.rung = false
                        return true
                    }
                    state.waiters.append(continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            close()
        }
    }
}
