import Foundation
import ReduxStore
import ReduxStoreInspector
import Testing

// The protocol as the DocC article "The inspector's protocol" writes it, checked on raw sockets:
// the order of the HTTP checks, WebSocket fragmentation of large messages, RFC 6455's closes, the
// close code every page hears at stop.

private struct Blob: Codable, Equatable { var text = "" }

/// One WebSocket frame as it was on the wire.
private struct Frame {
    var fin: Bool
    var opcode: UInt8
    var masked: Bool
    var payload: [UInt8]
}

/// The whole frames of `bytes`, in order (an incomplete last one is left out).
private func frames(in bytes: [UInt8]) -> [Frame] {
    var result: [Frame] = []
    var index = 0
    while index + 2 <= bytes.count {
        let fin = bytes[index] & 0x80 != 0
        let opcode = bytes[index] & 0x0F
        let masked = bytes[index + 1] & 0x80 != 0
        var length = Int(bytes[index + 1] & 0x7F)
        var start = index + 2
        if length == 126 {
            guard start + 2 <= bytes.count else { break }
            length = Int(bytes[start]) << 8 | Int(bytes[start + 1])
            start += 2
        } else if length == 127 {
            guard start + 8 <= bytes.count else { break }
            length = bytes[start..<start + 8].reduce(0) { $0 << 8 | Int($1) }
            start += 8
        }
        var key: [UInt8] = []
        if masked {
            guard start + 4 <= bytes.count else { break }
            key = Array(bytes[start..<start + 4])
            start += 4
        }
        guard start + length <= bytes.count else { break }
        var payload = Array(bytes[start..<start + length])
        if masked { for i in payload.indices { payload[i] ^= key[i % 4] } }
        result.append(Frame(fin: fin, opcode: opcode, masked: masked, payload: payload))
        index = start + length
    }
    return result
}

/// A client's frame: masked (as RFC 6455 requires of a client) unless `masked` is false.
private func clientFrame(_ payload: [UInt8], opcode: UInt8 = 0x1, fin: Bool = true, masked: Bool = true) -> [UInt8] {
    var bytes: [UInt8] = [(fin ? 0x80 : 0) | opcode]
    let maskBit: UInt8 = masked ? 0x80 : 0
    if payload.count < 126 {
        bytes.append(maskBit | UInt8(payload.count))
    } else if payload.count <= 0xFFFF {
        bytes += [maskBit | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
    } else {
        bytes.append(maskBit | 127)
        bytes += (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xFF) }
    }
    guard masked else { return bytes + payload }
    let key: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
    return bytes + key + payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
}

/// The messages (text, put together from their fragments) among `frames`.
private func textMessages(_ frames: [Frame]) -> [String] {
    var messages: [String] = []
    var current: [UInt8]?
    for frame in frames {
        switch frame.opcode {
        case 0x1: current = frame.payload
        case 0x0: current? += frame.payload
        default: continue
        }
        if frame.fin, let text = current {
            messages.append(String(decoding: text, as: UTF8.self))
            current = nil
        }
    }
    return messages
}

/// A page on a raw socket: upgraded, its `hello` read.
private func openPage(_ inspector: StoreInspector) async throws -> (socket: RawSocket, rest: [UInt8]) {
    let socket = try RawSocket(inspector.port)
    socket.send(upgradeRequest(inspector))
    let head = try await onThread { socket.readHead(within: 5) }
    #expect(head.head.hasPrefix("HTTP/1.1 101"), "\(head.head)")
    return (socket, head.rest)
}

/// The answer to `request` on a new connection, read until the inspector closes it.
private func answer(_ port: Int, _ request: String) async throws -> (status: Int, closed: Bool) {
    let socket = try RawSocket(port)
    defer { socket.close() }
    return try await onThread {
        socket.send(request)
        let end = socket.readUntilClosed(within: 5)
        return (status(of: end.bytes), end.closed)
    }
}

