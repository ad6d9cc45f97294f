// Files and folders for the tests that save and open stores.
#if canImport(Glibc)
import Glibc
#endif

/// A fresh folder under /tmp for one test.
public func temporaryFolder() -> String {
    var template = Array("/tmp/reduxstore-test-XXXXXX".utf8CString)
    let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    precondition(made != nil, "mkdtemp failed")
    return String(cString: made!)
}

/// The file's bytes as text, or nil when it cannot be read.
public func readText(_ path: String) -> String? {
    guard let file = fopen(path, "rb") else { return nil }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = fread(&buffer, 1, buffer.count, file)
        if count == 0 { break }
        bytes.append(contentsOf: buffer[0..<count])
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// Writes `text`'s UTF-8 bytes to `path`.
public func writeText(_ text: String, to path: String) {
    writeBytes(Array(text.utf8), to: path)
}

/// Writes `bytes` to `path`, as they are (malformed UTF-8 too).
public func writeBytes(_ bytes: [UInt8], to path: String) {
    let file = fopen(path, "wb")!
    _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
    fclose(file)
}

/// The names in `folder`, sorted, without . and ...
public func folderEntries(_ folder: String) -> [String] {
    guard let directory = opendir(folder) else { return [] }
    defer { closedir(directory) }
    var names: [String] = []
    while let entry = readdir(directory) {
        // The name in place: a dirent is only as long as its name, so copying the whole
        // `d_name` field could read past the end of the buffer.
        let field = UnsafeRawPointer(entry) + MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        let name = String(cString: field.assumingMemoryBound(to: CChar.self))
        if name != "." && name != ".." { names.append(name) }
    }
    return names.sorted()
}

/// The path of an executable of this package built beside the running test binary (the test
/// binary may sit inside a bundle folder, name.xctest/...: the walk goes up to the bin folder).
public func siblingExecutable(_ name: String) -> String {
    var buffer = [CChar](repeating: 0, count: 4096)
    let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    precondition(length > 0, "readlink /proc/self/exe failed")
    var path = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    while let last = path.last, last != "/" { path.removeLast() }
    // Inside a bundle (…/name.xctest/…): from the first ".xctest/" back to the folder above it.
    let parts = path.split(separator: "/", omittingEmptySubsequences: false)
    if let bundle = parts.firstIndex(where: { $0.hasSuffix(".xctest") }) {
        path = parts[..<bundle].joined(separator: "/") + "/"
    }
    return path + name
}
