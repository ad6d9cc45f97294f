import ReduxStore
import ReduxStoreTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("Persistence: atomic save, restore of state and version")
struct StorePersistenceTests {
    @Test("save then open restores the state and its version; no temporary is left")
    func roundTrip() throws {
        let folder = temporaryFolder()
        let path = folder + "/state.json"
        let store = Store(reducers: [counterReducer], state: CounterState())
        store.dispatchAction(CounterAction.add(41))
        store.dispatchAction(CounterAction.note("saved"))
        try store.save(to: path)
        #expect(readText(path) == #"{"reduxstore":1,"version":2,"state":{"count":41,"log":["saved"]}}"# + "\n")
        #expect(folderEntries(folder) == ["state.json"])

        let restored = try Store(contentsOf: path, reducers: [counterReducer])
        #expect(restored.version == 2)
        #expect(restored.currentState().count == 41)
        restored.dispatchAction(CounterAction.increment)
        #expect(restored.version == 3)
        #expect(restored.currentState().count == 42)
    }

    @Test("a second save replaces the first whole")
    func replace() throws {
        let path = temporaryFolder() + "/s.json"
        let store = Store(reducers: [counterReducer], state: CounterState())
        try store.save(to: path)
        store.dispatchAction(CounterAction.increment)
        try store.save(to: path)
        let restored = try Store(contentsOf: path, reducers: [counterReducer])
        #expect(restored.version == 1)
        #expect(restored.currentState().count == 1)
    }

    @Test("a missing file is an io error naming it")
    func missing() {
        let path = temporaryFolder() + "/absent.json"
        let error = #expect(throws: StoreError.self) {
            try Store(contentsOf: path, reducers: [counterReducer])
        }
        #expect(error?.kind == .io)
        #expect(error?.message == "open \(path): No such file or directory")
    }

    @Test("a folder that does not exist cannot be saved into: io error")
    func unwritable() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let path = temporaryFolder() + "/no/such/folder/s.json"
        let error = #expect(throws: StoreError.self) { try store.save(to: path) }
        #expect(error?.kind == .io)
    }

    @Test("files that are not saved states are corrupt, and are left byte for byte as they were",
          arguments: [
            ("not json at all", "not a saved state: JSON text does not parse"),
            ("[1, 2]", "not a saved state: expected object, found array"),
            (#"{"version": 1, "state": {}}"#, "not a saved state: reduxstore: expected 1"),
            (#"{"reduxstore": 1, "state": {"count": 1, "log": []}}"#, "not a saved state: version: expected a whole number from 0"),
            (#"{"reduxstore": 1, "version": 3}"#, "not a saved state: state: key not found"),
            (#"{"reduxstore": 1, "version": 3, "state": {"count": "x", "log": []}}"#, "state.count: expected Int, found string"),
            (#"{"reduxstore": 1, "version": 3, "state": {"count": 1, "log": [1]}}"#, "state.log[0]: expected String, found number"),
          ])
    func corrupt(text: String, expected: String) {
        let path = temporaryFolder() + "/bad.json"
        writeText(text, to: path)
        let error = #expect(throws: StoreError.self) {
            try Store(contentsOf: path, reducers: [counterReducer])
        }
        #expect(error?.kind == .corrupt)
        #expect(error?.message.hasPrefix("\(path): \(expected)") == true, "\(error?.message ?? "")")
        #expect(readText(path) == text)
    }
}
