import HTTPTypes
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import ReduxStore
#if canImport(Glibc)
import Glibc
#endif

/// A one-time event waited for with a time limit.
final class Completion: Sendable {
    private struct State {
        var done = false
        var waiters: [Int: CheckedContinuation<Bool, Never>] = [:]
        var timers: [Int: Task<Void, Never>] = [:]
        var next = 0
    }
    private let state = NIOLockedValueBox(State())

    func signal() {
        let (waiters, timers) = state.withLockedValue { state in
            state.done = true
            defer {
                state.waiters = [:]
                state.timers = [:]
            }
            return (Array(state.waiters.values), Array(state.timers.values))
        }
        for timer in timers { timer.cancel() }
        for waiter in waiters { waiter.resume(returning: true) }
    }

    /// True once signalled, false when `limit` passed first.
    func wait(for limit: Duration) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let id = state.withLockedValue { state -> Int? in
                if state.done { return nil }
                state.next += 1
                state.waiters[state.next] = continuation
                return state.next
            }
            guard let id else {
                continuation.resume(returning: true)
                return
            }
            let timer = Task {
                try? await Task.sleep(for: limit)
                self.expire(id)
            }
            let signalled = state.withLockedValue { state -> Bool in
                if state.waiters[id] == nil { return true }
                state.timers[id] = timer
                return false
            }
            if signalled { timer.cancel() }
        }
    }

    private func expire(_ id: Int) {
        let waiter = state.withLockedValue { state -> CheckedContinuation<Bool, Never>? in
            state.timers[id] = nil
            return state.waiters.removeValue(forKey: id)
        }
        waiter?.resume(returning: false)
    }
}
