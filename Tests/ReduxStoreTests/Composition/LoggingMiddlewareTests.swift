import Logging
import ReduxStore
import ReduxStoreTestSupport
import Testing

/// A log handler that keeps what it is given.
private struct CapturingHandler: LogHandler {
    struct Entry: Sendable {
        let level: Logger.Level
        let message: String
        let metadata: Logger.Metadata
    }

    let entries: Recorder<Entry>
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        entries.append(Entry(level: event.level, message: "\(event.message)", metadata: event.metadata ?? [:]))
    }
}

private struct Rename: Action, Codable {
    var identifier: String { "todo.rename" }
    let title: String
}

@Suite("LoggingMiddleware: one message per action, payloads only at trace")
struct LoggingMiddlewareTests {
    private func logging(level: Logger.Level, loggerLevel: Logger.Level) -> (LoggingMiddleware, Recorder<CapturingHandler.Entry>) {
        let entries = Recorder<CapturingHandler.Entry>()
        var logging = LoggingMiddleware(label: "test.store", level: level)
        logging.logger = Logger(label: "test.store") { _ in
            CapturingHandler(entries: entries, logLevel: loggerLevel)
        }
        return (logging, entries)
    }

    @Test("logs each action at its level with identifier and version, no payload above trace")
    func perAction() {
        let (logging, entries) = logging(level: .info, loggerLevel: .info)
        let store = Store(
            reducers: [counterReducer], state: CounterState(), middleware: [logging.middleware()])
        store.dispatchAction(CounterAction.increment)
        store.dispatchAction(JSONAction(identifier: "other", payload: .object(["secret": .string("x")])))
        let all = entries.all
        #expect(all.map(\.message) == ["action counter.increment", "action other"])
        #expect(all.allSatisfy { $0.level == .info })
        #expect(all.map { $0.metadata["version"]?.description } == ["1", "2"])
        #expect(all.map { $0.metadata["identifier"]?.description } == ["counter.increment", "other"])
        #expect(!all.contains { $0.metadata["payload"] != nil })
    }

    @Test("a level below the logger's logs nothing")
    func filtered() {
        let (logging, entries) = logging(level: .debug, loggerLevel: .info)
        let store = Store(
            reducers: [counterReducer], state: CounterState(), middleware: [logging.middleware()])
        store.dispatchAction(CounterAction.increment)
        #expect(entries.count == 0)
        #expect(store.version == 1)
    }

    @Test("at trace the payload is logged as JSON: a JSONAction's payload, an Encodable action's properties")
    func payloadsAtTrace() {
        let (logging, entries) = logging(level: .debug, loggerLevel: .trace)
        let store = Store(
            reducers: [counterReducer], state: CounterState(), middleware: [logging.middleware()])
        store.dispatchAction(JSONAction(identifier: "set", payload: ["n": 3]))
        store.dispatchAction(Rename(title: "milk"))
        let payloads = entries.all.compactMap { $0.metadata["payload"]?.description }
        #expect(payloads == [#"{"n":3}"#, #"{"title":"milk"}"#])
        #expect(entries.all.filter { $0.level == .trace }.count == 2)
    }
}
