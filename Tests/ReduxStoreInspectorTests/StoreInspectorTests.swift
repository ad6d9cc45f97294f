import Foundation
import HTTPTypes
import HummingbirdWSClient
import Logging
import ReduxStore
import ReduxStoreInspector
import ReduxStoreTestSupport
import Testing

private struct AddTodo: Action, Codable { var title: String; var identifier: String { "todo.add" } }
private struct Todo: Codable, Equatable { var title: String; var done = false }
private struct Todos: Codable, Equatable { var todos: [Todo] = [] }
private struct ToggleTodo: Action, Codable { var index: Int; var identifier: String { "todo.toggle" } }
private let reducer: Reducer<Todos> = { state, action in
    if let add = action as? AddTodo { state.todos.append(Todo(title: add.title)) }
    if let toggle = action as? ToggleTodo, state.todos.indices.contains(toggle.index) {
        state.todos[toggle.index].done.toggle()
    }
}

/// A connection the server refused (it is not listening).
private struct ConnectionRefused: Error {}

/// One HTTP/1.1 request over a plain socket: the status code and the body. On a thread of its
/// own: a blocking read on a thread of the cooperative pool, or of Dispatch's global queues
/// (which back that pool on Linux), starves the server's own tasks (2 threads on 2 cores).
private func http(
    _ port: Int, _ target: String, host: String? = nil, headers: [String] = [], headOnly: Bool = false
) async throws -> (status: Int, body: String) {
    try await withCheckedThrowingContinuation { continuation in
        Thread {
            continuation.resume(with: Result {
                try blockingHTTP(port, target, host: host, headers: headers, headOnly: headOnly)
            })
        }.start()
    }
}

private func blockingHTTP(
    _ port: Int, _ target: String, host: String?, headers: [String], headOnly: Bool
) throws -> (status: Int, body: String) {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    precondition(socket >= 0)
    defer { close(socket) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { throw ConnectionRefused() }
    var request = "GET \(target) HTTP/1.1\r\nHost: \(host ?? "127.0.0.1:\(port)")\r\nConnection: close\r\n"
    for header in headers { request += header + "\r\n" }
    request += "\r\n"
    _ = request.withCString { send(socket, $0, strlen($0), 0) }
    var response: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = recv(socket, &buffer, buffer.count, 0)
        if count <= 0 { break }
        response += buffer[0..<count]
        // An upgraded connection stays open: its head is all there is to read (the first frame
        // may come in the same read).
        if headOnly, String(decoding: response, as: UTF8.self).contains("\r\n\r\n") { break }
    }
    let text = String(decoding: response, as: UTF8.self)
    let status = Int(text.split(separator: " ").dropFirst().first ?? "") ?? -1
    let body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
    return (status, body)
}

/// The messages a page receives, as JSON objects, and a way to send.
private final class Page: @unchecked Sendable {
    private let lock = NSLock()
    private var messages: [[String: Any]] = []
    private var isPaused = false

    /// Whether the page reads nothing (its socket's buffers fill, as a page that froze does).
    var paused: Bool {
        get { lock.lock(); defer { lock.unlock() }; return isPaused }
        set { lock.lock(); isPaused = newValue; lock.unlock() }
    }

    func add(_ text: String) {
        let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? ["type": "unparsed"]
        lock.lock(); messages.append(object); lock.unlock()
    }
    var all: [[String: Any]] { lock.lock(); defer { lock.unlock() }; return messages }
    /// The messages, each `changes` message's changes in its place.
    var flattened: [[String: Any]] {
        all.flatMap { message -> [[String: Any]] in
            message["type"] as? String == "changes" ? message["changes"] as? [[String: Any]] ?? [] : [message]
        }
    }

