@_spi(Bindings) import ReduxStore
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

/// A state with a value a reducer may make unsavable.
private struct Measure: Codable, Sendable {
    var value: Double
    var text: [String]
}

private struct SetValue: Action { let value: Double; var identifier: String { "measure.set" } }
private struct AddText: Action { let text: String; var identifier: String { "measure.text" } }

private let measureReducer: Reducer<Measure> = { state, action in
    if let action = action as? SetValue { state.value = action.value }
    if let action = action as? AddText { state.text.append(action.text) }
}

/// A reducer that wraps the JSON state in one more array for each action.
private let wrapReducer: Reducer<JSONValue> = { state, _ in state = .array([state]) }

/// `mode & 0o7777` and the file type of `path` (not following a symbolic link).
private func fileStatus(_ path: String) -> (type: mode_t, permissions: mode_t)? {
    var info = stat()
    guard lstat(path, &info) == 0 else { return nil }
    return (info.st_mode & S_IFMT, info.st_mode & 0o7777)
}

/// The byte `count` in a string of `a`s.
private func text(bytes count: Int) -> String { String(repeating: "a", count: count) }

@Suite("Persistence: what save writes, open reads; what save refuses, it leaves as it was")
struct StoreSaveLimitsTests {
    /// Saves a first state to a fresh folder, and returns the path and the file's text.
    private func savedFirst<State>(_ store: Store<State>) throws -> (String, String) {
        let path = temporaryFolder() + "/state.json"
        try store.save(to: path)
        return (path, readText(path)!)
    }

    @Test("a state over 64 MiB of text is refused with a limit error; the old file stays")
    func tooLarge() throws {
        let store = Store(reducers: [measureReducer], state: Measure(value: 1, text: []))
        let (path, before) = try savedFirst(store)
        // 65 strings of 1 MiB: 65 MiB of text.
        let chunk = text(bytes: 1 << 20)
        for _ in 0..<65 { store.dispatchAction(AddText(text: chunk)) }
        let error = #expect(throws: StoreError.self) { try store.save(to: path) }
        #expect(error?.kind == .limit)
        #expect(error?.message.hasPrefix("save \(path): the saved state would be 68157") == true,
                "\(error?.message.prefix(200) ?? "")")
        #expect(error?.message.hasSuffix("more than the limit of 67108864 bytes a saved state is read with") == true)
        #expect(readText(path) == before)
        #expect(folderEntries(folderOf(path)) == ["state.json"])
    }

    @Test("a state just under 64 MiB of text saves and opens")
    func largestSize() throws {
        let path = temporaryFolder() + "/state.json"
        // The file: {"reduxstore":1,"version":1,"state":{"value":1.0,"text":["…"]}} and a newline.
        let frame = #"{"reduxstore":1,"version":1,"state":{"value":1.0,"text":[""]}}"#.utf8.count + 1
        let store = Store(reducers: [measureReducer], state: Measure(value: 1, text: []))
        store.dispatchAction(AddText(text: text(bytes: StoreLimits.maximumJSONTextSize - frame)))
        try store.save(to: path)
        let restored = try Store<Measure>(contentsOf: path, reducers: [])
        #expect(restored.version == 1)
        #expect(restored.currentState().text[0].utf8.count == 67_108_801)
        store.dispatchAction(AddText(text: ""))
        let error = #expect(throws: StoreError.self) { try store.save(to: path) }
        #expect(error?.kind == .limit)
        #expect(try Store<Measure>(contentsOf: path, reducers: []).version == 1)
    }

    @Test("nesting made by a reducer: 256 levels save and open, 257 are refused; the old file stays")
    func nesting() throws {
        let store = Store(reducers: [wrapReducer], state: JSONValue.int(1))
        for _ in 0..<256 { store.dispatchAction(JSONAction(identifier: "wrap")) }
        let (path, before) = try savedFirst(store)
        let opened = try Store<JSONValue>(contentsOf: path, reducers: [])
        #expect(opened.version == 256)
        // The copy a reader gets holds the scalar in the deepest array, as the file does.
        let copy = try opened.snapshot()
        #expect(copy == (try store.snapshot()))
        #expect(opened.currentState() == copy)
        #expect(try opened.jsonSnapshot().value == copy)
        store.dispatchAction(JSONAction(identifier: "wrap"))
        let error = #expect(throws: StoreError.self) { try store.save(to: path) }
        #expect(error?.kind == .limit)
        #expect(error?.message.hasPrefix("save \(path): ") == true)
        #expect(readText(path) == before)
        for _ in 0..<43 { store.dispatchAction(JSONAction(identifier: "wrap")) }
        #expect(store.version == 300)
        #expect(throws: StoreError.self) { try store.save(to: path) }
        #expect(readText(path) == before)
    }

    @Test("a NaN or an infinity is refused with an encode error naming it; the old file stays",
          arguments: [Double.nan, .infinity, -.infinity])
    func nonFinite(value: Double) throws {
        let store = Store(reducers: [measureReducer], state: Measure(value: 1, text: []))
        let (path, before) = try savedFirst(store)
        store.dispatchAction(SetValue(value: value))
        let error = #expect(throws: StoreError.self) { try store.save(to: path) }
        #expect(error?.kind == .encode)
        #expect(error?.message.hasPrefix("save \(path): value: ") == true, "\(error?.message ?? "")")
        #expect(readText(path) == before)
        #expect(folderEntries(folderOf(path)) == ["state.json"])
    }

    @Test("version 2^63 - 2 saves and opens; 2^63 - 1 is refused with a limit error; the old file stays")
    func largestVersion() throws {
        let store = Store(
            reducers: [counterValueReducer], adopting: CounterValue(count: 3),
            version: 9_223_372_036_854_775_805)
        store.dispatchAction(CounterAction.increment)
        let (path, before) = try savedFirst(store)
        #expect(before == #"{"reduxstore":1,"version":9223372036854775806,"state":{"count":4}}"# + "\n")
        #expect(try Store<CounterValue>(contentsOf: path, reducers: []).version == 9_223_372_036_854_775_806)
        store.dispatchAction(CounterAction.increment)
        let error = #expect(throws: StoreError.self) { try store.save(to: path) }
        #expect(error?.kind == .limit)
        #expect(error?.message == "save \(path): version 9223372036854775807 cannot be saved: a saved version is a whole number from 0 to 2^63 - 2")
        #expect(readText(path) == before)
    }
}

