import Foundation
import ReduxStore
import ReduxStoreInspector
import Testing

// Clients that misbehave, on raw sockets: idle, half a request, malformed requests, pages that
// never read, a flood under a lowered descriptor limit. Blocking socket calls run on threads of
// their own, never on the cooperative pool the server's tasks need.

private struct Count: Codable, Equatable { var value = 0; var padding = "" }
private struct Bump: Action, Codable { var text: String; var identifier: String { "bump" } }
private let bump: Reducer<Count> = { state, action in
    if let bump = action as? Bump {
        state.value += 1
        state.padding = bump.text
    }
}

/// Runs `body` on a thread of its own.
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

struct SocketFailure: Error { let what: String }

/// A client's socket to 127.0.0.1:`port`, blocking, closed by `close()` only.
final class RawSocket: @unchecked Sendable {
    // @unchecked: `fd` is set once; each socket is used by one thread at a time.
    let fd: Int32

    init(_ port: Int, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SocketFailure(what: "socket: errno \(errno)") }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            throw SocketFailure(what: "connect: errno \(errno)")
        }
    }

    func close() { Glibc.close(fd) }

    func send(_ text: String) { send(Array(text.utf8)) }

    /// Sends what the kernel takes without blocking for long (a peer that reads nothing fills it):
    /// whether every byte was taken (false after a reset, or when the peer stopped reading).
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    /// What arrives until the peer closes (EOF or reset) or `seconds` pass; `closed` says which.
    func readUntilClosed(within seconds: Double) -> (bytes: [UInt8], closed: Bool) {
        let deadline = Date().addingTimeInterval(seconds)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return (received, false) }
            var timeout = timeval(tv_sec: Int(left), tv_usec: Int((left - left.rounded(.down)) * 1_000_000))
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let count = recv(fd, &buffer, buffer.count, 0)
            if count > 0 {
                received += buffer[0..<count]
            } else if count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                return (received, true)
            }
        }
    }

    /// Reads until an HTTP head has arrived (or `seconds` pass); returns it, and what followed it.
    func readHead(within seconds: Double) -> (head: String, rest: [UInt8]) {
        let deadline = Date().addingTimeInterval(seconds)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while deadline.timeIntervalSinceNow > 0 {
            if let end = received.firstRange(of: Array("\r\n\r\n".utf8)) {
                return (String(decoding: received[..<end.upperBound], as: UTF8.self), Array(received[end.upperBound...]))
            }
            var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let count = recv(fd, &buffer, buffer.count, 0)
            if count > 0 { received += buffer[0..<count] } else if count == 0 { break }
        }
        return (String(decoding: received, as: UTF8.self), [])
    }
}

func status(of answer: [UInt8]) -> Int {
    let text = String(decoding: answer.prefix(64), as: UTF8.self)
    return Int(text.split(separator: " ").dropFirst().first ?? "") ?? -1
}

/// A WebSocket client's opening request for the inspector's page.
func upgradeRequest(_ inspector: StoreInspector) -> String {
    "GET /ws?token=\(inspector.token) HTTP/1.1\r\nHost: 127.0.0.1:\(inspector.port)\r\nUpgrade: websocket\r\n"
        + "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
}

/// The close frame (code and reason) among the server's frames in `bytes`, if any.
func closeFrame(in bytes: [UInt8]) -> (code: Int, reason: String)? {
    var index = 0
    while index + 2 <= bytes.count {
        let opcode = bytes[index] & 0x0F
        var length = Int(bytes[index + 1] & 0x7F)
        var start = index + 2
        if length == 126 {
            guard start + 2 <= bytes.count else { return nil }
            length = Int(bytes[start]) << 8 | Int(bytes[start + 1])
            start += 2
        } else if length == 127 {
            guard start + 8 <= bytes.count else { return nil }
            length = bytes[start..<start + 8].reduce(0) { $0 << 8 | Int($1) }
            start += 8
        }
        guard start + length <= bytes.count else { return nil }
        if opcode == 0x8, length >= 2 {
            let code = Int(bytes[start]) << 8 | Int(bytes[start + 1])
            return (code, String(decoding: bytes[start + 2..<start + length], as: UTF8.self))
        }
        index = start + length
    }
    return nil
}

