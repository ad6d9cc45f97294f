#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Replacing a regular file atomically: write a unique temporary file beside it, sync it, rename
/// it over the file, sync the folder. A crash at any instant leaves the old file or the new one,
/// whole.
///
/// - **Unique temporaries.** Each save writes its own `.NAME.XXXXXXXXXXXX.tmp` (12 random
///   characters) in the target's folder, created with `O_CREAT | O_EXCL | O_NOFOLLOW` (a name
///   already taken, even by a symbolic link, is never opened: another name is drawn). So any
///   number of saves of one path, in any number of processes, never share a temporary, and each
///   rename puts one whole file in place.
/// - **Stray temporaries.** A save holds an exclusive `flock` on its temporary from just after
///   creating it until the temporary is renamed or removed; a process that dies loses its lock
///   with it. After each successful save, the temporaries of the same target that nobody holds
///   a lock on are removed: they were left by a process that died mid-save. The temporary of a
///   save still running elsewhere is locked and stays. (A save that finds its new temporary
///   removed in the instant between creating and locking it draws another name.) On a file
///   system without `flock` nothing is removed.
/// - **The target.** Only a regular file is replaced, or a name nothing has yet. A folder, a
///   device, a FIFO, a socket or a symbolic link (to anything, or to nothing) is refused and
///   left as it is: a rename would replace the link itself, and following it would let whoever
///   can put a link in the folder choose which file is overwritten. The new file keeps the mode
///   of the file it replaces, and its owner and group where the process may set them; a new
///   file gets mode 0666 less the umask, as any new file does.
enum AtomicFile {
    /// Replaces the regular file at `path` (or creates it) with `parts`, written one after the
    /// other. When it throws, the file at `path` is as it was and the temporary is gone.
    ///
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/io`` saying what failed and why; the
    ///   caller names the target.
    static func replace(_ path: String, with parts: [UnsafeRawBufferPointer]) throws(StoreError) {
        let (folder, name) = try split(path)
        let target = try replaceableTarget(path)
        let temporary = try Temporary(folder: folder, name: name, mode: target == nil ? 0o666 : 0o600)
        do throws(StoreError) {
            if let target { try temporary.adopt(target) }
            try temporary.write(parts)
            try temporary.sync()
            guard rename(temporary.path, path) == 0 else { throw StoreError.system("rename \(temporary.path) to \(path)") }
        } catch {
            temporary.remove()
            throw error
        }
        temporary.close()
        try syncFolder(folder)
        removeStrayTemporaries(of: name, in: folder)
    }

    /// The folder and the file name of `path`.
    private static func split(_ path: String) throws(StoreError) -> (folder: String, name: String) {
        let folder: String
        let name: String
        if let slash = path.lastIndex(of: "/") {
            folder = slash == path.startIndex ? "/" : String(path[..<slash])
            name = String(path[path.index(after: slash)...])
        } else {
            folder = "."
            name = path
        }
        guard !name.isEmpty, name != ".", name != ".." else {
            throw StoreError(.io, "not a file name")
        }
        return (folder, name)
    }

