#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reading a whole regular file, with a bound, without ever blocking.
enum RegularFile {
    /// What ``read(_:maximumSize:)`` found.
    enum Contents {
        case bytes([UInt8])
        /// The file holds more than the bound: nothing of it was kept.
        case larger(than: Int)
    }

    /// The bytes of the regular file at `path` (a symbolic link to one is followed), if it
    /// holds at most `maximumSize` bytes.
    ///
    /// Anything else is refused before a byte is read: a folder, a device (`/dev/zero` would
    /// read until memory runs out), a FIFO or a socket (a read would wait for a writer). The
    /// file is opened with `O_NONBLOCK`, so even a FIFO put in its place between the check and
    /// the open cannot block; the open file is checked again. Reads at most `maximumSize + 1`
    /// bytes, so a file that grows while it is read cannot take more memory than that.
    ///
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/io``: `open PATH: REASON`.
    static func read(_ path: String, maximumSize: Int) throws(StoreError) -> Contents {
        let (fd, size) = try openForReading(path)
        defer { close(fd) }
        if size > maximumSize { return .larger(than: maximumSize) }

        let capacity = min(size, maximumSize) + 1
        var bytes = [UInt8](repeating: 0, count: capacity)
        var used = 0
        while true {
            if used == bytes.count {
                // The file grew since fstat: grow up to one byte past the bound.
                if used > maximumSize { return .larger(than: maximumSize) }
                bytes.append(contentsOf: repeatElement(0, count: min(used, maximumSize + 1 - used)))
            }
            let count = try bytes.withUnsafeMutableBytes { buffer in
                Result { () throws(StoreError) in
                    try readSome(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[used...]), path)
                }
            }.get()
            if count == 0 { break }
            used += count
        }
        if used > maximumSize { return .larger(than: maximumSize) }
        bytes.removeSubrange(used...)
        return .bytes(bytes)
    }

    /// Opens the regular file at `path` to be read in pieces (a journal, which can be larger
    /// than memory), refusing what ``read(_:maximumSize:)`` refuses, the same way: its
    /// descriptor, which the caller closes, and its size when opened.
    ///
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/io``: `open PATH: REASON`.
    static func openForReading(_ path: String) throws(StoreError) -> (fd: Int32, size: Int) {
        var info = stat()
        guard stat(path, &info) == 0 else { throw StoreError.system("open \(path)") }
        try requireRegular(info, path)
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else { throw StoreError.system("open \(path)") }
        guard fstat(fd, &info) == 0 else {
            let error = StoreError.system("open \(path)")
            close(fd)
            throw error
        }
        do {
            try requireRegular(info, path)
        } catch {
            close(fd)
            throw error
        }
        return (fd, Int(info.st_size))
    }

    /// Reads up to `buffer.count` bytes of `fd` (opened from `path`) into `buffer`, again after
    /// an interruption: how many, 0 at the end of the file.
    ///
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/io``: `read PATH: REASON`.
    static func readSome(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, _ path: String) throws(StoreError) -> Int {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        while true {
            let count = systemRead(fd, base, buffer.count)
            if count >= 0 { return count }
            if errno != EINTR { throw StoreError.system("read \(path)") }
        }
    }

    private static func requireRegular(_ info: stat, _ path: String) throws(StoreError) {
        let type = info.st_mode & S_IFMT
        guard type == S_IFREG else {
            throw StoreError(.io, "open \(path): not a regular file (\(kindName(type)))")
        }
    }

    /// A file type in words: `a folder`, `a character device`…
    static func kindName(_ type: mode_t) -> String {
        switch type {
        case S_IFREG: "a regular file"
        case S_IFDIR: "a folder"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFIFO: "a FIFO"
        case S_IFSOCK: "a socket"
        case S_IFLNK: "a symbolic link"
        default: "an unknown kind of file"
        }
    }
}

/// `read(2)`, by a name the enum's own `read` does not shadow.
private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(fd, buffer, count)
}

/// The process's file size limit (`RLIMIT_FSIZE`, `ulimit -f`). A write past it is not an error
/// a caller can report: by default the kernel ends the process with `SIGXFSZ`. So the files this
/// library writes (saves, the journal) ask first, and a write that would pass the limit fails
/// with words instead, as a full disk does.
enum FileSizeLimit {
    /// How many bytes may still be written at `offset` of a file, or nil when there is no limit.
    static func room(at offset: Int) -> Int? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else {
            return nil
        }
        return max(0, Int(clamping: limit.rlim_cur) - offset)
    }

    /// Why a file of `size` bytes cannot be written, when `room` (``room(at:)``) is less.
    static func refusal(_ size: Int, room: Int, at offset: Int) -> String {
        "the file would grow to \(offset + size) bytes, past the process's file size limit of "
            + "\(offset + room) bytes (RLIMIT_FSIZE, ulimit -f)"
    }
}