/// The folder part of a path.
private func folderOf(_ path: String) -> String {
    String(path[..<path.lastIndex(of: "/")!])
}

@Suite("Persistence: regular files only, modes kept, unique temporaries")
struct StoreFileSystemTests {
    private func savedStore() -> Store<CounterState> {
        let store = Store(reducers: [counterReducer], state: CounterState())
        store.dispatchAction(CounterAction.add(5))
        return store
    }

    @Test("open of /dev/zero is an io error at once, not a read until memory runs out")
    func openDevice() {
        let error = #expect(throws: StoreError.self) {
            try Store(contentsOf: "/dev/zero", reducers: [counterReducer])
        }
        #expect(error?.kind == .io)
        #expect(error?.message == "open /dev/zero: not a regular file (a character device)")
    }

    @Test("open of a FIFO is an io error at once, not a wait for a writer")
    func openFIFO() {
        let path = temporaryFolder() + "/fifo"
        #expect(mkfifo(path, 0o600) == 0)
        let error = #expect(throws: StoreError.self) {
            try Store(contentsOf: path, reducers: [counterReducer])
        }
        #expect(error?.kind == .io)
        #expect(error?.message == "open \(path): not a regular file (a FIFO)")
        #expect(fileStatus(path)?.type == S_IFIFO)
    }

    @Test("open of a folder is an io error")
    func openFolder() {
        let path = temporaryFolder()
        let error = #expect(throws: StoreError.self) {
            try Store(contentsOf: path, reducers: [counterReducer])
        }
        #expect(error?.message == "open \(path): not a regular file (a folder)")
    }

    @Test("a file larger than 64 MiB is corrupt, refused before it is read")
    func openTooLarge() {
        let path = temporaryFolder() + "/big.json"
        let fd = open(path, O_WRONLY | O_CREAT, 0o644)
        #expect(ftruncate(fd, off_t(StoreLimits.maximumJSONTextSize + 1)) == 0)
        close(fd)
        let error = #expect(throws: StoreError.self) {
            try Store(contentsOf: path, reducers: [counterReducer])
        }
        #expect(error?.kind == .corrupt)
        #expect(error?.message == "\(path): not a saved state: the file is larger than 67108864 bytes, the most a saved state may be")
    }

    @Test("a symbolic link to a saved file opens")
    func openThroughLink() throws {
        let folder = temporaryFolder()
        try savedStore().save(to: folder + "/real.json")
        #expect(symlink("real.json", folder + "/link.json") == 0)
        let restored = try Store(contentsOf: folder + "/link.json", reducers: [counterReducer])
        #expect(restored.version == 1)
        #expect(restored.currentState().count == 5)
    }

    @Test("save keeps the mode of the file it replaces", arguments: [0o600 as mode_t, 0o640, 0o444, 0o755])
    func keepsMode(mode: mode_t) throws {
        let path = temporaryFolder() + "/state.json"
        writeText("old", to: path)
        #expect(chmod(path, mode) == 0)
        try savedStore().save(to: path)
        #expect(fileStatus(path)?.permissions == mode)
        #expect(try Store(contentsOf: path, reducers: [counterReducer]).version == 1)
    }

    @Test("a new file gets 0666 less the umask")
    func newFileMode() throws {
        let path = temporaryFolder() + "/state.json"
        let mask = umask(0o027)
        defer { umask(mask) }
        try savedStore().save(to: path)
        #expect(fileStatus(path)?.permissions == 0o640)
    }

    @Test("save over a character device is refused; the device stays")
    func saveOverDevice() throws {
        let folder = temporaryFolder()
        let path = folder + "/null"
        // The same device as /dev/null (1, 3), made where the test may harm nothing.
        guard mknod(path, S_IFCHR | 0o666, dev_t(0x103) /* makedev(1, 3) */) == 0 else {
            // Not allowed here (not root): /dev/null itself is the device, and is only read.
            let error = #expect(throws: StoreError.self) { try savedStore().save(to: "/dev/null") }
            #expect(error?.message == "save /dev/null: the target is a character device, not a regular file; save replaces regular files only")
            #expect(fileStatus("/dev/null")?.type == S_IFCHR)
            return
        }
        let error = #expect(throws: StoreError.self) { try savedStore().save(to: path) }
        #expect(error?.kind == .io)
        #expect(error?.message == "save \(path): the target is a character device, not a regular file; save replaces regular files only")
        #expect(fileStatus(path)?.type == S_IFCHR)
        #expect(folderEntries(folder) == ["null"])
    }

    @Test("save over a FIFO or a folder is refused; it stays")
    func saveOverFIFOOrFolder() throws {
        let folder = temporaryFolder()
        #expect(mkfifo(folder + "/fifo", 0o600) == 0)
        #expect(mkdir(folder + "/sub", 0o755) == 0)
        let fifoError = #expect(throws: StoreError.self) { try savedStore().save(to: folder + "/fifo") }
        #expect(fifoError?.message == "save \(folder)/fifo: the target is a FIFO, not a regular file; save replaces regular files only")
        let folderError = #expect(throws: StoreError.self) { try savedStore().save(to: folder + "/sub") }
        #expect(folderError?.kind == .io)
        #expect(fileStatus(folder + "/fifo")?.type == S_IFIFO)
        #expect(fileStatus(folder + "/sub")?.type == S_IFDIR)
        #expect(folderEntries(folder) == ["fifo", "sub"])
    }

    @Test("save over a symbolic link is refused, to a file or to nothing; the link and its file stay")
    func saveOverLink() throws {
        let folder = temporaryFolder()
        writeText("precious", to: folder + "/precious.txt")
        #expect(symlink("precious.txt", folder + "/link.json") == 0)
        #expect(symlink("nothing.json", folder + "/dangling.json") == 0)
        let error = #expect(throws: StoreError.self) { try savedStore().save(to: folder + "/link.json") }
        #expect(error?.kind == .io)
        #expect(error?.message == "save \(folder)/link.json: the target is a symbolic link to a regular file; save replaces regular files only (save to the path the link names)")
        let dangling = #expect(throws: StoreError.self) { try savedStore().save(to: folder + "/dangling.json") }
        #expect(dangling?.message == "save \(folder)/dangling.json: the target is a symbolic link to nothing; save replaces regular files only (save to the path the link names)")
        #expect(readText(folder + "/precious.txt") == "precious")
        #expect(fileStatus(folder + "/link.json")?.type == S_IFLNK)
        #expect(folderEntries(folder) == ["dangling.json", "link.json", "precious.txt"])
    }

    @Test("a temporary left by a process that died is removed by the next save; one a live save holds stays")
    func strayTemporaries() throws {
        let folder = temporaryFolder()
        let path = folder + "/state.json"
        let stray = folder + "/.state.json.abcdefghijkl.tmp"
        let held = folder + "/.state.json.mnopqrstuvwx.tmp"
        let other = folder + "/.other.json.abcdefghijkl.tmp"
        let notOurs = folder + "/.state.json.notatemporary.tmp"
        for name in [stray, held, other, notOurs] { writeText("{\"half", to: name) }
        // A save in progress holds an flock on its temporary.
        let holder = open(held, O_RDONLY)
        defer { close(holder) }
        #expect(flock(holder, LOCK_EX) == 0)
        try savedStore().save(to: path)
        #expect(folderEntries(folder) == [
            ".other.json.abcdefghijkl.tmp", ".state.json.mnopqrstuvwx.tmp",
            ".state.json.notatemporary.tmp", "state.json",
        ])
        // Once its save is over (the lock released), a later save removes it.
        #expect(flock(holder, LOCK_UN) == 0)
        try savedStore().save(to: path)
        #expect(folderEntries(folder) == [
            ".other.json.abcdefghijkl.tmp", ".state.json.notatemporary.tmp", "state.json",
        ])
    }

    @Test("a refused save leaves no temporary behind")
    func refusedLeavesNothing() throws {
        let folder = temporaryFolder()
        let store = Store(reducers: [measureReducer], state: Measure(value: 1, text: []))
        try store.save(to: folder + "/state.json")
        store.dispatchAction(SetValue(value: .nan))
        #expect(throws: StoreError.self) { try store.save(to: folder + "/state.json") }
        #expect(throws: StoreError.self) { try store.save(to: folder + "/new.json") }
        #expect(folderEntries(folder) == ["state.json"])
    }

    @Test("threads saving one path while another opens it: every save succeeds, every open finds a whole state")
    func concurrentSaves() throws {
        let folder = temporaryFolder()
        let path = folder + "/state.json"
        let stores = (0..<4).map { index in
            Store(reducers: [counterReducer], state: CounterState(count: index * 1_000_000))
        }
        try stores[0].save(to: path)
        let failures = Recorder<String>()
        let opens = Tally()
        let writersDone = Tally()
        onThreads(5) { index in
            if index < 4 {
                let store = stores[index]
                for _ in 0..<100 {
                    store.dispatchAction(CounterAction.increment)
                    do { try store.save(to: path) } catch { failures.append("save: \(error)") }
                }
                writersDone.increment()
            } else {
                while writersDone.count < 4 || opens.count == 0 {
                    do {
                        let opened = try Store(contentsOf: path, reducers: [counterReducer])
                        // Each writer's count is its base plus its version.
                        let count = opened.currentState().count
                        if count % 1_000_000 != Int(opened.version) { failures.append("torn: \(count) at \(opened.version)") }
                        opens.increment()
                    } catch {
                        failures.append("open: \(error)")
                    }
                }
            }
        }
        #expect(failures.all == [])
        #expect(folderEntries(folder) == ["state.json"])
        #expect(try Store(contentsOf: path, reducers: [counterReducer]).version == 100)
    }
}