/// The entries of a directory of /proc/self.
private func entries(_ path: String) -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: path).count) ?? -1
}

/// Waits up to `seconds` for `condition`.
func eventually(within seconds: Double, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return condition()
}

/// Whether any socket of this process has `port` at either end (per /proc/net/tcp).
private func socketsOnPort(_ port: Int) -> Int {
    var inodes: Set<String> = []
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 9 else { continue }
            let ports = [fields[1], fields[2]].compactMap { $0.split(separator: ":").last.flatMap { Int($0, radix: 16) } }
            if ports.contains(port) { inodes.insert(String(fields[9])) }
        }
    }
    let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return descriptors.filter { name in
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)"),
              target.hasPrefix("socket:[")
        else { return false }
        return inodes.contains(String(target.dropFirst(8).dropLast()))
    }.count
}

/// The inspector's suites, one test at a time: some count the process's descriptors and threads,
/// or lower its descriptor limit.
@Suite(.serialized) enum InspectorTests {}

extension InspectorTests {
    @Suite("Connections: every one bounded, shed when it misbehaves, closed by stop in bounded time")
    struct ConnectionBoundsTests {
        @Test("stop returns within its bound whatever the clients do, closes every connection, leaves no descriptor")
        func stopWithHostileClients() async throws {
            // The event loops' own descriptors and threads exist once per process: made first.
            let warmUp = try await StoreInspector(Store(reducers: [bump], state: Count()))
            await warmUp.stop()
            let descriptorsBefore = entries("/proc/self/fd")
            let threadsBefore = entries("/proc/self/task")

            let store = Store(reducers: [bump], state: Count())
            let inspector = try await StoreInspector(store)
            let port = inspector.port
            let token = inspector.token
            var sockets: [RawSocket] = []
            // Idle: connected, sending nothing.
            for _ in 0..<3 { sockets.append(try RawSocket(port)) }
            // Half a request head each.
            for _ in 0..<5 {
                let socket = try RawSocket(port)
                socket.send("GET /?token=\(token) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nX-Half: ")
                sockets.append(socket)
            }
            // A client that asks for the page again and again and reads none of it.
            let pipelined = try RawSocket(port, receiveBuffer: 4_096)
            let request = "GET /?token=\(token) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"
            try await onThread { pipelined.send(String(repeating: request, count: 200)) }
            sockets.append(pipelined)
            // A page that reads nothing once connected, while the store changes a lot.
            let deaf = try RawSocket(port, receiveBuffer: 4_096)
            deaf.send(upgradeRequest(inspector))
            let deafHead = try await onThread { deaf.readHead(within: 5).head }
            #expect(deafHead.hasPrefix("HTTP/1.1 101"))
            sockets.append(deaf)
            // A page that reads: it must hear why it is closed.
            let listening = try RawSocket(port)
            listening.send(upgradeRequest(inspector))
            let listeningHead = try await onThread { listening.readHead(within: 5) }
            #expect(listeningHead.head.hasPrefix("HTTP/1.1 101"))
            let padding = String(repeating: "x", count: 400)
            for index in 0..<20_000 { store.dispatchAction(Bump(text: "\(index) \(padding)")) }
            let listened = Task { try await onThread { listening.readUntilClosed(within: 15) } }
            try await Task.sleep(for: .milliseconds(300))
            #expect(inspector.openConnections == sockets.count + 1)

            let started = ContinuousClock.now
            await inspector.stop()
            let took = ContinuousClock.now - started
            #expect(took <= ConnectionBounds.stop, "stop took \(took)")

            let heard = try await listened.value
            #expect(heard.closed)
            let close = closeFrame(in: listeningHead.rest + heard.bytes)
            #expect(close?.code == 1001)
            #expect(close?.reason == "the inspector stopped")
            // Every client sees its connection closed.
            for socket in sockets {
                let end = try await onThread { socket.readUntilClosed(within: 5) }
                #expect(end.closed)
                socket.close()
            }
            listening.close()
            #expect(socketsOnPort(port) == 0)
            #expect(await eventually(within: 5) { entries("/proc/self/fd") <= descriptorsBefore },
                    "descriptors: \(entries("/proc/self/fd")) after, \(descriptorsBefore) before")
            #expect(await eventually(within: 5) { entries("/proc/self/task") <= threadsBefore },
                    "threads: \(entries("/proc/self/task")) after, \(threadsBefore) before")
            #expect(throws: SocketFailure.self) { _ = try RawSocket(port) }
        }

        @Test("a thousand connections sending nothing or half a head: stop is still within its bound")
        func stopWithAThousand() async throws {
            // Room for both ends of a thousand connections in this process.
            var saved = rlimit()
            #expect(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &saved) == 0)
            var raised = saved
            raised.rlim_cur = max(saved.rlim_cur, min(saved.rlim_max, rlim_t(entries("/proc/self/fd") + 4_096)))
            #expect(setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0)
            defer { _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &saved) }
            let warmUp = try await StoreInspector(Store(reducers: [bump], state: Count()))
            await warmUp.stop()
            let descriptorsBefore = entries("/proc/self/fd")

            let inspector = try await StoreInspector(Store(reducers: [bump], state: Count()))
            try #require(inspector.connectionLimit >= 1_000)
            let port = inspector.port
            let half = "GET /?token=\(inspector.token) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
            let sockets = try await onThread {
                try (0..<1_000).map { index in
                    let socket = try RawSocket(port)
                    if index.isMultiple(of: 2) { socket.send(half) }
                    return socket
                }
            }
            #expect(await eventually(within: 5) { inspector.openConnections == 1_000 })
            let started = ContinuousClock.now
            await inspector.stop()
            let took = ContinuousClock.now - started
            #expect(took <= ConnectionBounds.stop, "stop took \(took)")
            let closed = try await onThread { sockets.filter { $0.readUntilClosed(within: 5).closed }.count }
            #expect(closed == 1_000)
            for socket in sockets { socket.close() }
            #expect(socketsOnPort(port) == 0)
            #expect(await eventually(within: 5) { entries("/proc/self/fd") <= descriptorsBefore },
                    "descriptors: \(entries("/proc/self/fd")) after, \(descriptorsBefore) before")
        }

        @Test("a stop with nobody connected, or only idle sockets, is prompt")
        func stopIsPrompt() async throws {
            let store = Store(reducers: [bump], state: Count())
            let quiet = try await StoreInspector(store)
            var started = ContinuousClock.now
            await quiet.stop()
            #expect(ContinuousClock.now - started < .seconds(1))

            let inspector = try await StoreInspector(store)
            let idle = try (0..<10).map { _ in try RawSocket(inspector.port) }
            try await Task.sleep(for: .milliseconds(200))
            started = ContinuousClock.now
            await inspector.stop()
            #expect(ContinuousClock.now - started < .seconds(1))
            for socket in idle {
                #expect(try await onThread { socket.readUntilClosed(within: 2) }.closed)
                socket.close()
            }
        }

        @Test("malformed requests are answered at once (400, 414, 431, 413) and closed; refusals close too")
        func malformedRequests() async throws {
            let store = Store(reducers: [bump], state: Count())
            let inspector = try await StoreInspector(store)
            let port = inspector.port
            let host = "Host: 127.0.0.1:\(port)\r\n"
            let cases: [(String, [UInt8], Int)] = [
                ("an unknown version", Array("GET / HTTP/9.9\r\n\(host)\r\n".utf8), 400),
                ("garbage", Array("garbage\r\n\r\n".utf8), 400),
                ("a bare GET", Array("GET\r\n\r\n".utf8), 400),
                ("a NUL in the path", Array("GET /\u{0} HTTP/1.1\r\n\(host)\r\n".utf8), 400),
                ("a 1 MiB path", Array("GET /\(String(repeating: "a", count: 1 << 20)) HTTP/1.1\r\n\(host)\r\n".utf8), 414),
                ("a 1 MiB header", Array("GET / HTTP/1.1\r\n\(host)X-Big: \(String(repeating: "a", count: 1 << 20))\r\n\r\n".utf8), 431),
                ("a body", Array("GET /?token=\(inspector.token) HTTP/1.1\r\n\(host)Content-Length: 100\r\n\r\nab".utf8), 413),
                ("no token", Array("GET / HTTP/1.1\r\n\(host)\r\n".utf8), 401),
                ("another host", Array("GET /?token=\(inspector.token) HTTP/1.1\r\nHost: evil.example:\(port)\r\n\r\n".utf8), 403),
                ("another path", Array("GET /other?token=\(inspector.token) HTTP/1.1\r\n\(host)\r\n".utf8), 404),
            ]
            for (name, bytes, expected) in cases {
                let socket = try RawSocket(port)
                let started = ContinuousClock.now
                let answer = try await onThread { () -> ([UInt8], Bool) in
                    socket.send(bytes)
                    let end = socket.readUntilClosed(within: 5)
                    return (end.bytes, end.closed)
                }
                socket.close()
                #expect(status(of: answer.0) == expected, "\(name): \(String(decoding: answer.0.prefix(40), as: UTF8.self))")
                #expect(answer.1, "\(name): the connection stays open")
                #expect(ContinuousClock.now - started < .seconds(2), "\(name)")
            }
            await inspector.stop()
        }

        @Test("the bounds every inspector uses are those the protocol's article and the C header state")
        func standardBounds() {
            let standard = ConnectionBounds.standard
            #expect(InspectorOptions().connectionBounds.requestHead == standard.requestHead)
            #expect(standard.requestHead == .seconds(10) && standard.keepAliveIdle == .seconds(15))
            #expect(standard.stalledSend == .seconds(30) && standard.linger == .seconds(1))
        }

        @Test("an idle socket and half a head are closed after the head's bound; an idle keep-alive after its own")
        func idleConnectionsAreShed() async throws {
            let store = Store(reducers: [bump], state: Count())
            // The bounds shortened (the standard ones are checked against the documentation
            // below): two seconds for the head, four idle, told apart by when each closes.
            var options = InspectorOptions()
            options.connectionBounds.requestHead = .seconds(2)
            options.connectionBounds.keepAliveIdle = .seconds(4)
            let inspector = try await StoreInspector(store, options: options)
            let port = inspector.port
            let head = Double(options.connectionBounds.requestHead.nanoseconds) / 1e9
            let keepAlive = Double(options.connectionBounds.keepAliveIdle.nanoseconds) / 1e9
            let idle = try RawSocket(port)
            let half = try RawSocket(port)
            half.send("GET /?token=\(inspector.token) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n")
            let served = try RawSocket(port)
            served.send("GET /?token=\(inspector.token) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n")
            let started = Date()
            async let idleEnd = onThread { (idle.readUntilClosed(within: head + 5), Date().timeIntervalSince(started)) }
            async let halfEnd = onThread { (half.readUntilClosed(within: head + 5), Date().timeIntervalSince(started)) }
            async let servedEnd = onThread { (served.readUntilClosed(within: keepAlive + 5), Date().timeIntervalSince(started)) }
            let (idleResult, halfResult, servedResult) = try await (idleEnd, halfEnd, servedEnd)
            #expect(idleResult.0.closed && idleResult.0.bytes.isEmpty)
            #expect(idleResult.1 >= head - 0.5 && idleResult.1 <= head + 2, "idle closed after \(idleResult.1) s")
            #expect(halfResult.0.closed && status(of: halfResult.0.bytes) == 408)
            #expect(halfResult.1 >= head - 0.5 && halfResult.1 <= head + 2, "half a head closed after \(halfResult.1) s")
            #expect(servedResult.0.closed && status(of: servedResult.0.bytes) == 200)
            #expect(servedResult.1 >= keepAlive - 0.5 && servedResult.1 <= keepAlive + 2, "keep-alive closed after \(servedResult.1) s")
            for socket in [idle, half, served] { socket.close() }
            await inspector.stop()
        }

        @Test("a page that stops reading while the store changes is closed once its sending has stalled for the bound")
        func stalledPageIsShed() async throws {
            let store = Store(reducers: [bump], state: Count())
            // A log that keeps every change of the burst below: 8 MB for each page, more than
            // the sockets' buffers hold, so the page that does not read stalls its sending.
            var options = InspectorOptions()
            options.keptActions = 20_000
            options.connectionBounds.stalledSend = .seconds(4)  // shortened: 30 s as documented
            let inspector = try await StoreInspector(store, options: options)
            let stall = Double(options.connectionBounds.stalledSend.nanoseconds) / 1e9
            let reading = try RawSocket(inspector.port)
            reading.send(upgradeRequest(inspector))
            let readingHead = try await onThread { reading.readHead(within: 5) }
            #expect(readingHead.head.hasPrefix("HTTP/1.1 101"))
            let deaf = try RawSocket(inspector.port, receiveBuffer: 4_096)
            deaf.send(upgradeRequest(inspector))
            #expect(try await onThread { deaf.readHead(within: 5).head }.hasPrefix("HTTP/1.1 101"))
            let padding = String(repeating: "x", count: 400)
            for index in 0..<20_000 { store.dispatchAction(Bump(text: "\(index) \(padding)")) }
            let stalled = Date()
            // The reading page takes everything and stays; the deaf one is closed.
            let read = Task { try await onThread { reading.readUntilClosed(within: stall + 8) } }
            #expect(await eventually(within: stall + 6) { inspector.openConnections == 1 })
            let after = Date().timeIntervalSince(stalled)
            #expect(after >= stall - 1 && after <= stall + 6, "closed after \(after) s")
            await inspector.stop()
            let heard = try await read.value
            #expect(closeFrame(in: readingHead.rest + heard.bytes)?.code == 1001)
            #expect(try await onThread { deaf.readUntilClosed(within: 10) }.closed)
            reading.close()
            deaf.close()
        }

        @Test("under a lowered descriptor limit, a flood of half-open connections never keeps the page from being served")
        func floodUnderLowDescriptorLimit() async throws {
            var saved = rlimit()
            #expect(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &saved) == 0)
            let open = entries("/proc/self/fd")
            var lowered = saved
            lowered.rlim_cur = rlim_t(open + 300)
            try #require(lowered.rlim_cur <= saved.rlim_max)
            #expect(setrlimit(Int32(RLIMIT_NOFILE.rawValue), &lowered) == 0)
            defer { _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &saved) }

            let store = Store(reducers: [bump], state: Count())
            let inspector = try await StoreInspector(store)
            #expect(inspector.connectionLimit < 300 / 2 + 4)
            let port = inspector.port
            // Another process holds 1,100 connections: each of the first 500 sends half a head.
            let flood = Process()
            flood.executableURL = URL(fileURLWithPath: "/bin/bash")
            flood.arguments = [
                "-c",
                """
                trap '' PIPE
                ulimit -Sn "$(ulimit -Hn)" 2>/dev/null || ulimit -Sn 4096
                for i in $(seq 1100); do
                    exec {fd}<>/dev/tcp/127.0.0.1/\(port) || exit 1
                    [ "$i" -le 500 ] && printf 'GET / HTTP/1.1\\r\\nHost: x\\r\\n' >&"$fd"
                done
                echo ready
                read -r _
                """,
            ]
            let input = Pipe()
            let output = Pipe()
            flood.standardInput = input
            flood.standardOutput = output
            try flood.run()
            defer {
                try? input.fileHandleForWriting.close()
                flood.waitUntilExit()
            }
            let ready = try await onThread { output.fileHandleForReading.availableData }
            #expect(String(decoding: ready, as: UTF8.self) == "ready\n")
            #expect(inspector.openConnections <= inspector.connectionLimit)

            // The page, now, from this process.
            let started = ContinuousClock.now
            let page = try RawSocket(port)
            let answer = try await onThread { () -> [UInt8] in
                page.send("GET /?token=\(inspector.token) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n")
                return page.readUntilClosed(within: 5).bytes
            }
            page.close()
            #expect(status(of: answer) == 200)
            #expect(ContinuousClock.now - started < .seconds(2))
            #expect(entries("/proc/self/fd") < Int(lowered.rlim_cur))

            let stopping = ContinuousClock.now
            await inspector.stop()
            #expect(ContinuousClock.now - stopping <= ConnectionBounds.stop)
        }
    }
}
