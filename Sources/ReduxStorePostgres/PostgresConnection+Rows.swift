internal import CJSONC
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import ReduxStore
import Crypto
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

extension PostgresConnection {
    /// Runs `query` and collects its rows, within ``StreamConnection/queryTimeout``: a query
    /// sent just as the server ended the session can be left unanswered by postgres-nio (its
    /// promise is never completed), so the wait is bounded, and a query past the bound is a
    /// lost connection (the caller closes it and connects anew).
    func rows(
        _ query: PostgresQuery, logger: Logger, timeout: Duration = StreamConnection.queryTimeout
    ) async throws -> [PostgresRow] {
        let answer = Answer<[PostgresRow]>()
        return try await withCheckedThrowingContinuation { continuation in
            answer.wait(continuation)
            // The bound, on the connection's event loop: no task of its own to start and cancel
            // for every statement.
            let timer = eventLoop.scheduleTask(in: .nanoseconds(Int64(timeout.seconds * 1e9))) {
                answer.give(.failure(ReplicationError(
                    .connection, "PostgreSQL did not answer within \(timeout)")))
            }
            Task {
                do {
                    answer.give(.success(try await self.query(query, logger: logger).collect()))
                } catch {
                    answer.give(.failure(error))
                }
                timer.cancel()
            }
        }
    }
}

/// The first of several results, handed to one waiting continuation.
final class Answer<Value: Sendable>: Sendable {
    private let state = NIOLockedValueBox<(continuation: CheckedContinuation<Value, any Error>?, given: Bool)>((nil, false))

    func wait(_ continuation: CheckedContinuation<Value, any Error>) {
        state.withLockedValue { $0.continuation = continuation }
    }

    func give(_ result: Result<Value, any Error>) {
        let continuation = state.withLockedValue { state -> CheckedContinuation<Value, any Error>? in
            guard !state.given else { return nil }
            state.given = true
            return state.continuation
        }
        continuation?.resume(with: result)
    }
}
