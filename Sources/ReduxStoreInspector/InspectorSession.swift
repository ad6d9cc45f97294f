import HummingbirdWebSocket
import ReduxStore
#if canImport(Glibc)
import Glibc
#endif

/// One page connected over the WebSocket: the hello, then its changes and the answers to its
/// requests (see the DocC article "The inspector's protocol" for the messages).
final class InspectorSession: Sendable {
    /// The largest message a page may send.
    static let maximumMessageSize = 1 << 20
    /// The most members or elements of one container listed in a `state` answer.
    static let maximumListed = 1_000
    /// The deepest `depth` of a `state` request.
    static let maximumDepth = 64

    private let inspected: InspectedStore
    private let outbound: WebSocketOutboundWriter
    /// The sender's wake-ups: the store's log yields one when a change follows a read that found
    /// none (one is kept while the sender is busy); finished when the session ends.
    private let wakeUps: AsyncStream<Void>
    private let wakeUp: AsyncStream<Void>.Continuation

    init(inspected: InspectedStore, outbound: WebSocketOutboundWriter) {
        self.inspected = inspected
        self.outbound = outbound
        (wakeUps, wakeUp) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Serves the page until it closes, the inspector stops, or its frames break the protocol:
    /// then throws the WebSocket layer's error, which closes the connection with its code (1007
    /// for a text message that is not UTF-8, 1009 for a message over the limit, 1002 for frames
    /// that make no message).
    func run(inbound: WebSocketInboundStream) async throws {
        guard let (backlog, version, state) = inspected.connect() else {
            try? await outbound.close(.policyViolation, reason: "too many pages are connected")
            return
        }
        defer {
            inspected.disconnect()
            wakeUp.finish()
        }
        do {
            try await send(hello(backlog: backlog))
        } catch {
            return
        }
        let failure = await withTaskGroup(of: (any Error)?.self) { group in
            group.addTask {
                await self.sendChanges(after: version, state: state)
                return nil
            }
            group.addTask {
                do {
                    try await self.answer(inbound)
                    return nil
                } catch {
                    return error
                }
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            wakeUp.finish()
            return first
        }
        if let failure { throw failure }
    }

    /// Ends the session: the page is sent its close frame (1001) before its sender is stopped, so
    /// that the session's end cannot close the connection first with 1000.
    func close() async {
        try? await outbound.close(.goingAway, reason: "the inspector stopped")
        wakeUp.finish()
    }

    /// Sends `message` as one text message: several frames (fragments) when it is longer than
    /// ``maximumMessageSize`` (the WebSocket writer's frame size).
    private func send(_ message: JSONValue) async throws {
        try await outbound.writeTextMessage(message.description)
    }

    // MARK: Changes

    /// Sends what the store's log holds after `version` (whose state is `state`), as the page
    /// can take it: every change the log has, at most ``InspectorOptions/clientBuffer`` a read,
    /// in `change` messages or `changes` messages of several; the newest change of a read that
    /// reaches the store's version carries the patch from the state last sent (`patchFrom`: the
    /// version it starts from, when it covers more than that change); what the page missed
    /// (it fell behind by more than the log keeps) as a `gap`. A dispatch only appends to the
    /// log and, when the sender waits, rings.
    private func sendChanges(after version: UInt64, state: Result<JSONValue, StoreError>) async {
        var last = version
        // The state last sent (the page's patches lead to it), and its version.
        var sentState = try? state.get()
        var sentVersion = version
        let wakeUp = self.wakeUp
        var wakeUps = self.wakeUps.makeAsyncIterator()
        let limit = inspected.options.clientBuffer
        // Ends when the session does: its tasks are cancelled, or the stream of wake-ups finished.
        while !Task.isCancelled {
            guard let read = inspected.readLog(after: last, limit: limit, wake: { wakeUp.yield() }) else { return }
            guard let newest = read.changes.last else {
                if let time = read.retryAfter {
                    try? await Task.sleep(for: time)
                } else {
                    guard await wakeUps.next() != nil else { return }
                    // Woken by the first change after a quiet spell: the changes of the next
                    // interval go in one read, rather than the sender taking the store's lock
                    // beside the dispatching thread at once (a burst's first dispatch woke it).
                    try? await Task.sleep(for: Self.readInterval)
                }
                continue
            }
            var changes = read.changes.map { Self.change($0, includingPatch: false) }
            // The newest change read carries the patch from the state last sent, when the read
            // reached the store's version (it has the state at it).
            if let result = read.state, case .object(var message) = changes[changes.count - 1] {
                switch (result, sentState) {
                case (.success(let now), let before?):
                    message["patch"] = (try? JSONValue(encoding: JSONPatch.diff(from: before, to: now))) ?? .null
                    if sentVersion != newest.version &- 1 { message["patchFrom"] = .uint(sentVersion) }
                    sentState = now
                case (.success(let now), nil):
                    message["patchError"] = "the state before this change was not recorded"
                    sentState = now
                case (.failure(let error), _):
                    message["patchError"] = .string("the state is not JSON: \(error.message)")
                    sentState = nil
                }
                sentVersion = newest.version
                changes[changes.count - 1] = .object(message)
            }
            do {
                if read.dropped > 0 {
                    let first = read.changes[0].version
                    try await send(["type": "gap", "from": .uint(first &- read.dropped), "to": .uint(first &- 1)])
                }
                // In messages of at most about 12 KiB of changes: frames stay under 16 KiB, the
                // most a WebSocket client takes by default (Hummingbird's, for one), unless one
                // change is larger.
                var texts: [String] = []
                var size = 0
                for change in changes {
                    let text = change.description
                    if !texts.isEmpty, size + text.utf8.count > Self.changesMessageSize {
                        try await sendChanges(texts)
                        texts.removeAll(keepingCapacity: true)
                        size = 0
                    }
                    texts.append(text)
                    size += text.utf8.count + 1
                }
                try await sendChanges(texts)
            } catch {
                return
            }
            last = newest.version
            // At most one read about every 5 ms: under a burst the changes of 5 ms go in one read
            // (one encoding of the state, one diff) rather than the sender competing with the
            // dispatching threads for the store's lock and the cores as fast as it can go. A page
            // draws at most 60 times a second anyway.
            try? await Task.sleep(for: Self.readInterval)
        }
    }

    /// The least time between two reads of a store's log by a page's sender.
    static let readInterval = Duration.milliseconds(5)

    /// The size a `changes` message's changes stay under, unless one change is larger.
    static let changesMessageSize = 12 * 1024

    /// Sends `texts` (changes as JSON text): one `change`, or several in a `changes` message.
    private func sendChanges(_ texts: [String]) async throws {
        guard !texts.isEmpty else { return }
        if texts.count == 1 {
            try await outbound.writeTextMessage(texts[0])
        } else {
            try await outbound.writeTextMessage(#"{"type":"changes","changes":["# + texts.joined(separator: ",") + "]}")
        }
    }

    private func hello(backlog: [LoggedChange]) -> JSONValue {
        let options = inspected.options
        return [
            "type": "hello",
            "protocol": 1,
            "store": .string(inspected.name),
            "version": .uint(inspected.version),
            "history": .array(inspected.keptVersions.map { .uint($0) }),
            "allowsRestore": .bool(options.allowsRestore),
            "allowsDispatch": .bool(options.allowsDispatch),
            // null: any identifier (a C store that lists none); the store's reducers judge.
            "actions": !options.allowsDispatch ? .array([])
                : inspected.dispatchableIdentifiers.map { .array($0.map { .string($0) }) } ?? .null,
            "live": .bool(inspected.isLive),
            // A recorded journal's patches are at hand: sent. A live store's backlog has none.
            "log": .array(backlog.map { Self.change($0, includingPatch: true) }),
        ]
    }

    /// The `change` message of `change`.
    static func change(_ change: LoggedChange, includingPatch: Bool) -> JSONValue {
        switch change {
        case .record(let record): return Self.change(record, includingPatch: includingPatch)
        case .plain(let plain):
            return [
                "type": "change",
                "version": .uint(plain.version),
                "identifier": .string(plain.identifier),
                "time": .string(plain.time),
                "payload": plain.payload ?? .null,
                "typed": .bool(plain.typed),
                "patch": includingPatch ? plain.patch ?? .null : .null,
                "source": plain.source.map { .string($0) } ?? .null,
                "batch": plain.batch.map { .array([.uint($0.lowerBound), .uint($0.upperBound)]) } ?? .null,
            ]
        }
    }

    /// The `change` message of a Swift store's `record`.
    static func change(_ record: ChangeRecord, includingPatch: Bool) -> JSONValue {
        var message: [JSONKey: JSONValue] = [
            "type": "change",
            "version": .uint(record.version),
            "identifier": .string(record.action.identifier),
            "time": .string(isoTime(record.time)),
        ]
        var typed = false
        switch ChangeRecord.payloadValue(of: record.action) {
        case .success(let payload?):
            message["payload"] = payload
            typed = !(record.action is JSONAction) && !(record.action is any JournalRecordable)
        default:
            message["payload"] = .null
        }
        message["typed"] = .bool(typed)
        if includingPatch, let patch = record.patch, let operations = try? JSONValue(encoding: patch) {
            message["patch"] = operations
        } else {
            message["patch"] = .null
        }
        message["source"] = record.sourceLocation.map { .string($0.description) } ?? .null
        message["batch"] = record.batch.map { .array([.uint($0.lowerBound), .uint($0.upperBound)]) } ?? .null
        return .object(message)
    }

    /// `2026-11-25T03:00:00.123Z`.
    static func isoTime(_ time: timespec) -> String {
        var seconds = time_t(time.tv_sec)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let milliseconds = Int(time.tv_nsec) / 1_000_000
        let ms = milliseconds < 10 ? "00\(milliseconds)" : milliseconds < 100 ? "0\(milliseconds)" : "\(milliseconds)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(ms)Z"
    }

    // MARK: Requests

    /// Answers each request. A failure of the inbound stream (a text message that is not UTF-8, a
    /// message over ``maximumMessageSize``, frames that make no message) is thrown: the WebSocket
    /// layer closes the connection with its code, and the request is not answered. A failure to
    /// send ends the session quietly (the connection is gone).
    private func answer(_ inbound: WebSocketInboundStream) async throws {
        var messages = inbound.messages(maxSize: Self.maximumMessageSize).makeAsyncIterator()
        while let message = try await messages.next() {
            let reply: JSONValue
            if case .text(let text) = message {
                reply = self.reply(to: text)
            } else {
                reply = Self.error(nil, "messages are JSON text, not binary")
            }
            do {
                try await send(reply)
            } catch {
                return
            }
        }
    }

    /// The answer to one request: its result, or an error naming what was wrong. Nothing changes
    /// on a bad request.
    func reply(to text: String) -> JSONValue {
        let request: JSONValue
        do {
            request = try JSONCDecoder().decode(JSONValue.self, fromJSONString: text)
        } catch {
            return Self.error(nil, "a message is one JSON object: \(error.message)")
        }
        guard case .object(let fields) = request else {
            return Self.error(nil, "a message is one JSON object with a \"type\"")
        }
        let id = fields["id"] ?? .null
        guard case .string(let type)? = fields["type"] else {
            return Self.error(id, "a message needs a string \"type\"")
        }
        do throws(StoreError) {
            switch type {
            case "state":
                let version = try Self.optionalVersion(fields["version"], "version")
                let pointer = try Self.string(fields["pointer"] ?? "", "pointer")
                let depth = try Self.integer(fields["depth"] ?? 1, "depth", in: 0...Self.maximumDepth)
                let (at, state) = try inspected.state(at: version)
                let value = try state.value(atPointer: pointer)
                return [
                    "type": "state", "id": id, "version": .uint(at), "pointer": .string(pointer),
                    "node": Self.node(value, depth: depth),
                ]
            case "diff":
                let from = try Self.version(fields["from"], "from")
                let to = try Self.version(fields["to"], "to")
                let patch = try inspected.diff(from: from, to: to)
                return [
                    "type": "diff", "id": id, "from": .uint(from), "to": .uint(to),
                    "patch": try JSONValue(encoding: patch),
                ]
            case "restore":
                let version = try Self.version(fields["version"], "version")
                return ["type": "restored", "id": id, "version": .uint(try inspected.restore(version: version))]
            case "dispatch":
                let identifier = try Self.string(fields["identifier"], "identifier")
                var payload = fields["payload"]
                if case .null? = payload { payload = nil }
                let version = try inspected.dispatch(identifier: identifier, payload: payload)
                return ["type": "dispatched", "id": id, "version": .uint(version)]
            default:
                return Self.error(id, "unknown message type \"\(type)\" (state, diff, restore, dispatch)")
            }
        } catch {
            return Self.error(id, error.message)
        }
    }

    static func error(_ id: JSONValue?, _ message: String) -> JSONValue {
        ["type": "error", "id": id ?? .null, "message": .string(message)]
    }

    private static func string(_ value: JSONValue?, _ name: String) throws(StoreError) -> String {
        guard case .string(let string)? = value else {
            throw StoreError(.invalidArgument, "\"\(name)\" must be a string")
        }
        return string
    }

    private static func integer(_ value: JSONValue, _ name: String, in range: ClosedRange<Int>) throws(StoreError) -> Int {
        switch value {
        case .int(let int) where range.contains(Int(int)): return Int(int)
        case .uint(let uint) where uint <= UInt64(range.upperBound): return Int(uint)
        default: throw StoreError(.invalidArgument, "\"\(name)\" must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
    }

    private static func version(_ value: JSONValue?, _ name: String) throws(StoreError) -> UInt64 {
        switch value {
        case .int(let int)? where int >= 0: return UInt64(int)
        case .uint(let uint)?: return uint
        default: throw StoreError(.invalidArgument, "\"\(name)\" must be a version (a whole number, 0 or more)")
        }
    }

    private static func optionalVersion(_ value: JSONValue?, _ name: String) throws(StoreError) -> UInt64? {
        if value == nil || value == .null { return nil }
        return try version(value, name)
    }

    /// The `node` of a `state` answer: `value`'s kind, its size, and its members or elements down
    /// to `depth` more levels (the first ``maximumListed`` of each container).
    static func node(_ value: JSONValue, depth: Int) -> JSONValue {
        switch value {
        case .null: return ["kind": "null"]
        case .bool(let bool): return ["kind": "bool", "value": .bool(bool)]
        case .int, .uint, .double: return ["kind": "number", "value": value]
        case .string(let string): return ["kind": "string", "value": .string(string)]
        case .array(let elements):
            var node: [JSONKey: JSONValue] = ["kind": "array", "count": .int(Int64(elements.count))]
            if depth > 0 {
                node["elements"] = .array(elements.prefix(maximumListed).map { Self.node($0, depth: depth - 1) })
                if elements.count > maximumListed { node["more"] = true }
            }
            return .object(node)
        case .object(let members):
            var node: [JSONKey: JSONValue] = ["kind": "object", "count": .int(Int64(members.count))]
            if depth > 0 {
                var listed: [JSONKey: JSONValue] = [:]
                for key in members.keys.sorted().prefix(maximumListed) {
                    listed[key] = Self.node(members[key]!, depth: depth - 1)
                }
                node["members"] = .object(listed)
                if members.count > maximumListed { node["more"] = true }
            }
            return .object(node)
        }
    }
}