    /// The status of the regular file at `path`, nil when nothing has the name; refuses
    /// anything else.
    private static func replaceableTarget(_ path: String) throws(StoreError) -> stat? {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            if errno == ENOENT { return nil }
            throw StoreError.system("lstat \(path)")
        }
        let type = info.st_mode & S_IFMT
        if type == S_IFREG { return info }
        if type == S_IFLNK {
            var pointee = stat()
            let what = stat(path, &pointee) == 0
                ? "a symbolic link to \(RegularFile.kindName(pointee.st_mode & S_IFMT))"
                : "a symbolic link to nothing"
            throw StoreError(
                .io, "the target is \(what); save replaces regular files only (save to the path the link names)")
        }
        throw StoreError(
            .io, "the target is \(RegularFile.kindName(type)), not a regular file; save replaces regular files only")
    }

    private static func syncFolder(_ folder: String) throws(StoreError) {
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw StoreError.system("open folder \(folder)") }
        defer { systemClose(fd) }
        guard fsync(fd) == 0 else { throw StoreError.system("fsync folder \(folder)") }
    }

    // MARK: Temporaries

    /// The characters of a temporary's random part.
    private static let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)
    private static let randomLength = 12
    private static let suffix = ".tmp"

    /// `.NAME.`: what the temporaries of target `name` start with. A long name is cut so that
    /// the temporary's name stays within the 255 bytes a file name may have.
    static func temporaryPrefix(_ name: String) -> String {
        var kept = ""
        var bytes = 0
        for scalar in name.unicodeScalars {
            bytes += scalar.utf8.count
            if bytes > 200 { break }
            kept.unicodeScalars.append(scalar)
        }
        return ".\(kept)."
    }

    /// Whether `entry` is a temporary of a target whose temporaries start with `prefix`.
    private static func isTemporary(_ entry: String, prefix: String) -> Bool {
        let bytes = Array(entry.utf8)
        let prefixCount = prefix.utf8.count
        guard bytes.count == prefixCount + randomLength + suffix.utf8.count,
              entry.hasPrefix(prefix), entry.hasSuffix(suffix)
        else { return false }
        return bytes[prefixCount..<(prefixCount + randomLength)].allSatisfy(alphabet.contains)
    }

    /// One save's temporary file: created, locked, written, then renamed or removed.
    private final class Temporary {
        let path: String
        private var fd: Int32

        /// Creates a new temporary for target `name` in `folder`, with `O_EXCL | O_NOFOLLOW`,
        /// and locks it.
        init(folder: String, name: String, mode: mode_t) throws(StoreError) {
            let prefix = (folder == "/" ? "/" : folder + "/") + AtomicFile.temporaryPrefix(name)
            var generator = SystemRandomNumberGenerator()
            for _ in 0..<100 {
                var bits = generator.next()
                var random = ""
                for _ in 0..<AtomicFile.randomLength {
                    random.unicodeScalars.append(Unicode.Scalar(AtomicFile.alphabet[Int(bits & 31)]))
                    bits >>= 5
                }
                let candidate = prefix + random + AtomicFile.suffix
                let fd = open(candidate, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
                guard fd >= 0 else {
                    if errno == EEXIST || errno == EINTR { continue }
                    throw StoreError.system("create temporary \(candidate)")
                }
                if Temporary.lock(fd, candidate) {
                    path = candidate
                    self.fd = fd
                    return
                }
                systemClose(fd)
            }
            throw StoreError(.io, "no free name for a temporary file \(prefix)…\(AtomicFile.suffix)")
        }

        /// Locks a new temporary. False when a save that found it unlocked removed it first:
        /// the caller draws another name. A file system without `flock` keeps it unlocked.
        private static func lock(_ fd: Int32, _ path: String) -> Bool {
            while flock(fd, LOCK_EX) != 0 {
                if errno != EINTR { return true }
            }
            var opened = stat()
            var named = stat()
            return fstat(fd, &opened) == 0 && lstat(path, &named) == 0
                && opened.st_dev == named.st_dev && opened.st_ino == named.st_ino
        }

        deinit {
            if fd >= 0 { remove() }
        }

        /// Gives the temporary the owner, group (where allowed) and mode of the file it replaces.
        func adopt(_ target: stat) throws(StoreError) {
            // Changing the owner may clear the set-id bits, so the mode comes after it.
            if target.st_uid != geteuid() || target.st_gid != getegid() {
                _ = fchown(fd, target.st_uid, target.st_gid)
            }
            guard fchmod(fd, target.st_mode & 0o7777) == 0 else {
                throw StoreError.system("chmod \(path)")
            }
        }

        func write(_ parts: [UnsafeRawBufferPointer]) throws(StoreError) {
            let size = parts.reduce(0) { $0 + $1.count }
            if let room = FileSizeLimit.room(at: 0), room < size {
                throw StoreError(.io, "write \(path): " + FileSizeLimit.refusal(size, room: room, at: 0))
            }
            for part in parts {
                var written = 0
                while written < part.count {
                    let count = systemWrite(fd, part.baseAddress! + written, part.count - written)
                    if count < 0 {
                        if errno == EINTR { continue }
                        throw StoreError.system("write \(path)")
                    }
                    written += count
                }
            }
        }

        func sync() throws(StoreError) {
            guard fsync(fd) == 0 else { throw StoreError.system("fsync \(path)") }
        }

        /// Removes the temporary (still locked, so no other save touches it) and closes it.
        func remove() {
            unlink(path)
            close()
        }

        /// Closes the file, which releases the lock.
        func close() {
            guard fd >= 0 else { return }
            systemClose(fd)
            fd = -1
        }
    }

    /// Removes the temporaries of target `name` in `folder` that no save holds a lock on: a
    /// process died while it was saving. Best effort: what cannot be opened, locked or removed
    /// stays.
    private static func removeStrayTemporaries(of name: String, in folder: String) {
        let prefix = temporaryPrefix(name)
        var strays: [String] = []
        guard let directory = opendir(folder) else { return }
        while let entry = readdir(directory) {
            // The name in place: a dirent is only as long as its name, so copying the whole
            // `d_name` field would read past the end of the last entry of a buffer.
            let name = UnsafeRawPointer(entry) + MemoryLayout<dirent>.offset(of: \dirent.d_name)!
            let entryName = String(cString: name.assumingMemoryBound(to: CChar.self))
            if isTemporary(entryName, prefix: prefix) { strays.append(entryName) }
        }
        closedir(directory)
        for stray in strays {
            removeIfUnlocked((folder == "/" ? "/" : folder + "/") + stray)
        }
    }

    private static func removeIfUnlocked(_ path: String) {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { systemClose(fd) }
        var opened = stat()
        guard fstat(fd, &opened) == 0, opened.st_mode & S_IFMT == S_IFREG,
              flock(fd, LOCK_EX | LOCK_NB) == 0
        else { return }
        // Locked: no save holds it. Still under this name (not renamed into place meanwhile)?
        var named = stat()
        guard lstat(path, &named) == 0, named.st_dev == opened.st_dev, named.st_ino == opened.st_ino
        else { return }
        unlink(path)
    }
}

// `close(2)` and `write(2)` by names the temporary's own methods do not shadow.
private func systemClose(_ fd: Int32) { _ = close(fd) }
private func systemWrite(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, bytes, count)
}
