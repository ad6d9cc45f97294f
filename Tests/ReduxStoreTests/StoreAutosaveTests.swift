import Dispatch
import Foundation
@_spi(Bindings) @testable import ReduxStore
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

    @Test("a process that exits normally after its last action has that action on disk",
          arguments: ["keep", "drop"])
    func atExit(mode: String) throws {
        // "drop": the store is freed, with its changes unsaved, before the process exits.
        let path = temporaryFolder() + "/exit.json"
        let program = siblingExecutable("reduxstore-autosave-exit-check")
        var pid = pid_t()
        let argv: [UnsafeMutablePointer<CChar>?] = [
            strdup(program), strdup(path), strdup("41"), strdup(mode), nil,
        ]
        defer { for arg in argv { free(arg) } }
        #expect(posix_spawn(&pid, program, nil, nil, argv, environ) == 0)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        #expect(status == 0)
        let restored = try Store<CounterValue>(contentsOf: path, reducers: [])
        #expect(restored.version == 41)
        #expect(restored.currentState() == CounterValue(count: 41))
    }

    @Test("an onError that stops the autosave, on the autosave's own queue, stops it")
    func onErrorStops() {
        let folder = temporaryFolder()
        let store = Store(reducers: [counterReducer], state: CounterState())
        let reported = Recorder<StoreError.Kind>()
        let done = DispatchSemaphore(value: 0)
        store.startAutosave(to: folder + "/missing/x.json", policy: AutosavePolicy(everyActions: 1)) {
            [weak store] error in
            reported.append(error.kind)
            store?.stopAutosave()
            done.signal()
        }
        #expect(Autosaver.liveCount == 1)
        store.dispatchAction(CounterAction.increment)
        #expect(done.wait(timeout: .now() + 60) == .success, "onError did not return")
        // The stop's own save failed too, inside onError: not reported again.
        #expect(reported.all == [.io])
        #expect(Autosaver.liveCount == 0)
        #expect(store.autosaver.withLock { $0 } == nil)
        #expect(store.lastAutosaveError == nil)
    }

    @Test("an onError that flushes, on the autosave's own queue, saves without calling itself again")
    func onErrorFlushes() {
        let folder = temporaryFolder()
        let store = Store(reducers: [counterReducer], state: CounterState())
        let reported = Recorder<StoreError.Kind>()
        let done = DispatchSemaphore(value: 0)
        store.startAutosave(to: folder + "/missing/x.json", policy: AutosavePolicy(everyActions: 1)) {
            [weak store] error in
            reported.append(error.kind)
            store?.flushAutosave()
            done.signal()
        }
        store.dispatchAction(CounterAction.increment)
        #expect(done.wait(timeout: .now() + 60) == .success, "onError did not return")
        #expect(reported.all == [.io])
        #expect(store.lastAutosaveError?.kind == .io)
        // Now the folder exists: a flush from outside saves, and clears the error.
        #expect(mkdir(folder + "/missing", 0o755) == 0)
        store.flushAutosave()
        #expect(store.lastAutosaveError == nil)
        #expect(readText(folder + "/missing/x.json")?.contains(#""version":1,"#) == true)
        store.stopAutosave()
        #expect(reported.all == [.io])
        #expect(Autosaver.liveCount == 0)
    }

    @Test("an onError that starts a new autosave, on the old one's queue, replaces it")
    func onErrorRestarts() throws {
        let folder = temporaryFolder()
        let good = folder + "/good.json"
        let store = Store(reducers: [counterReducer], state: CounterState())
        let done = DispatchSemaphore(value: 0)
        store.startAutosave(to: folder + "/missing/x.json", policy: AutosavePolicy(everyActions: 1)) {
            [weak store] _ in
            store?.startAutosave(to: good, policy: AutosavePolicy(everyActions: 1_000))
            done.signal()
        }
        store.dispatchAction(CounterAction.increment)
        #expect(done.wait(timeout: .now() + 60) == .success, "onError did not return")
        #expect(Autosaver.liveCount == 1)
        store.dispatchAction(CounterAction.increment)
        store.flushAutosave()
        #expect(try Store(contentsOf: good, reducers: [counterReducer]).version == 2)
        store.stopAutosave()
        #expect(Autosaver.liveCount == 0)
    }

    @Test("threads starting autosaves at once leave exactly one, and one stop stops it")
    func concurrentStarts() {
        let folder = temporaryFolder()
        for round in 0..<50 {
            let store = Store(reducers: [counterReducer], state: CounterState())
            onThreads(4) { index in
                store.startAutosave(
                    to: "\(folder)/\(round)-\(index).json", policy: AutosavePolicy(everyActions: 1_000))
            }
            #expect(Autosaver.liveCount == 1)
            store.stopAutosave()
            #expect(Autosaver.liveCount == 0)
            #expect(store.autosaver.withLock { $0 } == nil)
        }
        // Every autosave started saved once, when it was replaced or stopped.
        #expect(folderEntries(folder).count == 200)
    }

    @Test("a store freed with unsaved changes saves them at once, and its autosave is freed")
    func droppedStore() throws {
        let path = temporaryFolder() + "/dropped.json"
        weak var saver: Autosaver?
        do {
            let store = Store(reducers: [counterReducer], state: CounterState())
            store.startAutosave(
                to: path, policy: AutosavePolicy(everyActions: 1_000, afterQuiet: .seconds(3600)))
            for _ in 0..<5 { store.dispatchAction(CounterAction.increment) }
            saver = store.autosaver.withLock { $0 }
            #expect(saver != nil)
            #expect(readText(path) == nil)
        }
        #expect(readText(path) == #"{"reduxstore":1,"version":5,"state":{"count":5,"log":[]}}"# + "\n")
        #expect(saver == nil)
        #expect(Autosaver.liveCount == 0)
    }

    @Test("a store freed while its save fails reports the failure on the freeing thread")
    func droppedStoreFailure() {
        let folder = temporaryFolder()
        let reported = Recorder<String>()
        do {
            let store = Store(reducers: [counterReducer], state: CounterState())
            store.startAutosave(to: folder + "/missing/x.json", policy: AutosavePolicy(everyActions: 1_000)) {
                reported.append($0.message)
            }
            store.dispatchAction(CounterAction.increment)
        }
        let message = reported.all.first ?? ""
        #expect(message.hasPrefix("save \(folder)/missing/x.json: create temporary \(folder)/missing/.x.json."), "\(message)")
        #expect(message.hasSuffix(".tmp: No such file or directory"), "\(message)")
        #expect(reported.count == 1)
        #expect(Autosaver.liveCount == 0)
    }

    @Test("flushAutosave inside a reducer while the queue saves every action: no deadlock, and the save follows")
    func flushInsideReducer() throws {
        let path = temporaryFolder() + "/inside.json"
        let box = WeakStore<CounterState>()
        let reducer: Reducer<CounterState> = { state, action in
            counterReducer(&state, action)
            // The autosave's queue may hold its turn and wait for this store's lock meanwhile.
            if case .increment? = action as? CounterAction { box.store?.flushAutosave() }
        }
        let store = Store(reducers: [reducer], state: CounterState())
        box.store = store
        store.startAutosave(to: path, policy: AutosavePolicy(everyActions: 1))
        // On a thread of its own, so that a deadlock is reported instead of hanging the suite.
        let finished = Flag()
        let thread = Thread {
            for _ in 0..<2_000 { store.dispatchAction(CounterAction.increment) }
            finished.raise()
        }
        thread.start()
        #expect(finished.wait(seconds: 120), "dispatching deadlocked against the autosave's queue")
        guard finished.isRaised else { return }
        #expect(waitForSave(path, version: 2_000))
        store.stopAutosave()
        #expect(try Store(contentsOf: path, reducers: [counterReducer]).currentState().count == 2_000)
    }
}