    /// Waits up to 10 s for a message satisfying `match`.
    func wait(_ match: ([String: Any]) -> Bool) async -> [String: Any]? {
        for _ in 0..<1_000 {
            if let found = flattened.first(where: match) { return found }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }
}

/// Connects to `url`'s WebSocket as a page would, runs `script`, then closes.
private func connectPage(
    _ inspector: StoreInspector, origin: String? = nil, as page: Page = Page(),
    _ script: @escaping @Sendable (Page, WebSocketOutboundWriter) async throws -> Void
) async throws -> Page {
    // A change's patch or a state answer can be larger than the client's default frame (16 KiB).
    var configuration = WebSocketClientConfiguration(maxFrameSize: 1 << 24)
    if let origin { configuration.additionalHeaders[.origin] = origin }
    let url = "ws://127.0.0.1:\(inspector.port)/ws?token=\(inspector.token)"
    try await WebSocketClient.connect(url: url, configuration: configuration, logger: Logger(label: "test")) {
        inbound, outbound, _ in
        let reader = Task {
            for try await message in inbound.messages(maxSize: 1 << 24) {
                while page.paused { try await Task.sleep(for: .milliseconds(10)) }
                if case .text(let text) = message { page.add(text) }
            }
        }
        try await script(page, outbound)
        try await outbound.close(.normalClosure, reason: nil)
        _ = try? await reader.value
    }
    return page
}

extension InspectorTests {
    @Suite("The live inspector: serving, the token, the protocol")
    struct StoreInspectorTests {
        @Test("the page needs the token and the right Host; the URL carries the token")
        func page() async throws {
            let store = Store(reducers: [reducer], state: Todos())
            let inspector = try await StoreInspector(store)
            defer { Task { await inspector.stop() } }
            #expect(inspector.url == "http://127.0.0.1:\(inspector.port)/?token=\(inspector.token)")
            #expect(inspector.token.count == 32)
            let ok = try await http(inspector.port, "/?token=\(inspector.token)")
            #expect(ok.status == 200)
            #expect(ok.body.contains("<html") || ok.body.contains("<!doctype") || ok.body.contains("<!DOCTYPE"))
            #expect(try await http(inspector.port, "/").status == 401)
            #expect(try await http(inspector.port, "/?token=0123").status == 401)
            #expect(try await http(inspector.port, "/?token=\(String(inspector.token.reversed()))").status == 401)
            #expect(try await http(inspector.port, "/", headers: ["Authorization: Bearer \(inspector.token)"]).status == 200)
            #expect(try await http(inspector.port, "/", headers: ["Authorization: bearer \(inspector.token)"]).status == 200)
            #expect(try await http(inspector.port, "/", headers: ["Authorization: Basic \(inspector.token)"]).status == 401)
            // DNS rebinding: another name for this address.
            #expect(try await http(inspector.port, "/?token=\(inspector.token)", host: "evil.example:\(inspector.port)").status == 403)
            #expect(try await http(inspector.port, "/?token=\(inspector.token)", host: "localhost:\(inspector.port)").status == 200)
            #expect(try await http(inspector.port, "/?token=\(inspector.token)", host: "10.1.2.3:\(inspector.port)").status == 403)
            // The WebSocket path without an upgrade, or from another origin.
            #expect(try await http(inspector.port, "/ws?token=\(inspector.token)").status == 400)
            #expect(try await http(inspector.port, "/ws").status == 401)
            let upgradeHeaders = [
                "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
                "Sec-WebSocket-Version: 13",
            ]
            for origin in ["http://evil.example", "null", "https://127.0.0.1:\(inspector.port)", "http://127.0.0.1:1"] {
                let refused = try await http(inspector.port, "/ws?token=\(inspector.token)", headers: ["Origin: \(origin)"] + upgradeHeaders)
                #expect(refused.status == 403, "Origin \(origin): \(refused.status) \(refused.body)")
            }
            let accepted = try await http(
                inspector.port, "/ws?token=\(inspector.token)", headers: ["Origin: http://127.0.0.1:\(inspector.port)"] + upgradeHeaders,
                headOnly: true)
            #expect(accepted.status == 101)
        }

        @Test("served on every address: any IP literal with the port is a Host, never another DNS name")
        func everyAddress() async throws {
            let store = Store(reducers: [reducer], state: Todos())
            var options = InspectorOptions()
            options.host = "0.0.0.0"
            let inspector = try await StoreInspector(store, options: options)
            defer { Task { await inspector.stop() } }
            let page = "/?token=\(inspector.token)"
            for host in ["127.0.0.1", "10.1.2.3", "[fe80::1]", "localhost", "0.0.0.0"] {
                #expect(try await http(inspector.port, page, host: "\(host):\(inspector.port)").status == 200, "\(host)")
            }
            for host in ["evil.example:\(inspector.port)", "10.1.2.3:1", "10.1.2.3", "10.1.2:\(inspector.port)", "[nope]:\(inspector.port)"] {
                #expect(try await http(inspector.port, page, host: host).status == 403, "\(host)")
            }
            #expect(try await http(inspector.port, "/", host: "10.1.2.3:\(inspector.port)").status == 401)
        }

