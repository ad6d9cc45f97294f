/// Runs `body` on the Swift concurrency pool and blocks the calling thread until it finished:
/// for callers with no async context of their own, such as a thread another language started
/// or a command line's `run`. Never call it from a task on the pool: it would hold one of the pool's threads
/// while waiting for another.
///
/// Package: the inspector's and replication's libraries for C and `reduxstore-inspect` start and
/// stop their services with it.
package func blockingWait<T: Sendable, Failure: Error>(
    _ body: @escaping @Sendable () async throws(Failure) -> T
) -> Result<T, Failure> {
    let outcome = Locked<Result<T, Failure>?>(nil)
    Task {
        let result: Result<T, Failure>
        do throws(Failure) { result = .success(try await body()) } catch { result = .failure(error) }
        outcome.withLock {
            $0 = result
            outcome.broadcast()
        }
    }
    let view = outcome.unsafe
    view.lock()
    while view.valuePointer.pointee == nil { view.wait() }
    let result = view.valuePointer.pointee!
    view.unlock()
    return result
}
