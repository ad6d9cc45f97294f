// libFuzzer harness: the Inspector functions reduxstore-inspect calls, on arbitrary files.
//
// The input is read three ways:
//  - whole, as a journal (Inspector.summarize, replay into a Store<JSONValue>) and as a saved
//    state or JSON file (JSONDocument(contentsOf:), a JSON Pointer into it, a diff);
//  - split at its first two NUL bytes into a journal, a state and a JSON Pointer (a missing
//    state is `{}`, a missing pointer `""`): the state at several versions is rebuilt from the
//    state and the journal's patches (Inspector.state), the pointer resolved in each, and the
//    diff from the state to each rebuilt one applied back.
// Every call must return or throw a StoreError with words, never trap. What succeeds must hold
// together: a journal's versions are contiguous (last - first + 1 entries), its counts add up,
// a replayed store stands at the last version, a saved state reads as Store(contentsOf:) opens
// it (the same version and state, and no file one way only), a diff applied to its source gives
// its target, and what is printed (JSON, as the CLI prints it) is printed without a trap.
//
// Fuzzing build (scripts/fuzz): -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING; the binary
// takes libFuzzer's options. Plain build: `fuzz-inspector FILE_OR_FOLDER...` runs the harness
// once per file (a folder: each file in it) and exits 0.
import FoundationEssentials
import FuzzSupport
import ReduxStore
import ReduxStoreInspectKit
#if canImport(Glibc)
import Glibc
#endif

/// The temporary folder (in /dev/shm when there is one) and its files.
enum Files {
    static let names = ["whole.journal", "split.journal", "state.json"]
    static let folder: String = {
        var template = Array((access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp").utf8CString)
        template.removeLast()
        template += Array("/reduxstore-fuzz-inspector-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            fatalError("mkdtemp failed")
        }
        let path = String(cString: made)
        atexit {
            for name in Files.names { unlink(Files.folder + "/" + name) }
            rmdir(Files.folder)
        }
        return path
    }()
    static let whole = folder + "/" + names[0]
    static let journal = folder + "/" + names[1]
    static let state = folder + "/" + names[2]
}

func writeFile(_ path: String, _ bytes: UnsafeBufferPointer<UInt8>) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { fatalError("cannot create \(path)") }
    var written = 0
    while written < bytes.count {
        let count = write(fd, bytes.baseAddress! + written, bytes.count - written)
        guard count > 0 else { fatalError("cannot write \(path)") }
        written += count
    }
    close(fd)
}

/// An error must say what went wrong, in one message that names where.
func check(_ error: StoreError, _ call: String) {
    guard !error.message.isEmpty else { fatalError("\(call): an error without words") }
    if getenv("FUZZ_VERBOSE") != nil { print("  \(call): [\(error.kind)] \(error.message)") }
}

/// Prints `value` as the CLI does (sorted keys), which must not trap.
func printed(_ value: some Encodable) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    do {
        _ = try encoder.encode(value)
    } catch {
        fatalError("printing failed: \(error)")
    }
}

/// `diff(from: a, to: b)` applied to `a` must give `b`.
func checkDiff(_ a: JSONValue, _ b: JSONValue) {
    let patch = JSONPatch.diff(from: a, to: b)
    do {
        guard try JSONPatch.apply(patch, to: a) == b else { fatalError("a diff applied to its source differs from its target") }
    } catch {
        fatalError("a diff does not apply to its source: \(error.message)")
    }
}

