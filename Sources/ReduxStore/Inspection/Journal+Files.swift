internal import CJSONC
#if canImport(Glibc)
import Glibc
#endif

extension Journal {
    // MARK: Files

    /// Opens (appending to) the journal file and takes its lock. A last line left torn by a
    /// crash is cut off first, so every line in the file is whole.
    ///
    /// Only a regular file is opened, and opening never blocks: a FIFO or a device is refused
    /// (before the open, and after it: the open is non-blocking, so one put in the file's place
    /// meanwhile is refused too). A file another journal holds, in this process or another, is
    /// refused: two writers would write their lines over each other's.
    func open() throws(StoreError) {
        // The path may be renamed away (a rotation by the journal that held it) between the open
        // and the lock: then the lock is on a file that is no longer the journal, and it is
        // opened again.
        for _ in 0..<16 {
            var info = stat()
            if stat(path, &info) == 0 { try Self.requireRegular(info, path) }
            let fd = Glibc.open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0o644)
            guard fd >= 0 else {
                throw StoreError(.io, "journal \(path): cannot open: \(String(cString: strerror(errno)))")
            }
            do throws(StoreError) {
                guard fstat(fd, &info) == 0 else { throw StoreError.system("journal \(path): fstat") }
                try Self.requireRegular(info, path)
                while flock(fd, LOCK_EX | LOCK_NB) != 0 {
                    if errno == EINTR { continue }
                    if errno == EWOULDBLOCK {
                        throw StoreError(
                            .io,
                            "journal \(path): in use by another journal (of this process or another): "
                                + "two journals on one file would write over each other's lines")
                    }
                    throw StoreError.system("journal \(path): flock")
                }
                var now = stat()
                if stat(path, &now) != 0 || now.st_ino != info.st_ino || now.st_dev != info.st_dev {
                    _ = close(fd)
                    continue
                }
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
                var length = Int(info.st_size)
                let end = try lastLineEnd(fd, length: length)
                if end != length {
                    guard ftruncate(fd, off_t(end)) == 0 else {
                        throw StoreError.system("journal \(path): cannot cut off its torn last line")
                    }
                    length = end
                }
                try requireLaterVersions(fd, end: length)
                file = fd
                size = length
                openedSize = length
                linesInFile = 0
                return
            } catch {
                _ = close(fd)
                throw error
            }
        }
        throw StoreError(.io, "journal \(path): the file kept being replaced while it was opened")
    }

    /// Refuses a file whose last line (ending at `end`) is not a journal's, or records a version
    /// the first line this journal writes would not come after: another store's journal, or this
    /// store's from a later run. Appended to, the file would go back in versions, which no
    /// reader takes (what the file holds is whole and in order).
    private func requireLaterVersions(_ fd: Int32, end: Int) throws(StoreError) {
        guard end > 0 else { return }
        let start = try lastLineEnd(fd, length: end - 1)
        let prefix = Array("{\"version\":".utf8)
        var head = [UInt8](repeating: 0, count: min(prefix.count + 20, end - start))
        let read = head.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, $0.count, off_t(start)) }
        guard read == head.count else {
            throw StoreError(.io, "journal \(path): cannot read its last line: \(String(cString: strerror(errno)))")
        }
        let digits = head.dropFirst(prefix.count).prefix { $0 >= 0x30 && $0 <= 0x39 }
        guard head.starts(with: prefix), let last = UInt64(String(decoding: digits, as: UTF8.self)) else {
            throw StoreError(
                .io, "journal \(path): its last line is not a journal's (it does not begin with {\"version\":N}): "
                    + "a journal appends only to a journal")
        }
        let next = state.withLock { $0.written } &+ 1
        guard last < next else {
            throw StoreError(
                .io, "journal \(path): its last line is version \(last), and this store's next action is version "
                    + "\(next): appended, the file would go back in versions. It is another store's journal, or "
                    + "this store's from a later run: start the journal on another path")
        }
    }

    private static func requireRegular(_ info: stat, _ path: String) throws(StoreError) {
        let type = info.st_mode & S_IFMT
        guard type == S_IFREG else {
            throw StoreError(.io, "journal \(path): not a regular file (\(RegularFile.kindName(type)))")
        }
    }

    /// The offset just past the file's last newline (0 if it has none): `length` when its last
    /// line is whole. Reads backwards in chunks that double, from 64 KiB to 16 MiB, so a torn line
    /// of any length costs a few reads.
    private func lastLineEnd(_ fd: Int32, length: Int) throws(StoreError) -> Int {
        var end = length
        var chunk = 1 << 16
        var buffer: [UInt8] = []
        while end > 0 {
            let count = min(chunk, end)
            if buffer.count < count { buffer = [UInt8](repeating: 0, count: count) }
            var done = 0
            while done < count {
                let read = buffer.withUnsafeMutableBytes {
                    pread(fd, $0.baseAddress! + done, count - done, off_t(end - count + done))
                }
                if read < 0 && errno == EINTR { continue }
                guard read > 0 else {
                    throw StoreError(
                        .io, "journal \(path): cannot read its last line: \(read < 0 ? String(cString: strerror(errno)) : "the file shrank")")
                }
                done += read
            }
            let newline = buffer.withUnsafeBufferPointer { bytes -> Int? in
                var index = count - 1
                let base = bytes.baseAddress!
                while index >= 0 && base[index] != 0x0A { index -= 1 }
                return index >= 0 ? index : nil
            }
            if let newline { return end - count + newline + 1 }
            end -= count
            chunk = min(chunk * 2, 1 << 24)
        }
        return 0
    }

    /// Syncs and closes the file (which releases its lock). A sync that fails (the disk could
    /// not take lines the writes had handed to the system) is counted as a failed write.
    func closeFile() {
        guard file >= 0 else { return }
        if fsync(file) != 0 {
            let reason = "fsync failed: \(String(cString: strerror(errno))): lines written since the last sync may not be on disk"
            state.withLock { shared in
                if shared.unwritten == nil {
                    shared.unwritten = Loss(reason: reason, count: 0, first: shared.written, last: shared.written)
                }
            }
        }
        _ = close(file)
        file = -1
    }

    /// `journal` → `journal.1` → … → `journal.<maximumFiles>` (the last one deleted). The file is
    /// renamed while this journal still holds it (its lock), then the new one opened.
    func rotate() throws(StoreError) {
        if options.maximumFiles == 0 {
            _ = unlink(path)
        } else {
            // A rename that fails for another reason than a missing file stops the rotation
            // before `path` is renamed over a rotated file that could not move.
            if unlink("\(path).\(options.maximumFiles)") != 0 && errno != ENOENT {
                throw StoreError.system("journal \(path): cannot delete \(path).\(options.maximumFiles) to rotate")
            }
            var index = options.maximumFiles - 1
            while index >= 1 {
                if rename("\(path).\(index)", "\(path).\(index + 1)") != 0 && errno != ENOENT {
                    throw StoreError.system("journal \(path): cannot rotate \(path).\(index) to \(path).\(index + 1)")
                }
                index -= 1
            }
            guard rename(path, "\(path).1") == 0 else {
                throw StoreError.system("journal \(path): cannot rotate it to \(path).1")
            }
        }
        closeFile()
        try open()
    }

    /// Writes `bytes` at `offset` (the file's end, or inside its last page), and moves the
    /// file's size past them. A failure says how many of the bytes were written.
    func writeAt(_ offset: Int, _ bytes: UnsafeBufferPointer<UInt8>) throws(JournalWriteFailure) {
        // What fits below the file size limit is written, as the kernel would write it, and
        // the rest refused here rather than by the kernel's SIGXFSZ.
        let room = FileSizeLimit.room(at: offset) ?? bytes.count
        let count = min(bytes.count, room)
        var done = 0
        while done < count {
            let written = pwrite(file, bytes.baseAddress! + done, count - done, off_t(offset + done))
            if written < 0 {
                if errno == EINTR { continue }
                throw JournalWriteFailure(reason: "a write failed: \(String(cString: strerror(errno)))", written: done)
            }
            done += written
        }
        if count < bytes.count {
            throw JournalWriteFailure(
                reason: "a write failed: " + FileSizeLimit.refusal(bytes.count, room: room, at: offset), written: done)
        }
        size = max(size, offset + bytes.count)
    }
}
