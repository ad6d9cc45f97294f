import Logging

/// A middleware that logs each action with swift-log.
///
/// ```swift
/// let logging = LoggingMiddleware(label: "app.store", level: .debug)
/// let store = Store(reducers: [reducer], state: AppState(), middleware: [logging.middleware()])
/// ```
///
/// For each action that reaches it, it logs one message at `level`, once the rest of the chain
/// and the reducers ran: `action <identifier>`, with the metadata `identifier` and `version`
/// (the store's version read after the action; under concurrent dispatch it may already count
/// other threads' actions). The payload is logged only when the logger logs `.trace`: then a
/// second message at `.trace` carries it as JSON text in the metadata `payload` (a
/// ``JSONAction``'s payload, the encoded properties of an `Encodable` action, or nothing for
/// other actions). Payloads are not encoded at all otherwise.
///
/// Where messages go is the program's choice (`LoggingSystem.bootstrap`); by default swift-log
/// writes to standard error and filters by the logger's level, `.info`.
public struct LoggingMiddleware: Sendable {
    /// The logger the messages go to.
    public var logger: Logger
    /// The level of the per-action message.
    public var level: Logger.Level

    /// - Parameters:
    ///   - label: the logger's label.
    ///   - level: the level of the per-action message.
    public init(label: String = "ReduxStore", level: Logger.Level = .info) {
        self.logger = Logger(label: label)
        self.level = level
    }

    /// The middleware, for a store of any state. (`SendableMetatype`: the `@Sendable` closure
    /// reads the store's version, which names the state's type; every concrete type but one
    /// with an actor-isolated conformance has it.)
    public func middleware<State: Codable & SendableMetatype>() -> Middleware<State> {
        let logger = logger
        let level = level
        return { store, action, next in
            next(action)
            logger.log(
                level: level, "action \(action.identifier)",
                metadata: [
                    "identifier": .string(action.identifier),
                    "version": .stringConvertible(store.version),
                ])
            if logger.logLevel <= .trace, let payload = Self.payloadText(of: action) {
                logger.trace(
                    "action \(action.identifier) payload",
                    metadata: ["identifier": .string(action.identifier), "payload": .string(payload)])
            }
        }
    }

    /// The action's payload as JSON text: a `JSONAction`'s payload, or an `Encodable` action's
    /// encoded properties; `nil` for other actions and for a payload that does not encode.
    static func payloadText(of action: any Action) -> String? {
        if let action = action as? JSONAction {
            return try? JSONCEncoder().encodeToJSONString(action.payload ?? .null)
        }
        if let action = action as? any Encodable {
            return try? JSONCEncoder().encodeToJSONString(action)
        }
        return nil
    }
}
