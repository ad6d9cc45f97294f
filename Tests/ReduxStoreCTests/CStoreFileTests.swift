import CJSONC
import FoundationEssentials
import CReduxStoreAPI
@_spi(Bindings) import ReduxStore
import ReduxStoreC
import ReduxStoreTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A new file under a fresh folder, holding `text`.
private func writeFile(_ text: String) -> String {
    let path = temporaryFolder() + "/state.json"
    writeText(text, to: path)
    return path
}

@Suite("rdx_store_open: what a saved file may hold")
struct CStoreFileTests {
    @Test("saved files that break the rules of JSON input are corrupt, and nothing opens",
          arguments: [
            (#"{"reduxstore":1,"version":1,"state":[1e999]}"#, "state[0]: non-finite number is not valid JSON"),
            (#"{"reduxstore":1,"version":18446744073709551615,"state":{}}"#, "version: expected a whole number from 0 to 2^63 - 2"),
            (#"{"reduxstore":1,"version":9223372036854775807,"state":{}}"#, "version: expected a whole number from 0 to 2^63 - 2"),
          ])
    func refused(text: String, words: String) {
        let path = writeFile(text)
        defer { unlink(path) }
        var status = RDX_OK
        let store = rdx_store_open(path, nil, 0, &status)
        #expect(store == nil)
        #expect(status == RDX_ECORRUPT)
        #expect(String(cString: rdx_last_error()).hasSuffix(words))
    }

    @Test("a saved file with malformed UTF-8 (an overlong form json-c lets through) is corrupt")
    func overlongUTF8() {
        let path = temporaryFolder() + "/state.json"
        writeBytes(
            Array(#"{"reduxstore":1,"version":1,"state":{"k"#.utf8) + [0xC0, 0x93]
                + Array(#"":1}}"#.utf8),
            to: path)
        defer { unlink(path) }
        var status = RDX_OK
        #expect(rdx_store_open(path, nil, 0, &status) == nil)
        #expect(status == RDX_ECORRUPT)
        #expect(String(cString: rdx_last_error()).hasSuffix("at byte 39: invalid UTF-8"))
        #expect(throws: StoreError.self) { try Store<JSONValue>(contentsOf: path, reducers: []) }
    }

    @Test("the largest version a file may hold opens, and counts on")
    func largestVersion() {
        let path = writeFile(#"{"reduxstore":1,"version":9223372036854775806,"state":{"n":1}}"#)
        defer { unlink(path) }
        var status = RDX_ECORRUPT
        let store = rdx_store_open(path, nil, 0, &status)
        #expect(status == RDX_OK)
        #expect(rdx_store_version(store) == 9_223_372_036_854_775_806)
        rdx_store_release(store)
    }
}

@Suite("rdx_store_save: what a C reducer leaves in the tree, a file can hold, or the save is refused")
struct CStoreSaveTests {
    /// A C store whose reducer puts what `make` returns (a new json-c node) at state.x for the
    /// action "set".
    private func store(setting make: @escaping @convention(c) () -> OpaquePointer?) -> OpaquePointer? {
        let reduce: rdx_reduce_fn = { state, identifier, _, context in
            guard let identifier, strcmp(identifier, "set") == 0, let context else { return }
            let make = unsafeBitCast(context, to: (@convention(c) () -> OpaquePointer?).self)
            json_object_object_add(state, "x", make())
        }
        var reducer = rdx_reducer(reduce: reduce, context: unsafeBitCast(make, to: UnsafeMutableRawPointer.self), identifier: nil)
        let initial = json_object_new_object()
        defer { json_object_put(initial) }
        return rdx_store_create(initial, &reducer, 1, nil)
    }

    @Test("a NaN a C reducer put in the state: RDX_EDECODE naming it, the old file as it was")
    func nan() {
        let path = temporaryFolder() + "/state.json"
        let store = store(setting: { json_object_new_double(.nan) })
        defer { rdx_store_release(store) }
        #expect(rdx_store_save(store, path) == RDX_OK)
        let before = readText(path)
        #expect(rdx_store_dispatch_action(store, "set", nil) == RDX_OK)
        #expect(rdx_store_save(store, path) == RDX_EDECODE)
        #expect(String(cString: rdx_last_error()) == "save \(path): state.x: non-finite number is not valid JSON")
        #expect(readText(path) == before)
        #expect(before == #"{"reduxstore":1,"version":0,"state":{}}"# + "\n")
    }

    @Test("a string a C reducer made of bytes that are not UTF-8: RDX_EDECODE, the old file as it was")
    func malformedUTF8() {
        let path = temporaryFolder() + "/state.json"
        // C0 93: an overlong form, which json-c's printer passes on as it is.
        let store = store(setting: {
            [CChar(bitPattern: 0xC0), CChar(bitPattern: 0x93)].withUnsafeBufferPointer {
                json_object_new_string_len($0.baseAddress, 2)
            }
        })
        defer { rdx_store_release(store) }
        #expect(rdx_store_save(store, path) == RDX_OK)
        #expect(rdx_store_dispatch_action(store, "set", nil) == RDX_OK)
        #expect(rdx_store_save(store, path) == RDX_EDECODE)
        #expect(String(cString: rdx_last_error()).hasPrefix("save \(path): the state would not read back: "))
        #expect(readText(path) == #"{"reduxstore":1,"version":0,"state":{}}"# + "\n")
    }

    @Test("rdx_store_open of /dev/zero: RDX_EIO at once")
    func devZero() {
        var status = RDX_OK
        #expect(rdx_store_open("/dev/zero", nil, 0, &status) == nil)
        #expect(status == RDX_EIO)
        #expect(String(cString: rdx_last_error()) == "open /dev/zero: not a regular file (a character device)")
    }
}

@Suite("JSON values from json-c trees")
struct JSONValueTreeTests {
    @Test("a tree nested past the limit is a limit error, not a type mismatch")
    func deepTree() throws {
        var tree = json_object_new_int(1)
        for _ in 0..<257 {
            let array = json_object_new_array()
            json_object_array_add(array, tree)
            tree = array
        }
        defer { json_object_put(tree) }
        let error = #expect(throws: StoreError.self) {
            try JSONCDecoder().decode(JSONValue.self, from: tree)
        }
        #expect(error?.kind == .limit)
    }

    @Test("a Decimal keeps every digit through a json-c tree")
    func decimal() throws {
        let value = Decimal(string: "5497852955425333875.25")!
        let tree = try JSONCEncoder().encode([value])
        defer { json_object_put(tree) }
        #expect(try JSONCDecoder().decode([Decimal].self, from: tree) == [value])
    }
}