/// Frames that make no message, and the close code each must get; made once (masking 16 MB
/// takes seconds in a debug build) for every round of the test that sends them.
private let brokenMessages: [(name: String, bytes: [UInt8], code: Int)] = {
    let request = Array(#"{"type":"state","id":5,"pointer":"","depth":0}"#.utf8)
    let half = [UInt8](repeating: UInt8(ascii: " "), count: 600_000)
    return [
        ("a continuation without a start", clientFrame(request, opcode: 0x0), 1002),
        ("a new message inside a fragmented one", clientFrame(request, fin: false) + clientFrame(request), 1002),
        ("two fragments of 600 KB", clientFrame(half, fin: false) + clientFrame(half, opcode: 0x0), 1009),
        // The page's close frame comes while the rest of the frame is still arriving: the
        // inspector reads and drops it, so that no reset overtakes the close frame.
        ("one frame of 1.2 MB", clientFrame(half + half), 1009),
        ("one frame of 16 MB", clientFrame([UInt8](repeating: UInt8(ascii: " "), count: 16_000_000)), 1009),
    ]
}()

extension InspectorTests {
    @Suite("The protocol as written: check order, fragmentation, RFC 6455 closes, 1001 at stop")
    struct ProtocolTests {
        @Test("every request is checked Host, token, path, then method: only GET / and /ws exist, an unknown path learns nothing first")
        func checkOrder() async throws {
            let inspector = try await StoreInspector(Store(reducers: [], state: Blob()))
            let port = inspector.port
            let token = inspector.token
            let host = "Host: 127.0.0.1:\(port)\r\n"
            let cases: [(String, String, Int)] = [
                ("an unknown path, no token", "GET /other HTTP/1.1\r\n\(host)\r\n", 401),
                ("an unknown path, a wrong token", "GET /other?token=00 HTTP/1.1\r\n\(host)\r\n", 401),
                ("an unknown path, another host", "GET /other?token=\(token) HTTP/1.1\r\nHost: evil.example:\(port)\r\n\r\n", 403),
                ("an unknown path, no host", "GET /other?token=\(token) HTTP/1.1\r\n\r\n", 403),
                ("an unknown method and path, no token", "DELETE /x HTTP/1.1\r\n\(host)\r\n", 401),
                ("an unknown path with the token", "GET /other?token=\(token) HTTP/1.1\r\n\(host)\r\n", 404),
                ("/ws/more, no token", "GET /ws/more HTTP/1.1\r\n\(host)\r\n", 401),
                ("/ws/ with the token", "GET /ws/?token=\(token) HTTP/1.1\r\n\(host)\r\n", 404),
                ("//ws with the token", "GET //ws?token=\(token) HTTP/1.1\r\n\(host)\r\n", 404),
                ("/ws/more with the token", "GET /ws/more?token=\(token) HTTP/1.1\r\n\(host)\r\n", 404),
                ("/index.html with the token", "GET /index.html?token=\(token) HTTP/1.1\r\n\(host)\r\n", 404),
                ("/ws without an upgrade", "GET /ws?token=\(token) HTTP/1.1\r\n\(host)\r\n", 400),
                ("POST / with the token", "POST /?token=\(token) HTTP/1.1\r\n\(host)\r\n", 405),
                ("HEAD / with the token", "HEAD /?token=\(token) HTTP/1.1\r\n\(host)\r\n", 405),
                ("OPTIONS /ws with the token", "OPTIONS /ws?token=\(token) HTTP/1.1\r\n\(host)\r\n", 405),
                ("DELETE / without the token", "DELETE / HTTP/1.1\r\n\(host)\r\n", 401),
                ("PUT /other with the token", "PUT /other?token=\(token) HTTP/1.1\r\n\(host)\r\n", 404),
                ("two Host headers naming the address", "GET /?token=\(token) HTTP/1.1\r\n\(host)\(host)\r\n", 400),
                ("two Host headers, the second another", "GET /?token=\(token) HTTP/1.1\r\n\(host)Host: evil.example\r\n\r\n", 400),
                ("two Host headers on an unknown path", "GET /other HTTP/1.1\r\n\(host)\(host)\r\n", 400),
                (
                    "a WebSocket upgrade with two Host headers",
                    "GET /ws?token=\(token) HTTP/1.1\r\n\(host)\(host)Upgrade: websocket\r\nConnection: Upgrade\r\n"
                        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
                    400
                ),
                ("the page", "GET /?token=\(token) HTTP/1.1\r\n\(host)Connection: close\r\n\r\n", 200),
            ]
            for (name, request, expected) in cases {
                let result = try await answer(port, request)
                #expect(result.status == expected, "\(name)")
                #expect(result.closed, "\(name): the connection stays open")
            }
            await inspector.stop()
        }

        @Test("a message over 1 MiB is sent as several frames of one text message, none over 1 MiB")
        func largeMessagesAreFragmented() async throws {
            let big = String(repeating: "0123456789abcdef", count: 150_000)  // 2.4 MB
            let store = Store(reducers: [], state: Blob(text: big))
            let inspector = try await StoreInspector(store)
            let (page, rest) = try await openPage(inspector)
            defer { page.close() }
            page.send(clientFrame(Array(#"{"type":"state","id":7,"pointer":"/text","depth":0}"#.utf8)))
            let heard = try await onThread { page.readUntilClosed(within: 4) }
            let all = frames(in: rest + heard.bytes)
            let data = all.filter { $0.opcode <= 0x2 }
            #expect(data.allSatisfy { !$0.masked })
            #expect(data.allSatisfy { $0.payload.count <= 1 << 20 }, "a frame of \(data.map(\.payload.count).max() ?? 0) bytes")
            let messages = textMessages(all)
            #expect(messages.count == 2, "\(messages.count) messages")
            let answer = messages.last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) } as? [String: Any]
            #expect(answer?["type"] as? String == "state")
            #expect((answer?["node"] as? [String: Any])?["value"] as? String == big)
            // The answer's frames: a text frame without FIN, continuations, the last with FIN.
            let answerFrames = data.drop { $0.fin }  // after hello's single frame
            #expect(answerFrames.count >= 3)
            #expect(answerFrames.first?.opcode == 0x1 && answerFrames.first?.fin == false)
            #expect(answerFrames.dropFirst().allSatisfy { $0.opcode == 0x0 })
            #expect(answerFrames.last?.fin == true)
            #expect(answerFrames.dropLast().allSatisfy { !$0.fin })
            await inspector.stop()
        }

        @Test("a client frame that is not masked is closed with 1002, not answered")
        func unmaskedFrameIsAProtocolError() async throws {
            let inspector = try await StoreInspector(Store(reducers: [], state: Blob(text: "x")))
            for pipelined in [false, true] {
                let socket = try RawSocket(inspector.port)
                let request = Array(#"{"type":"state","id":1,"pointer":"","depth":1}"#.utf8)
                var rest: [UInt8] = []
                if pipelined {
                    // The frame right behind the upgrade request, before the 101 came back.
                    socket.send(Array(upgradeRequest(inspector).utf8) + clientFrame(request, masked: false))
                } else {
                    socket.send(upgradeRequest(inspector))
                    let head = try await onThread { socket.readHead(within: 5) }
                    #expect(head.head.hasPrefix("HTTP/1.1 101"))
                    rest = head.rest
                    try await Task.sleep(for: .milliseconds(100))
                    socket.send(clientFrame(request, masked: false))
                }
                let started = Date()
                let heard = try await onThread { socket.readUntilClosed(within: 5) }
                socket.close()
                var bytes = rest + heard.bytes
                if pipelined, let end = bytes.firstRange(of: Array("\r\n\r\n".utf8)) {
                    #expect(String(decoding: bytes[..<end.lowerBound], as: UTF8.self).hasPrefix("HTTP/1.1 101"))
                    bytes = Array(bytes[end.upperBound...])
                }
                #expect(heard.closed, "pipelined \(pipelined): the connection stays open")
                #expect(Date().timeIntervalSince(started) < 3)
                #expect(closeFrame(in: bytes)?.code == 1002, "pipelined \(pipelined): \(String(describing: closeFrame(in: bytes)))")
                #expect(!textMessages(frames(in: bytes)).contains { $0.contains(#""type":"state""#) }, "answered")
            }
            await inspector.stop()
        }

        @Test("a text message that is not UTF-8 is closed with 1007, not answered; UTF-8 split across fragments is fine")
        func invalidUTF8IsClosedWith1007() async throws {
            let inspector = try await StoreInspector(Store(reducers: [], state: Blob(text: "x")))
            // Valid: "é" (C3 A9) split between two fragments.
            let (good, goodRest) = try await openPage(inspector)
            let text = Array(#"{"type":"state","id":3,"pointer":"/é","depth":0}"#.utf8)
            let split = text.firstIndex(of: 0xC3)! + 1
            good.send(clientFrame(Array(text[..<split]), fin: false) + clientFrame(Array(text[split...]), opcode: 0x0))
            let goodHeard = try await onThread { good.readUntilClosed(within: 2) }
            good.close()
            #expect(!goodHeard.closed)
            #expect(textMessages(frames(in: goodRest + goodHeard.bytes)).contains { $0.contains(#""id":3"#) })

            for (name, payload) in [
                ("one frame", [UInt8](#"{"type":"state","id":4,"pointer":""#.utf8) + [0xFF, 0xC3, 0x28] + Array(#""}"#.utf8)),
                ("a lone continuation byte", [UInt8](#"{"type":"state","id":4,"pointer":"/"#.utf8) + [0x80] + Array(#""}"#.utf8)),
            ] {
                let (page, rest) = try await openPage(inspector)
                page.send(clientFrame(payload))
                let heard = try await onThread { page.readUntilClosed(within: 5) }
                page.close()
                let bytes = rest + heard.bytes
                #expect(heard.closed, "\(name): the connection stays open")
                #expect(closeFrame(in: bytes)?.code == 1007, "\(name): \(String(describing: closeFrame(in: bytes)))")
                #expect(!textMessages(frames(in: bytes)).contains { $0.contains(#""id":4"#) }, "\(name): answered")
            }
            await inspector.stop()
        }

        // The close frame is never lost to a reset, a message over 1 MiB in one frame included.
        @Test("frames that make no message are closed with 1002, a message over 1 MiB with 1009; none is answered",
              arguments: 0..<8)
        func brokenMessagesCloseWithTheirCodes(round: Int) async throws {
            let inspector = try await StoreInspector(Store(reducers: [], state: Blob(text: "x")))
            for (name, bytes, code) in brokenMessages {
                let (page, rest) = try await openPage(inspector)
                // Everything the page sends is taken (read and dropped past the limit): the
                // connection is not reset under a client still sending.
                let taken = try await onThread { page.send(bytes) }
                #expect(taken, "\(name): the page's bytes were refused (a reset)")
                let heard = try await onThread { page.readUntilClosed(within: 5) }
                page.close()
                let all = rest + heard.bytes
                #expect(heard.closed, "\(name): the connection stays open")
                #expect(closeFrame(in: all)?.code == code, "\(name): \(String(describing: closeFrame(in: all)))")
                #expect(!textMessages(frames(in: all)).contains { $0.contains(#""id":5"#) || $0.contains(#""type":"error""#) }, "\(name): answered")
            }
            await inspector.stop()
        }

        @Test("at stop every page hears 1001 \"the inspector stopped\", never 1000", arguments: 0..<5)
        func everyPageHears1001(round: Int) async throws {
            var options = InspectorOptions()
            options.maximumClients = 24
            let store = Store(reducers: [{ (state: inout Blob, action: any Action) in state.text += "." }], state: Blob())
            let inspector = try await StoreInspector(store, options: options)
            var pages: [(RawSocket, [UInt8])] = []
            for _ in 0..<24 { pages.append(try await openPage(inspector)) }
            // Some pages are being sent changes as the stop comes.
            for _ in 0..<(round * 50) { store.dispatchAction(JSONAction(identifier: "tick", payload: nil)) }
            let sockets = pages.map(\.0)
            let heard = Task {
                try await onThread { sockets.map { $0.readUntilClosed(within: 8) } }
            }
            await inspector.stop()
            let ends = try await heard.value
            var codes: [String] = []
            for ((socket, rest), end) in zip(pages, ends) {
                socket.close()
                let close = closeFrame(in: rest + end.bytes)
                codes.append("\(close?.code ?? -1) \(close?.reason ?? "")")
            }
            let wrong = codes.filter { $0 != "1001 the inspector stopped" }
            #expect(wrong.isEmpty, "\(wrong.count) of \(codes.count) pages heard: \(wrong)")
        }
    }
}
