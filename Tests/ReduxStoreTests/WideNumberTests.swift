// Numbers past 64 bits in JSON text: json-c holds integers in 64 bits, so the bridge keeps longer
// integer text as a number node with its digits, and the decoders read them back exactly.

import Foundation
import ReduxStore
import ReduxStoreTestSupport
import Testing
import Dispatch
import CJSONC

@Suite struct WideNumberTests {
    @Test func int128FromTextIsExact() throws {
        let decoder = JSONCDecoder()
        #expect(try decoder.decode(Int128.self, fromJSONString: "170141183460469231731687303715884105727") == .max)
        #expect(try decoder.decode(Int128.self, fromJSONString: "-170141183460469231731687303715884105728") == .min)
        #expect(try decoder.decode(UInt128.self, fromJSONString: "340282366920938463463374607431768211455") == .max)
        #expect(try decoder.decode([UInt128].self, fromJSONString: "[18446744073709551616, 5]")
            == [UInt128(UInt64.max) + 1, 5])
        #expect(try decoder.decode(Decimal.self, fromJSONString: "1180591620717411303424")
            == Decimal(string: "1180591620717411303424")!)
    }

    @Test func aNarrowerTypeSaysTheNumberDoesNotFit() {
        #expect(throws: StoreError(.decode, codingPath: "[0]", detail: "number 18446744073709551616 does not fit in UInt64")) {
            try JSONCDecoder().decode([UInt64].self, fromJSONString: "[18446744073709551616]")
        }
        #expect(throws: StoreError(.decode, codingPath: "", detail: "number 170141183460469231731687303715884105728 does not fit in Int128")) {
            try JSONCDecoder().decode(Int128.self, fromJSONString: "170141183460469231731687303715884105728")
        }
    }

    @Test func untypedTheyAreDoubles() throws {
        // What Foundation's JSONDecoder gives for JSONValue too: neither Int64 nor UInt64 holds it.
        let value = try JSONCDecoder().decode(JSONValue.self, fromJSONString: #"{"n": -9223372036854775809}"#)
        #expect(value == .object(["n": .double(-9223372036854775809.0)]))
    }

    @Test func parseErrorsNameTheCallersOffset() {
        // The error is past an integer the parser lengthened: the offset is still the text's own.
        #expect(throws: StoreError(.parse, "JSON text does not parse at byte 23: unexpected character")) {
            try JSONCDecoder().decode(JSONValue.self, fromJSONString: "[18446744073709551616, }")
        }
    }

    @Test func oneTreeDecodedOnManyThreadsAtOnce() throws {
        // Reading a number's digits must not write into the borrowed tree (json-c prints into a
        // node's own buffer): ThreadSanitizer runs this suite too.
        struct Shared: @unchecked Sendable { let tree: OpaquePointer? }  // only read below
        let text = "[123456789012345678901234567890.5, 170141183460469231731687303715884105727, 0.1]"
        let shared = Shared(tree: try JSONCText.parse(text))
        defer { json_object_put(shared.tree) }
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            let tree = shared.tree
            for _ in 0..<200 {
                let decimals = try? JSONCDecoder().decode([Decimal].self, from: tree)
                #expect(decimals?.first == Decimal(string: "123456789012345678901234567890.5"))
                let floats = try? JSONCDecoder().decode([Float].self, from: tree)
                #expect(floats?.last == 0.1)
            }
        }
    }

    @Test func aFileWithWideIntegersOpensExactly() throws {
        struct Ledger: Codable, Equatable { var total: Int128; var unsigned: UInt128; var amount: Decimal }
        let path = temporaryFolder() + "/ledger.json"
        writeText(#"{"reduxstore":1,"version":7,"state":{"total":-170141183460469231731687303715884105728,"unsigned":340282366920938463463374607431768211455,"amount":-98765432109876543210987654321}}"#, to: path)
        let store = try Store<Ledger>(contentsOf: path, reducers: [])
        #expect(store.version == 7)
        #expect(store.currentState() == Ledger(
            total: .min, unsigned: .max, amount: Decimal(string: "-98765432109876543210987654321")!))
        try store.save(to: path)
        #expect(try Store<Ledger>(contentsOf: path, reducers: []).currentState() == store.currentState())
        #expect(readText(path)?.contains("340282366920938463463374607431768211455") == true)
    }
}
