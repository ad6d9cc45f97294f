@_spi(Bindings) import ReduxStore
import ReduxStoreTestSupport
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A state whose halves the reducer always changes together: a torn snapshot would differ.
private struct Ledger: Codable {
    var count = 0
    var left = 0
    var right = 0
    /// Actions applied per dispatching thread.
    var perThread = [Int](repeating: 0, count: 8)
}

private struct Deposit: Action {
    var thread: Int
    var amount: Int
    var identifier: String { "ledger.deposit" }
}

private let ledgerReducer: Reducer<Ledger> = { state, action in
    guard let deposit = action as? Deposit else { return }
    state.count += 1
    state.left += deposit.amount
    state.perThread[deposit.thread] += 1
    state.right += deposit.amount
}

/// How long the stress test runs: REDUXSTORE_STRESS_SECONDS, 5 by default.
private var stressSeconds: Double {
    getenv("REDUXSTORE_STRESS_SECONDS").flatMap { Double(String(cString: $0)) } ?? 5
}

/// The last version each thread saw; counts versions that did not increase.
private final class VersionOrder: Sendable {
    private let state = Locked<(last: [UInt: UInt64], outOfOrder: Int)>(([:], 0))
    func saw(_ version: UInt64, on thread: UInt) {
        state.withLock { state in
            if let last = state.last[thread], last >= version { state.outOfOrder += 1 }
            state.last[thread] = version
        }
    }
    var outOfOrder: Int { state.withLock { $0.outOfOrder } }
}

@Suite("Stress: dispatchers, readers and observer churn at once")
struct StoreStressTests {
    @Test("8 dispatching, 2 reading, 2 adding and removing observers: exact totals, whole snapshots")
    func stress() {
        let store = Store(reducers: [ledgerReducer], state: Ledger())
        let seconds = stressSeconds
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        let dispatched = Locked<[Int]>([Int](repeating: 0, count: 8))
        let snapshots = Tally()
        let torn = Tally()
        let churned = Tally()
        let heard = Tally()
        // A standing observer: on each dispatching thread, versions only increase.
        let order = VersionOrder()
        store.addObserver { note in
            heard.increment()
            order.saw(note.version, on: UInt(pthread_self()))
        }

        onThreads(12) { index in
            switch index {
            case 0..<8:
                var count = 0
                while ContinuousClock.now < deadline {
                    for _ in 0..<64 {
                        store.dispatchAction(Deposit(thread: index, amount: index + 1))
                        count += 1
                    }
                }
                dispatched.withLock { $0[index] = count }
            case 8, 9:
                while ContinuousClock.now < deadline {
                    let copy = store.currentState()
                    if copy.left != copy.right || copy.count != copy.perThread.reduce(0, +) {
                        torn.increment()
                    }
                    snapshots.increment()
                }
            default:
                while ContinuousClock.now < deadline {
                    let token = store.addObserver { _ in }
                    store.removeObserver(token)
                    churned.increment()
                }
            }
        }

        let perThread = dispatched.withLock { $0 }
        let total = perThread.reduce(0, +)
        let final = store.currentState()
        print("stress: \(seconds) s, \(total) actions, \(snapshots.count) snapshots, \(churned.count) observers added and removed")
        #expect(final.count == total)
        #expect(final.perThread == perThread)
        #expect(final.left == perThread.enumerated().reduce(0) { $0 + $1.element * ($1.offset + 1) })
        #expect(final.left == final.right)
        #expect(store.version == UInt64(total))
        #expect(heard.count == total)
        #expect(torn.count == 0)
        #expect(order.outOfOrder == 0)
        #expect(snapshots.count > 0)
        #expect(churned.count > 0)
        #expect(store.observerCount == 1)
    }
}
