// libFuzzer harness: rdx_store_open on arbitrary file bytes.
//
// The input is written to a temporary file and opened with rdx_store_open. If it does not open,
// the call must have said why (RDX_ECORRUPT, or RDX_ELIMIT for nesting past the limit) and left
// the file untouched. If it opens: a C snapshot, one action through a C reducer, a save to
// another file, and the saved file opened again, which must give back the same state and version.
// (What opened always saves after one action, but at version 2^63 - 2: the next one is past what
// a file holds, and that save must be refused with RDX_ELIMIT, writing nothing.)
// The same bytes are opened as a Swift `Store<JSONValue>` too, which must agree on whether the
// file is a saved state.
//
// Fuzzing build (scripts/fuzz): -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING; the binary
// takes libFuzzer's options. Plain build: `fuzz-open-file FILE_OR_FOLDER...` runs the harness
// once per file (a folder: each file in it) and exits 0.
import CJSONC
import CReduxStoreAPI
import FuzzSupport
import ReduxStore
import ReduxStoreC
#if canImport(Glibc)
import Glibc
#endif

/// The temporary folder (in /dev/shm when there is one: saves fsync) and its two files.
enum Files {
    static let folder: String = {
        var template = Array((access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp").utf8CString)
        template.removeLast()
        template += Array("/reduxstore-fuzz-open-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            fatalError("mkdtemp failed")
        }
        let path = String(cString: made)
        atexit {
            for name in ["input.json", "saved.json"] {
                unlink(Files.folder + "/" + name)
            }
            rmdir(Files.folder)
        }
        return path
    }()
    static let input = folder + "/input.json"
    static let saved = folder + "/saved.json"
}

func writeFile(_ path: String, _ data: UnsafePointer<UInt8>?, _ size: Int) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { fatalError("cannot create \(path)") }
    var written = 0
    while written < size, let data {
        let count = write(fd, data + written, size - written)
        guard count > 0 else { fatalError("cannot write \(path)") }
        written += count
    }
    close(fd)
}

func fileEquals(_ path: String, _ data: UnsafePointer<UInt8>?, _ size: Int) -> Bool {
    guard let stream = fopen(path, "rb") else { return false }
    defer { fclose(stream) }
    var bytes = [UInt8](repeating: 0, count: size + 1)
    let read = fread(&bytes, 1, size + 1, stream)
    guard read == size else { return false }
    return size == 0 || memcmp(bytes, data!, size) == 0
}

/// The one reducer: `touch` counts in the state when it is an object or an array.
nonisolated(unsafe) let touchReducer: rdx_reduce_fn = { state, identifier, payload, _ in
    guard let identifier, strcmp(identifier, "touch") == 0, let state else { return }
    let amount = json_object_get_int64(payload)
    switch json_object_get_type(state) {
    case json_type_object:
        var touched: OpaquePointer?
        if json_object_object_get_ex(state, "touched", &touched) != 0,
           json_object_get_type(touched) == json_type_int {
            json_object_set_int64(touched, json_object_get_int64(touched) &+ amount)
        } else {
            json_object_object_add(state, "touched", json_object_new_int64(amount))
        }
    case json_type_array:
        json_object_array_add(state, json_object_new_int64(amount))
    default:
        break
    }
}

func lastError() -> String { String(cString: rdx_last_error()) }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    writeFile(Files.input, data, size)
    var reducers = [rdx_reducer(reduce: touchReducer, context: nil, identifier: nil)]
    var status = RDX_OK
    let store = rdx_store_open(Files.input, &reducers, reducers.count, &status)

    // A Swift store of JSONValue must agree on whether this is a saved state.
    var swiftError = ""
    let swiftStore: Store<JSONValue>?
    do {
        swiftStore = try Store<JSONValue>(contentsOf: Files.input, reducers: [])
    } catch {
        swiftStore = nil
        swiftError = error.message
        if getenv("FUZZ_VERBOSE") != nil { print("  Store<JSONValue>: [\(error.kind)] \(swiftError)") }
    }
    if let swiftStore { _ = swiftStore.currentState() }

    guard let store else {
        guard status == RDX_ECORRUPT || status == RDX_ELIMIT else {
            fatalError("rdx_store_open: unexpected status \(status.rawValue): \(lastError())")
        }
        guard !lastError().isEmpty else { fatalError("rdx_store_open failed with no words") }
        guard fileEquals(Files.input, data, size) else { fatalError("a failed open changed the file") }
        // The one difference: a null state is a JSONValue, but not a C store's state.
        guard swiftStore == nil || lastError().contains("null cannot be a C store's state") else {
            fatalError("Store<JSONValue> opened what rdx_store_open refused")
        }
        return 0
    }
    guard status == RDX_OK else { fatalError("rdx_store_open returned a store with status \(status.rawValue)") }
    guard swiftStore != nil else {
        fatalError("rdx_store_open opened what Store<JSONValue> refused: \(swiftError)")
    }
    defer { rdx_store_release(store) }

    // Snapshot, one action, snapshot.
    let version = rdx_store_version(store)
    // (A null state is a NULL snapshot.)
    let before = rdx_store_current_state(store)
    _ = json_object_to_json_string(before)
    json_object_put(before)
    let payload = json_object_new_int64(Int64(size))
    let dispatched = rdx_store_dispatch_action(store, "touch", payload)
    json_object_put(payload)
    guard dispatched == RDX_OK else { fatalError("dispatch failed: \(lastError())") }
    guard rdx_store_version(store) == version &+ 1 else {
        fatalError("version \(rdx_store_version(store)) after one action from \(version)")
    }
    let after = rdx_store_current_state(store)
    defer { json_object_put(after) }

    // Save, and open what was saved: the same state and version.
    unlink(Files.saved)
    let saved = rdx_store_save(store, Files.saved)
    if version &+ 1 == UInt64(Int64.max) {
        // The one state that opened but cannot be saved after one action: its version, 2^63 - 1,
        // is past what a file holds. Refused, and nothing written.
        guard saved == RDX_ELIMIT else { fatalError("save of version 2^63 - 1: status \(saved.rawValue)") }
        guard access(Files.saved, F_OK) != 0 else { fatalError("a refused save wrote the file") }
        return 0
    }
    guard saved == RDX_OK else { fatalError("save failed: \(lastError())") }
    if getenv("FUZZ_VERBOSE") != nil, let stream = fopen(Files.saved, "rb") {
        var line = [CChar](repeating: 0, count: 1 << 16)
        while fgets(&line, Int32(line.count), stream) != nil {
            line.withUnsafeBufferPointer { print("  saved: \(String(cString: $0.baseAddress!))", terminator: "") }
        }
        fclose(stream)
    }
    guard let reopened = rdx_store_open(Files.saved, nil, 0, &status) else {
        fatalError("a saved file does not open: \(lastError())")
    }
    defer { rdx_store_release(reopened) }
    guard rdx_store_version(reopened) == version &+ 1 else {
        fatalError("saved version \(version &+ 1), reopened \(rdx_store_version(reopened))")
    }
    let again = rdx_store_current_state(reopened)
    defer { json_object_put(again) }
    guard json_object_equal(after, again) != 0 else {
        fatalError("""
            the reopened state differs from the saved one:
            saved:    \(String(cString: json_object_to_json_string(after)))
            reopened: \(String(cString: json_object_to_json_string(again)))
            """)
    }
    return 0
}

// MARK: - Entry point

fuzzMain("fuzz-open-file") { data, size in fuzz(data, size) }