        @Test("a page hears hello with the log, then each change with its patch and source; asks for state and diffs")
        func protocolExchange() async throws {
            let store = Store(reducers: [reducer], state: Todos())
            let inspector = try await StoreInspector(store)
            defer { Task { await inspector.stop() } }
            #expect(store.historyVersions.isEmpty, "the inspector turns the history on for restore only")
            store.keepHistory(10)
            for title in ["a", "b", "c"] { store.dispatchAction(AddTodo(title: title)) }
            let line = #line + 8
            let page = try await connectPage(inspector, origin: "http://127.0.0.1:\(inspector.port)") { page, outbound in
                let hello = await page.wait { $0["type"] as? String == "hello" }
                #expect(hello?["version"] as? Int == 3)
                #expect((hello?["log"] as? [[String: Any]])?.map { $0["version"] as? Int } == [1, 2, 3])
                #expect(hello?["allowsRestore"] as? Bool == false)
                #expect(hello?["store"] as? String == "Todos")
                #expect((hello?["history"] as? [Int])?.last == 3)
                store.dispatchAction(AddTodo(title: "d"))
                let change = await page.wait { $0["type"] as? String == "change" }
                #expect(change?["version"] as? Int == 4)
                #expect(change?["source"] as? String == "StoreInspectorTests.swift:\(line)")
                #expect((change?["payload"] as? [String: Any])?["title"] as? String == "d")
                #expect(change?["typed"] as? Bool == true)
                let patch = change?["patch"] as? [[String: Any]]
                #expect(patch?.first?["path"] as? String == "/todos/3")
                try await outbound.write(.text(#"{"type":"state","id":1,"version":null,"pointer":"","depth":1}"#))
                let state = await page.wait { $0["id"] as? Int == 1 }
                let node = state?["node"] as? [String: Any]
                #expect(node?["kind"] as? String == "object")
                let todos = (node?["members"] as? [String: Any])?["todos"] as? [String: Any]
                #expect(todos?["kind"] as? String == "array" && todos?["count"] as? Int == 4)
                #expect(todos?["elements"] == nil, "folded past the depth asked for")
                try await outbound.write(.text(#"{"type":"state","id":2,"version":2,"pointer":"/todos/1/title","depth":0}"#))
                let old = await page.wait { $0["id"] as? Int == 2 }
                #expect((old?["node"] as? [String: Any])?["value"] as? String == "b")
                try await outbound.write(.text(#"{"type":"diff","id":3,"from":1,"to":3}"#))
                let diff = await page.wait { $0["id"] as? Int == 3 }
                #expect((diff?["patch"] as? [[String: Any]])?.count == 2)
                // Bad requests: an error naming the problem, nothing changed.
                try await outbound.write(.text(#"{"type":"restore","id":4,"version":1}"#))
                try await outbound.write(.text(#"{"type":"dispatch","id":5,"identifier":"todo.add","payload":{"title":"x"}}"#))
                try await outbound.write(.text(#"{"type":"nope","id":6}"#))
                try await outbound.write(.text("not json"))
                try await outbound.write(.text(#"{"type":"state","id":7,"pointer":"/nowhere"}"#))
                try await outbound.write(.text(#"{"type":"state","id":8,"version":99}"#))
                let errors = await page.wait { $0["id"] as? Int == 8 }
                #expect(errors?["type"] as? String == "error")
            }
            let errors = page.all.filter { $0["type"] as? String == "error" }
            let words = errors.compactMap { $0["message"] as? String }
            #expect(words.contains { $0.contains("restore is not allowed") })
            #expect(words.contains { $0.contains("dispatch is not allowed") })
            #expect(words.contains { $0.contains("unknown message type \"nope\"") })
            #expect(words.contains { $0.contains("one JSON object") })
            #expect(words.contains { $0.contains("nowhere") })
            #expect(words.contains { $0.contains("version 99 is not kept") })
            #expect(store.version == 4, "no bad request changed the store")
        }

        @Test("restore and dispatch, when the program allows them; dispatch only of registered identifiers")
        func restoreAndDispatch() async throws {
            let store = Store(reducers: [reducer], state: Todos())
            var options = InspectorOptions()
            options.allowsRestore = true
            options.allowsDispatch = true
            options.actions.register(AddTodo.self, for: "todo.add")
            let inspector = try await StoreInspector(store, options: options)
            defer { Task { await inspector.stop() } }
            for title in ["a", "b"] { store.dispatchAction(AddTodo(title: title)) }
            _ = try await connectPage(inspector) { page, outbound in
                let hello = await page.wait { $0["type"] as? String == "hello" }
                #expect(hello?["actions"] as? [String] == ["todo.add"])
                try await outbound.write(.text(#"{"type":"restore","id":1,"version":1}"#))
                let restored = await page.wait { $0["id"] as? Int == 1 }
                #expect(restored?["type"] as? String == "restored")
                #expect(restored?["version"] as? Int == 3)
                try await outbound.write(.text(#"{"type":"dispatch","id":2,"identifier":"todo.add","payload":{"title":"z"}}"#))
                let dispatched = await page.wait { $0["id"] as? Int == 2 }
                #expect(dispatched?["version"] as? Int == 4)
                try await outbound.write(.text(#"{"type":"dispatch","id":3,"identifier":"other","payload":null}"#))
                try await outbound.write(.text(#"{"type":"dispatch","id":4,"identifier":"todo.add","payload":{"title":7}}"#))
                let bad = await page.wait { $0["id"] as? Int == 4 }
                #expect((bad?["message"] as? String)?.contains("payload.title") == true)
            }
            #expect(store.currentState().todos.map(\.title) == ["a", "z"])
            #expect(store.version == 4)
        }

        @Test("a routed store: the page hears each change with its patch; restore and a page's dispatch are routed by type")
        func routedStore() async throws {
            var reducers = Reducers<Todos>()
            reducers.on(AddTodo.self) { state, add in state.todos.append(Todo(title: add.title)) }
            reducers.on(ToggleTodo.self) { state, toggle in
                if state.todos.indices.contains(toggle.index) { state.todos[toggle.index].done.toggle() }
            }
            let store = Store(reducers: reducers, state: Todos())
            var options = InspectorOptions()
            options.allowsRestore = true
            options.allowsDispatch = true
            options.actions.register(AddTodo.self, for: "todo.add")
            let inspector = try await StoreInspector(store, options: options)
            defer { Task { await inspector.stop() } }
            store.dispatchAction(AddTodo(title: "a"))
            _ = try await connectPage(inspector) { page, outbound in
                let hello = await page.wait { $0["type"] as? String == "hello" }
                #expect(hello?["version"] as? Int == 1)
                store.dispatchAction(ToggleTodo(index: 0))
                let change = await page.wait { $0["type"] as? String == "change" && $0["version"] as? Int == 2 }
                let patch = change?["patch"] as? [[String: Any]]
                #expect(patch?.first?["path"] as? String == "/todos/0/done")
                // The page's dispatch arrives as JSON and is decoded into AddTodo: its reducer runs.
                try await outbound.write(.text(#"{"type":"dispatch","id":1,"identifier":"todo.add","payload":{"title":"b"}}"#))
                let dispatched = await page.wait { $0["id"] as? Int == 1 }
                #expect(dispatched?["version"] as? Int == 3)
                try await outbound.write(.text(#"{"type":"restore","id":2,"version":1}"#))
                let restored = await page.wait { $0["id"] as? Int == 2 }
                #expect(restored?["type"] as? String == "restored")
            }
            #expect(store.currentState() == Todos(todos: [Todo(title: "a")]), "restored to version 1's state")
            store.dispatchAction(ToggleTodo(index: 0))
            #expect(store.currentState().todos.first?.done == true, "routing goes on after the restore")
        }

        @Test("at most maximumClients pages; a stopped inspector refuses connections; stop is idempotent")
        func limits() async throws {
            let store = Store(reducers: [reducer], state: Todos())
            var options = InspectorOptions()
            options.maximumClients = 1
            let inspector = try await StoreInspector(store, options: options)
            let second = Flag()
            _ = try await connectPage(inspector) { page, _ in
                _ = await page.wait { $0["type"] as? String == "hello" }
                let status = try await http(inspector.port, "/ws?token=\(inspector.token)").status
                #expect(status == 429)
                second.raise()
            }
            #expect(second.isRaised)
            let port = inspector.port
            await inspector.stop()
            await inspector.stop()
            await #expect(throws: (any Error).self) { _ = try await http(port, "/") }
            // Bad options and a port in use are errors, not a crash.
            var bad = InspectorOptions()
            bad.port = 70_000
            await #expect(throws: StoreError.self) { _ = try await StoreInspector(store, options: bad) }
            let first = try await StoreInspector(store)
            var taken = InspectorOptions()
            taken.port = first.port
            await #expect(throws: StoreError.self) { _ = try await StoreInspector(store, options: taken) }
            await first.stop()
        }

        @Test("changes sent together: every version once, in order; the shared patches lead from the hello's state to the newest")
        func burstWithPage() async throws {
            let store = Store(reducers: [reducer], state: Todos())
            // A log that holds the whole burst, however the sender's reads fall: no gap.
            var options = InspectorOptions()
            options.keptActions = 4_000
            let inspector = try await StoreInspector(store, options: options)
            defer { Task { await inspector.stop() } }
            store.dispatchAction(AddTodo(title: "before"))
            let page = try await connectPage(inspector) { page, outbound in
                _ = await page.wait { $0["type"] as? String == "hello" }
                for index in 0..<3_000 {
                    if index % 7 == 3 { store.dispatchAction(ToggleTodo(index: index / 2)) }
                    else { store.dispatchAction(AddTodo(title: "t\(index)")) }
                }
                #expect(await page.wait { $0["type"] as? String == "change" && $0["version"] as? Int == 3_001 } != nil)
            }
            let changes = page.flattened.filter { $0["type"] as? String == "change" }
            #expect(changes.map { $0["version"] as? Int } == Array(2...3_001).map { Optional($0) })
            #expect(!page.all.contains { $0["type"] as? String == "gap" })
            // The patches, applied in order from the state at version 1, give the state at 3,001;
            // each covers the versions after its `patchFrom` (or its own version alone).
            var document = try JSONValue(encoding: Todos(todos: [Todo(title: "before")]))
            var covered: UInt64 = 1
            for change in changes {
                guard let operations = change["patch"] as? [[String: Any]] else { continue }
                let version = UInt64(change["version"] as! Int)
                let from = (change["patchFrom"] as? Int).map(UInt64.init) ?? version - 1
                #expect(from == covered, "the patch of \(version) starts where the last ended")
                let data = try JSONSerialization.data(withJSONObject: operations)
                let patch = try JSONDecoder().decode([JSONPatch.Operation].self, from: data)
                document = try JSONPatch.apply(patch, to: document)
                covered = version
            }
            #expect(covered == 3_001)
            #expect(document == (try JSONValue(encoding: store.currentState())))
        }

        @Test("two pages waiting for the next change both hear it, each time")
        func twoPagesWaiting() async throws {
            let store = Store(reducers: [reducer], state: Todos())
            let inspector = try await StoreInspector(store)
            defer { Task { await inspector.stop() } }
            let second = Page()
            let first = try await connectPage(inspector) { first, _ in
                _ = try await connectPage(inspector, as: second) { _, _ in
                    _ = await first.wait { $0["type"] as? String == "hello" }
                    _ = await second.wait { $0["type"] as? String == "hello" }
                    for round in 1...3 {
                        // Both pages' senders have found nothing new and wait.
                        try await Task.sleep(for: .milliseconds(50))
                        store.dispatchAction(AddTodo(title: "t\(round)"))
                        for page in [first, second] {
                            let heard = await page.wait { $0["type"] as? String == "change" && $0["version"] as? Int == round }
                            #expect(heard != nil, "a page did not hear version \(round)")
                        }
                    }
                }
            }
            #expect(first.all.first?["type"] as? String == "hello")
        }

        @Test("keptActions 0: nothing is recorded while no page is connected; a page sees what is applied while it is open")
        func recordsOnlyWithAPage() async throws {
            let store = Store(reducers: [reducer], state: Todos())
            var options = InspectorOptions()
            options.keptActions = 0
            let inspector = try await StoreInspector(store, options: options)
            defer { Task { await inspector.stop() } }
            #expect(store.readActionLog(after: 0) == nil)
            store.dispatchAction(AddTodo(title: "unseen"))
            let page = try await connectPage(inspector) { page, _ in
                let hello = await page.wait { $0["type"] as? String == "hello" }
                #expect(hello?["version"] as? Int == 1)
                #expect((hello?["log"] as? [Any])?.isEmpty == true)
                #expect(store.readActionLog(after: 0) != nil)
                store.dispatchAction(AddTodo(title: "seen"))
                let change = await page.wait { $0["type"] as? String == "change" }
                #expect(change?["version"] as? Int == 2)
                #expect((change?["patch"] as? [[String: Any]])?.first?["path"] as? String == "/todos/1")
            }
            #expect(page.all.first?["type"] as? String == "hello")
            var stopped = false
            for _ in 0..<500 where !stopped {
                stopped = store.readActionLog(after: 0) == nil
                if !stopped { try await Task.sleep(for: .milliseconds(10)) }
            }
            #expect(stopped, "the last page gone, the log stops")
        }

        @Test("two inspectors of one store: stopping one leaves the other's log and pages as they were")
        func twoInspectors() async throws {
            let store = Store(reducers: [reducer], state: Todos())
            let first = try await StoreInspector(store)
            let second = try await StoreInspector(store)
            defer { Task { await second.stop() } }
            store.dispatchAction(AddTodo(title: "a"))
            await first.stop()
            store.dispatchAction(AddTodo(title: "b"))
            _ = try await connectPage(second) { page, _ in
                let hello = await page.wait { $0["type"] as? String == "hello" }
                #expect((hello?["log"] as? [[String: Any]])?.map { $0["version"] as? Int } == [1, 2])
                store.dispatchAction(AddTodo(title: "c"))
                let change = await page.wait { $0["type"] as? String == "change" && $0["version"] as? Int == 3 }
                #expect((change?["patch"] as? [[String: Any]])?.first?["path"] as? String == "/todos/2")
            }
        }

        @Test("a page that falls behind is told of the gap; dispatch never waits for it")
        func slowPage() async throws {
            // Each action replaces the one todo: the changes carry 4 KB payloads, and the patch
            // that follows a gap stays small.
            let replace: Reducer<Todos> = { state, action in
                if let add = action as? AddTodo { state.todos = [Todo(title: add.title)] }
            }
            let store = Store(reducers: [replace], state: Todos())
            var options = InspectorOptions()
            options.clientBuffer = 4
            options.keptVersions = 0
            let inspector = try await StoreInspector(store, options: options)
            defer { Task { await inspector.stop() } }
            let count = 5_000
            let title = String(repeating: "x", count: 4_000)
            _ = try await connectPage(inspector) { page, _ in
                _ = await page.wait { $0["type"] as? String == "hello" }
                // The page reads nothing while 20 MB of changes are made: more than the sockets'
                // buffers hold, so the changes waiting for it (4 at most) overflow.
                page.paused = true
                for index in 0..<count { store.dispatchAction(AddTodo(title: "\(index) \(title)")) }
                // Every dispatch returned while the page read nothing: none waited for it.
                #expect(store.version == UInt64(count))
                page.paused = false
                let last = await page.wait { $0["type"] as? String == "change" && $0["version"] as? Int == count }
                #expect(last != nil)
                // Each version reached the page once, in order: in a change, or in a gap's range.
                var next = 1
                var gaps = 0
                for message in page.flattened {
                    switch message["type"] as? String {
                    case "change":
                        #expect(message["version"] as? Int == next, "a change out of order")
                        next = (message["version"] as? Int ?? next) + 1
                    case "gap":
                        #expect(message["from"] as? Int == next, "a gap that does not start where the changes stopped")
                        next = (message["to"] as? Int ?? next) + 1
                        gaps += 1
                    default:
                        break
                    }
                }
                #expect(next == count + 1)
                #expect(gaps > 0, "the page was not told of the changes it missed")
            }
        }

        @Test("the README's block, as written there, serves; and it is in this file line for line")
        func readmeBlock() async throws {
            let store = Store(reducers: [reducer], state: Todos())
            var printed = ""
            func print(_ items: Any...) { printed = items.map { "\($0)" }.joined(separator: " ") }
            let inspector = try await StoreInspector(store)   // loopback, a free port, a random token
            print("open", inspector.url)                      // http://127.0.0.1:PORT/?token=…
            #expect(printed == "open http://127.0.0.1:\(inspector.port)/?token=\(inspector.token)")
            await inspector.stop()

            let missing = try #require(readmeLinesMissing(fromTest: #filePath, blockImporting: "ReduxStoreInspector"))
            #expect(missing.isEmpty, "the README's lines not in \(#fileID): \(missing)")
        }
    }
}
