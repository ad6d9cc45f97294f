import ReduxStore
import ReduxStoreTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Waits up to 10 s for `path` to hold a saved state of `version`.
private func waitForSave(_ path: String, version: UInt64) -> Bool {
    for _ in 0..<10_000 {
        if let text = readText(path), text.contains(#""version":\#(version),"#) { return true }
        sleepBriefly()
    }
    return false
}

/// The path of an executable built beside the test binary.
private func sibling(_ name: String) -> String {
    var buffer = [CChar](repeating: 0, count: 4096)
    let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    precondition(length > 0, "readlink /proc/self/exe failed")
    var path = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    while let last = path.last, last != "/" { path.removeLast() }
    // The test binary may sit inside a bundle folder (name.xctest/...): walk up to the bin folder.
    if let range = path.range(of: ".xctest/") {
        path = String(path[..<range.lowerBound])
        while let last = path.last, last != "/" { path.removeLast() }
    }
    return path + name
}

@Suite("Autosave: off the dispatch path, after N actions or a quiet time, and at exit", .serialized)
struct StoreAutosaveTests {
    @Test("after every N actions the state is saved without anyone asking")
    func everyActions() throws {
        let path = temporaryFolder() + "/auto.json"
        let store = Store(reducers: [counterReducer], state: CounterState())
        store.startAutosave(to: path, policy: AutosavePolicy(everyActions: 3))
        store.dispatchAction(CounterAction.increment)
        store.dispatchAction(CounterAction.increment)
        sleepBriefly(milliseconds: 100)
        #expect(readText(path) == nil)
        store.dispatchAction(CounterAction.increment)
        #expect(waitForSave(path, version: 3))
        #expect(try Store(contentsOf: path, reducers: [counterReducer]).currentState().count == 3)
        store.stopAutosave()
    }

    @Test("after a quiet time the last change is saved")
    func afterQuiet() throws {
        let path = temporaryFolder() + "/quiet.json"
        let store = Store(reducers: [counterReducer], state: CounterState())
        store.startAutosave(to: path, policy: AutosavePolicy(afterQuiet: .milliseconds(50)))
        for _ in 0..<5 { store.dispatchAction(CounterAction.increment) }
        #expect(waitForSave(path, version: 5))
        store.stopAutosave()
    }

    @Test("stopAutosave saves what was not saved yet")
    func stopSaves() throws {
        let path = temporaryFolder() + "/stop.json"
        let store = Store(reducers: [counterReducer], state: CounterState())
        store.startAutosave(to: path, policy: AutosavePolicy(everyActions: 1_000))
        for _ in 0..<7 { store.dispatchAction(CounterAction.increment) }
        store.stopAutosave()
        let restored = try Store(contentsOf: path, reducers: [counterReducer])
        #expect(restored.version == 7)
        #expect(restored.currentState().count == 7)
    }

    @Test("a failing save is reported and kept as the last error")
    func failure() {
        let path = temporaryFolder() + "/missing-folder/x.json"
        let store = Store(reducers: [counterReducer], state: CounterState())
        let reported = Recorder<StoreError.Kind>()
        store.startAutosave(to: path, policy: AutosavePolicy(everyActions: 1)) { reported.append($0.kind) }
        store.dispatchAction(CounterAction.increment)
        store.flushAutosave()
        #expect(store.lastAutosaveError?.kind == .io)
        #expect(reported.all.first == .io)
        store.stopAutosave()
    }

    @Test("a process that exits normally after its last action has that action on disk")
    func atExit() throws {
        let path = temporaryFolder() + "/exit.json"
        let program = sibling("reduxstore-autosave-exit-check")
        var pid = pid_t()
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup(program), strdup(path), strdup("41"), nil]
        defer { for arg in argv { free(arg) } }
        #expect(posix_spawn(&pid, program, nil, nil, argv, environ) == 0)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        #expect(status == 0)
        let restored = try Store<CounterValue>(contentsOf: path, reducers: [])
        #expect(restored.version == 41)
        #expect(restored.currentState() == CounterValue(count: 41))
    }
}
