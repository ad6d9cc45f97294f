import ReduxStore
import ReduxStoreTestSupport
import Testing

/// A typed payload the Swift decoding path decodes into.
private struct Order: Decodable, Equatable {
    var id: Int
    var quantity: UInt8
    var price: Double
    var items: [Item]
    struct Item: Decodable, Equatable {
        var title: String
        var done: Bool
    }
}

/// One bad input: its text, the kind of error, and the message's words.
struct BadInput: Sendable, CustomStringConvertible {
    let text: String
    let kind: StoreError.Kind
    let message: String
    init(_ text: String, _ kind: StoreError.Kind, _ message: String) {
        self.text = text
        self.kind = kind
        self.message = message
    }
    var description: String { text.count > 60 ? String(text.prefix(60)) + "…" : text }
}

private let deep = String(repeating: "[", count: 300) + String(repeating: "]", count: 300)
private let longIdentifier = String(repeating: "x", count: 1_025)

/// Bad action texts: each must be refused with its kind and words, changing nothing.
let badActionTexts: [BadInput] = [
    // Not JSON.
    BadInput("", .parse, "JSON text does not parse at byte 0: unexpected end of data"),
    BadInput("{", .parse, "JSON text does not parse at byte 1: unexpected end of data"),
    BadInput(#"{"identifier": "a""#, .parse, "JSON text does not parse at byte 18: unexpected end of data"),
    BadInput(#"{"identifier": "a",}"#, .parse, "JSON text does not parse at byte 19: unexpected character"),
    BadInput(#"{'identifier': 'a'}"#, .parse, "JSON text does not parse at byte 15: unexpected character"),
    BadInput(#"{"identifier": "a"} x"#, .parse, "JSON text does not parse at byte 20: unexpected character"),
    BadInput(#"{"identifier": "a", "payload": NaN}"#, .parse, "JSON text does not parse at byte 31: NaN and Infinity are not JSON numbers"),
    BadInput(#"{"identifier": "a", "payload": -Infinity}"#, .parse, "JSON text does not parse at byte 32: NaN and Infinity are not JSON numbers"),
    BadInput("{\"identifier\": \"a\nb\"}", .parse, "JSON text does not parse at byte 17: a control character inside a string must be escaped"),
    BadInput(#"{"identifier": "a", "payload": [1, 2,]}"#, .parse, "JSON text does not parse at byte 37: unexpected character"),
    BadInput("{\"identifier\": \"\u{FFFD}\", \"payload\": \"\\xff\"}", .parse, "JSON text does not parse at byte 35: invalid string sequence"),
    // Half a surrogate pair: json-c would make it U+FFFD without a word.
    BadInput(#"{"identifier": "\ud800"}"#, .parse, #"JSON text does not parse at byte 16: \uD800 is half of a surrogate pair, not a character"#),
    BadInput(#"{"identifier": "a", "payload": "x\udc00"}"#, .parse, #"JSON text does not parse at byte 33: \uDC00 is half of a surrogate pair, not a character"#),
    BadInput(#"{"identifier": "a", "payload": {"\ud83d\u0041": 1}}"#, .parse, #"JSON text does not parse at byte 33: \uD83D is half of a surrogate pair, not a character"#),
    // Numbers outside JSON's grammar, which json-c's tokener reads (and PostgreSQL refuses).
    BadInput(#"{"identifier": "a", "payload": 1.}"#, .parse, "JSON text does not parse at byte 31: a decimal point must be followed by a digit"),
    BadInput(#"{"identifier": "a", "payload": [1.e2]}"#, .parse, "JSON text does not parse at byte 32: a decimal point must be followed by a digit"),
    BadInput(#"{"identifier": "a", "payload": -.5}"#, .parse, "JSON text does not parse at byte 31: a minus sign must be followed by a digit"),
    BadInput(#"{"identifier": "a", "payload": 01}"#, .parse, "JSON text does not parse at byte 31: a number does not start with 0 followed by another digit"),
    BadInput(#"{"identifier": "a", "payload": -01}"#, .parse, "JSON text does not parse at byte 31: a number does not start with 0 followed by another digit"),
    BadInput(#"{"identifier": "a", "payload": 00.5}"#, .parse, "JSON text does not parse at byte 31: a number does not start with 0 followed by another digit"),
    BadInput(#"{"identifier": "a", "payload": 1e}"#, .parse, "JSON text does not parse at byte 31: an exponent must have a digit"),
    BadInput(#"{"identifier": "a", "payload": 2E+}"#, .parse, "JSON text does not parse at byte 31: an exponent must have a digit"),
    // What json-c cannot hold: a key with U+0000 in it (it would be cut short, and two keys merged).
    BadInput(#"{"identifier": "a", "payload": {"a\u0000b": 1, "a\u0000c": 2}}"#, .parse, #"JSON text at byte 32: an object key holds U+0000 (\u0000), which json-c cannot hold in a key"#),
    // Not an action.
    BadInput("[]", .decode, "action: expected object, found array"),
    BadInput("42", .decode, "action: expected object, found number"),
    BadInput("null", .decode, "action: expected object, found null"),
    BadInput(#""todo.add""#, .decode, "action: expected object, found string"),
    BadInput("{}", .decode, "identifier: key not found"),
    BadInput(#"{"payload": 1}"#, .decode, "identifier: key not found"),
    BadInput(#"{"identifier": 7}"#, .decode, "identifier: expected string, found number"),
    BadInput(#"{"identifier": null}"#, .decode, "identifier: expected string, found null"),
    BadInput(#"{"identifier": ["a"]}"#, .decode, "identifier: expected string, found array"),
    BadInput(#"{"identifier": true}"#, .decode, "identifier: expected string, found boolean"),
    BadInput(#"{"identifier": "a", "extra": 1}"#, .decode, #"action.extra: unexpected key (an action has "identifier" and "payload")"#),
    BadInput(#"{"identifier": "a\u0000b"}"#, .decode, "identifier contains a NUL character"),
    BadInput(#"{"identifier": "a", "payload": {"x": [1e400]}}"#, .decode, "payload.x[0]: non-finite number is not valid JSON"),
    // Past a limit.
    BadInput(#"{"identifier": "\#(longIdentifier)"}"#, .limit, "identifier is longer than 1024 bytes"),
    BadInput(#"{"identifier": "a", "payload": \#(deep)}"#, .limit, "JSON text nests deeper than 256 levels"),
    BadInput(#"{"identifier": "a", "payload": "# + String(repeating: "[", count: 256) + String(repeating: "]", count: 256) + "}",
             .limit, "payload is nested deeper than 256 levels (the action object around it counts as one)"),
]

/// Bad payloads for a typed action: each must fail to decode, naming the coding path.
let badPayloads: [BadInput] = [
    BadInput("null", .decode, "payload: expected object, found null"),
    BadInput("[]", .decode, "payload: expected object, found array"),
    BadInput(#"{"quantity": 1, "price": 1, "items": []}"#, .decode, "payload.id: key not found"),
    BadInput(#"{"id": "7", "quantity": 1, "price": 1, "items": []}"#, .decode, "payload.id: expected Int, found string"),
    BadInput(#"{"id": 1.5, "quantity": 1, "price": 1, "items": []}"#, .decode, "payload.id: expected Int, found 1.5"),
    BadInput(#"{"id": 9223372036854775808, "quantity": 1, "price": 1, "items": []}"#, .decode, "payload.id: number 9223372036854775808 does not fit in Int"),
    BadInput(#"{"id": 1, "quantity": 300, "price": 1, "items": []}"#, .decode, "payload.quantity: number 300 does not fit in UInt8"),
    BadInput(#"{"id": 1, "quantity": -1, "price": 1, "items": []}"#, .decode, "payload.quantity: number -1 does not fit in UInt8"),
    BadInput(#"{"id": 1, "quantity": 1, "price": "1", "items": []}"#, .decode, "payload.price: expected Double, found string"),
    BadInput(#"{"id": 1, "quantity": 1, "price": 1, "items": {}}"#, .decode, "payload.items: expected array, found object"),
    BadInput(#"{"id": 1, "quantity": 1, "price": 1, "items": [{"title": "a", "done": 1}]}"#, .decode, "payload.items[0].done: expected Bool, found number"),
    BadInput(#"{"id": 1, "quantity": 1, "price": 1, "items": [{"title": "a", "done": true}, {"done": false}]}"#, .decode, "payload.items[1].title: key not found"),
    BadInput(#"{"id": 1, "quantity": 1, "price": 1, "items": [{"title": null, "done": true}]}"#, .decode, "payload.items[0].title: expected String, found null"),
]

@Suite("Bad input: a clear error, and nothing changes")
struct BadInputTests {
    @Test("action text that is refused", arguments: badActionTexts)
    func actionText(_ bad: BadInput) {
        let store = Store(reducers: [counterReducer], state: CounterState(count: 3))
        let error = #expect(throws: StoreError.self) {
            store.dispatchAction(try JSONAction(jsonText: bad.text))
        }
        #expect(error?.kind == bad.kind)
        #expect(error?.message == bad.message)
        #expect(store.version == 0)
        #expect(store.currentState().count == 3)
    }

    @Test("payloads that do not decode into a typed action", arguments: badPayloads)
    func typedPayload(_ bad: BadInput) throws {
        let action = try JSONAction(jsonText: #"{"identifier": "order", "payload": \#(bad.text)}"#)
        let error = #expect(throws: StoreError.self) { try action.decodePayload(as: Order.self) }
        #expect(error?.kind == bad.kind)
        #expect(error?.message == bad.message)
    }

    @Test("numbers as JSON's grammar writes them are read, each as its kind")
    func numbersInTheGrammar() throws {
        let text = #"{"identifier": "n", "payload": [0, -0, 7, -7, 0.5, -0.5e-3, 1E2, 1e+16, 2e-7, 18446744073709551615]}"#
        let action = try JSONAction(jsonText: text)
        // A number with a fraction or an exponent is a double, whole or not (json-c's kind).
        #expect(action.payload == [0, 0, 7, -7, 0.5, -0.0005, 100.0, 1e16, 2e-7, .uint(UInt64.max)])
        // A string may hold U+0000; only a key may not.
        let string = try JSONAction(jsonText: #"{"identifier": "s", "payload": {"k": "a\u0000b"}}"#)
        #expect(string.payload == ["k": .string("a\u{0}b")])
    }

    @Test("the same rules accept what is right")
    func good() throws {
        let action = try JSONAction(jsonText: #"""
            {"identifier": "order", "payload": {"id": 9223372036854775807, "quantity": 255,
             "price": 2.5e3, "items": [{"title": "N\"I\u00e9", "done": true}]}}
            """#)
        #expect(action.identifier == "order")
        #expect(try action.decodePayload(as: Order.self) == Order(
            id: .max, quantity: 255, price: 2500,
            items: [.init(title: "N\"Ié", done: true)]))
        #expect(try JSONAction(jsonText: #"{"identifier": "a", "payload": null}"#).payload == nil)
        #expect(try JSONAction(jsonText: #"{"identifier": "a"}"#).payload == nil)
        #expect(try JSONAction(jsonText: #"{"identifier": "a", "payload": 18446744073709551615}"#).payload == .uint(.max))
        #expect(try JSONAction(jsonText: #"{"identifier": "a", "payload": -9223372036854775808}"#).payload == .int(.min))
    }

    @Test("at least 40 bad inputs are covered")
    func count() {
        #expect(badActionTexts.count + badPayloads.count >= 40)
    }
}
