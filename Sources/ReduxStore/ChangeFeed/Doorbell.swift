/// A wake-up without polling: ``ring()`` (from under a store's lock: it only signals) ends one
/// ``wait()``, or the next one if none is waiting; ``close()`` ends every wait from then on.
/// How the readers of a store's action log wait for its next record: each leaves its ring as
/// the log's wake-up (``Store/readActionLog(after:limit:wake:)``).
package final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var closed = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Locked(State())

    package init() {}

    package func ring() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            defer { state.waiter = nil }
            if state.waiter == nil { state.rung = true }
            return state.waiter
        }
        waiter?.resume()
    }

    package func close() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            defer { state.waiter = nil }
            state.closed = true
            return state.waiter
        }
        waiter?.resume()
    }

    package var isClosed: Bool { state.withLock { $0.closed } }

    /// Returns once rung (since the last wait) or closed, or at cancellation.
    package func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.rung || state.closed || Task.isCancelled {
                        state.rung = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            close()
        }
    }
}