/// The journal at `path`: summarised, replayed; the summary (nil when it did not read).
func journal(_ path: String) -> Inspector.JournalSummary? {
    let summary: Inspector.JournalSummary
    do {
        summary = try Inspector.summarize(journal: path, progressEvery: 3) { _ in }
    } catch {
        check(error, "summarize")
        return nil
    }
    printed(summary)
    guard summary.identifiers.reduce(0, { $0 + $1.count }) == summary.entries,
          summary.batches <= summary.entriesInBatches, summary.entriesInBatches <= summary.entries,
          summary.notReplayable <= summary.entries, summary.withPatch <= summary.entries
    else { fatalError("the summary's counts do not add up: \(summary)") }
    if let first = summary.firstVersion, let last = summary.lastVersion {
        guard first >= 1, last >= first, last - first == UInt64(summary.entries - 1) else {
            fatalError("versions \(first) to \(last) in \(summary.entries) entries")
        }
    } else if summary.entries != 0 {
        fatalError("\(summary.entries) entries without versions")
    }
    // Replay reads the same journal (JSONActions only: no types are registered).
    do {
        let store = try Store<JSONValue>(
            replaying: path, from: .null, reducers: [{ state, _ in state = .int(1) }], actions: ActionTypes())
        let expected = summary.lastVersion ?? 0
        guard store.version == expected else { fatalError("replayed to version \(store.version), not \(expected)") }
    } catch {
        check(error, "replay")
    }
    return summary
}

/// The document at `path` (nil when it did not read), its value at `pointer` printed.
func document(_ path: String, pointer: String) -> JSONDocument? {
    let read: JSONDocument
    do {
        read = try JSONDocument(contentsOf: path)
    } catch {
        check(error, "readDocument")
        return nil
    }
    printed(read.value)
    resolve(pointer, in: read.value)
    return read
}

func resolve(_ pointer: String, in value: JSONValue) {
    do {
        printed(try value.value(atPointer: pointer))
    } catch {
        check(error, "value(at:)")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []

    // Whole: a journal and a state.
    bytes.withUnsafeBufferPointer { writeFile(Files.whole, $0) }
    _ = journal(Files.whole)
    let whole = document(Files.whole, pointer: "/0")
    if let whole {
        checkDiff(whole.value, .object([:]))
        checkDiff(.array([]), whole.value)
    }
    // A saved state is one for the inspector exactly when it is one for the store, with the
    // same version and state.
    let store = try? Store<JSONValue>(contentsOf: Files.whole, reducers: [])
    if let store {
        guard let whole, whole.version == store.version, whole.value == store.currentState() else {
            fatalError("the store opens a saved state at version \(store.version) that show reads otherwise")
        }
    } else if let version = whole?.version {
        fatalError("show reads a saved state at version \(version) that the store does not open")
    }

    // Split: a journal, a state and a pointer.
    let parts = bytes.split(separator: 0, maxSplits: 2, omittingEmptySubsequences: false)
    let journalBytes = parts[0]
    let stateBytes = parts.count > 1 ? Array(parts[1]) : Array("{}".utf8)
    let pointer = parts.count > 2 ? String(decoding: parts[2], as: UTF8.self) : ""
    Array(journalBytes).withUnsafeBufferPointer { writeFile(Files.journal, $0) }
    stateBytes.withUnsafeBufferPointer { writeFile(Files.state, $0) }
    let summary = journal(Files.journal)
    guard let base = document(Files.state, pointer: pointer) else { return 0 }

    // Versions around the journal's and the base's, and the ends of the range.
    var versions: Set<UInt64> = [0, 1, UInt64.max]
    for version in [summary?.firstVersion, summary?.lastVersion, base.version].compactMap({ $0 }) {
        versions.formUnion([version &- 1, version, version &+ 1])
    }
    if let first = summary?.firstVersion, let last = summary?.lastVersion { versions.insert(first + (last - first) / 2) }
    for version in versions.sorted() {
        do {
            let state = try Inspector.state(at: version, from: base, journal: Files.journal, progressEvery: 2) { _ in }
            printed(state)
            resolve(pointer, in: state)
            checkDiff(base.value, state)
        } catch {
            check(error, "state(at: \(version))")
        }
    }
    return 0
}

// MARK: - Entry point

fuzzMain("fuzz-inspector") { data, size in fuzz(data, size) }
