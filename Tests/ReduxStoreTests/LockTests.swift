import Dispatch
import Foundation
import ReduxStoreTestSupport
import Testing
@_spi(Bindings) @testable import ReduxStore

// The store's one lock type (`Locked`): one thread at a time inside, under contention too (more
// threads than cores, so that the waits past the spin are taken); no wake-up lost between a
// release and a thread about to wait; the condition's wait releases the lock and takes it again.
//
// A lost wake-up shows as a hang. The suite has no time limit of its own: Swift Testing counts a
// test's time from when it is started, and in a full parallel run (ThreadSanitizer, two cores) a
// test can wait minutes for a thread of the pool before its body runs. `scripts/test` runs every
// suite under a watchdog instead, and a hung test is the one that started and never passed.

@Suite("The store's lock")
struct LockTests {
    @Test("eight threads incrementing under the lock: every increment counted, never two inside")
    func mutualExclusion() {
        struct Guarded { var count = 0; var inside = 0; var overlaps = 0 }
        let lock = Locked(Guarded())
        let perThread = 20_000
        onThreads(8) { _ in
            for _ in 0..<perThread {
                lock.withLock { value in
                    value.inside += 1
                    if value.inside != 1 { value.overlaps += 1 }
                    value.count += 1
                    value.inside -= 1
                }
            }
        }
        let result = lock.withLock { $0 }
        #expect(result.count == 8 * perThread)
        #expect(result.overlaps == 0)
    }

    @Test("threads that wait while the holder sleeps sleep too, not spin, and each is woken and takes the lock in turn")
    func waitersAreWoken() {
        let lock = Locked([Int]())
        // What each waiter spent taking the lock: the time that passed, and its own CPU time.
        let waits = Locked([(wall: Double, cpu: Double)]())
        // Thread 0 holds the lock long enough for the others to spin out and wait.
        let holding = DispatchSemaphore(value: 0)
        onThreads(5) { index in
            if index == 0 {
                lock.withLock { taken in
                    holding.signal()
                    usleep(300_000)
                    taken.append(index)
                }
            } else {
                holding.wait()
                holding.signal()
                let wallStart = DispatchTime.now().uptimeNanoseconds
                let cpuStart = threadCPUSeconds()
                lock.withLock { $0.append(index) }
                let cpu = threadCPUSeconds() - cpuStart
                let wall = Double(DispatchTime.now().uptimeNanoseconds - wallStart) / 1e9
                waits.withLock { $0.append((wall, cpu)) }
            }
        }
        let taken = lock.withLock { $0 }
        #expect(taken.first == 0)
        #expect(taken.sorted() == [0, 1, 2, 3, 4])
        // A waiter that spun would have used about as much CPU as it waited; one that slept next
        // to none. Those that came while the holder slept (a tenth of a second or more) are told.
        let waited = waits.withLock { $0 }.filter { $0.wall > 0.1 }
        #expect(!waited.isEmpty, "no thread waited for the holder")
        for wait in waited {
            #expect(wait.cpu < wait.wall / 4, "a waiter used \(wait.cpu) s of CPU in \(wait.wall) s: it spun")
        }
    }

    @Test("a value handed back and forth 2,000 times through wait and broadcast: no wake-up lost")
    func pingPong() {
        let turn = Locked(0)
        let rounds = 2_000
        onThreads(2) { player in
            for round in 0..<rounds {
                let mine = 2 * round + player
                let view = turn.unsafe
                view.lock()
                while view.valuePointer.pointee != mine { view.wait() }
                view.valuePointer.pointee += 1
                view.unlock()
                turn.withLock { _ in turn.broadcast() }
            }
        }
        #expect(turn.withLock { $0 } == 2 * rounds)
    }

    @Test("a timed wait with nobody to wake it returns holding the lock, after about its time")
    func timedWait() {
        let lock = Locked(false)
        let start = DispatchTime.now().uptimeNanoseconds
        let view = lock.unsafe
        view.lock()
        view.wait(milliseconds: 30)
        view.valuePointer.pointee = true
        view.unlock()
        let elapsed = DispatchTime.now().uptimeNanoseconds - start
        #expect(elapsed >= 25_000_000)
        // Held again on return: another thread sees the write made after the wait.
        let seen = Locked(false)
        onThreads(1) { _ in
            let value = lock.withLock { $0 }
            seen.withLock { $0 = value }
        }
        #expect(seen.withLock { $0 })
    }
}

/// The calling thread's CPU time so far, in seconds.
private func threadCPUSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}
