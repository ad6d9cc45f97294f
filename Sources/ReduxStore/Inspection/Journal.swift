internal import CJSONC
#if canImport(Glibc)
import Glibc
#endif

/// How a store's journal records (``Store/startJournal(at:options:)``).
public struct JournalOptions: Sendable {
    /// What a dispatch does when the journal's queue is full: ``queueCapacity`` entries wait for
    /// the writer.
    public enum Overflow: Sendable, Equatable {
        /// The dispatching thread waits (after releasing the store's lock) until the writer has
        /// room: nothing is lost, and dispatch slows to the disk's pace.
        case block
        /// The oldest entry waiting is dropped and counted (``Store/journalDroppedEntries``):
        /// dispatch never waits, and the journal has a gap, which replay reports.
        case drop
    }

    /// Whether each entry also carries the action's RFC 6902 patch (the change it made to the
    /// state), so the state at any version can be rebuilt without the reducers. Costs a
    /// snapshot and a diff per action. `false` by default.
    public var recordPatches = false
    /// The size in bytes a journal file does not pass: before a line that would take it past this
    /// size (its page padding counted), the file is rotated: `journal` becomes `journal.1`,
    /// `journal.1` becomes `journal.2`, and so on. A file is larger only when it holds a single
    /// line that is. 64 MiB by default.
    public var maximumFileSize = 64 << 20
    /// How many rotated files are kept besides the current one; older ones are deleted. 8 by
    /// default.
    public var maximumFiles = 8
    /// How many entries may wait for the writer before ``overflow`` applies. 65,536 by default.
    public var queueCapacity = 65_536
    /// What a full queue does. ``Overflow/block`` by default.
    public var overflow = Overflow.block

    public init() {}
}

/// A dispatcher's wait for a journal that blocks and is more than its capacity behind, run after
/// it released the store's lock (``ActionLog/takeOwedWait()``).
struct JournalWait {
    let journal: Journal
    let version: UInt64
    func run() { journal.waitForRoom(through: version) }
}

/// An action that can say what to record for it, beyond what the journal knows how to encode
/// (``JSONAction``'s payload, an `Encodable` action's properties): the C face's actions.
package protocol JournalRecordable: Action {
    /// The payload as a json-c tree (borrowed from the action), or NULL for none.
    var journalPayload: OpaquePointer? { get }
}

/// A running journal: a claim on the store's action log (``ActionLog``), the one record of each
/// applied action, and a thread that reads the records it has not read, writes them as JSON Lines
/// and rotates the files.
///
/// Two locks, each for its own fields: the claim and ``dropped`` are guarded by the store's
/// lock, which a dispatch holds anyway, so recording takes no lock of the journal's; the writer
/// takes the store's lock only to read the records after its claim's cursor, every
/// ``writerInterval`` milliseconds or when woken (the log wakes it when it is half its capacity
/// behind). What waiters wait for (the writer's progress, its stop) and the records handed to
/// it when its claim closes are behind the journal's own lock, `state`, and its condition. The
/// writer never holds both.
///
/// What is in the file is whole and in order, always: one journal at a time holds a file (an
/// exclusive `flock`, so a second journal on it, in this process or another, is refused); a
/// write that fails is cut back off the file, and the journal then writes nothing more: it
/// counts what it could not write and reports it (``takeProblem()``) until it is stopped.
final class Journal: @unchecked Sendable {
    // @unchecked: `token` and `dropped` are touched only under the store's lock; `state`'s
    // value only under its lock; `file`, `size` and the buffers by the writer thread only (and
    // by ``start()`` before the thread exists).
    let path: String
    let options: JournalOptions

    /// The journal's claim on the action log (``attached(as:at:)``, by
    /// ``Store/startJournal(at:options:)``); under the store's lock.
    private(set) var token: UInt64 = 0
    /// The entries the journal missed (``JournalOptions/Overflow/drop``: the log overwrote them
    /// before the writer read them), as its reads were told; under the store's lock.
    private(set) var dropped: UInt64 = 0
    /// The store's lock, while the writer runs: `nil` once it stopped (the store holds the
    /// journal; this must not keep the store's core alive past that).
    private var storeLock: Locked<StoreCore>?

    /// Entries that are not in the file as they were recorded.
    struct Loss {
        /// The first failure's kind and words.
        var kind = StoreError.Kind.io
        var reason: String
        var count = 0
        var first: UInt64
        var last: UInt64
    }

    private struct Shared {
        var stopping = false
        var stopped = false
        /// Set by the log when the writer is half its capacity behind, or by ``flush(through:)``:
        /// the writer then does not wait for its interval.
        var wake = false
        /// The records the journal had not read when its claim closed (``end(handing:dropped:)``),
        /// for the writer to write last.
        var handed: [ChangeRecord]?
        /// The highest version the writer has read from the log.
        var taken: UInt64 = 0
        /// The highest version the writer has dealt with: written, or counted in `unwritten`.
        var written: UInt64 = 0
        /// Entries not written because a write failed (then the journal writes nothing more):
        /// reported by every ``takeProblem()`` until the journal stops.
        var unwritten: Loss?
        /// Entries written without their payload or patch (a number JSON cannot hold, a line
        /// over ``Journal/maximumLineSize``), each line saying why: reported once.
        var incomplete: Loss?
    }
    private let state = Locked(Shared())
    private var file: Int32 = -1
    private var size = 0
    /// The file's size when it was opened, and the lines written to it since (for the checks).
    private var openedSize = 0
    private var linesInFile = 0
    /// The writer thread's: the line formatter and the ends of the lines it formatted, kept
    /// between batches with their buffers.
    @exclusivity(unchecked) private var formatter = JournalLineFormatter()
    @exclusivity(unchecked) private var lineEnds: [Int] = []
    /// The writer thread's: the lines of a batch as written, padded to keep each in a page.
    @exclusivity(unchecked) private var staged = ByteBuffer()
    @exclusivity(unchecked) private var stagedEnds: [Int] = []

    /// The longest line the journal writes (its newline not counted): the longest JSON text the
    /// journal's reader parses (``StoreLimits/maximumJSONTextSize``). An entry whose line would
    /// be longer is written without its payload and patch, saying so (`"payloadError"`).
    static let maximumLineSize = StoreLimits.maximumJSONTextSize

    /// A journal for the actions of the store whose lock is `storeLock`, under which it reads
    /// the store's action log once attached (``attached(as:at:)``, by
    /// ``Store/startJournal(at:options:)``); ``start()`` opens the file and starts the writer.
    init(path: String, options: JournalOptions, storeLock: Locked<StoreCore>) throws(StoreError) {
        guard options.maximumFileSize > 0, options.maximumFiles >= 0, options.queueCapacity > 0 else {
            throw StoreError(
                .invalidArgument,
                "journal options: maximumFileSize and queueCapacity must be positive, maximumFiles not negative")
        }
        guard !path.isEmpty, !path.utf8.contains(0) else {
            throw StoreError(.invalidArgument, "journal path is empty or holds a NUL character")
        }
        self.path = path
        self.options = options
        self.storeLock = storeLock
    }

    /// Opens the file and starts the writer. On failure the journal is stopped (a dispatcher
    /// waiting for room returns) and the error thrown. Called once, holding no store lock.
    func start() throws(StoreError) {
        do throws(StoreError) {
            try open()
        } catch {
            markStopped()
            throw error
        }
        // A writer that nobody joins: ``stop()`` waits for its `stopped`, which is all a join
        // would wait for, and a stop that comes before the writer exists (another thread's
        // `stopJournal` while this one starts) then needs no thread to join.
        let box = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { raw in
            let journal = Unmanaged<Journal>.fromOpaque(raw!).takeRetainedValue()
            journal.run()
            return nil
        }, box)
        guard status == 0 else {
            Unmanaged<Journal>.fromOpaque(box).release()
            closeFile()
            markStopped()
            throw StoreError(.io, "journal \(path): could not start its writer thread (\(status))")
        }
        pthread_detach(thread)
    }

    // MARK: The store's side (under the store's lock)

    /// The claim on the action log the journal reads through, opened at `version`: the writer
    /// has dealt with everything before. The caller holds the store's lock.
    func attached(as token: UInt64, at version: UInt64) {
        self.token = token
        state.withLock { shared in
            shared.taken = version
            shared.written = version
        }
    }

    /// The journal's claim closed, `records` the ones it had not read and `dropped` the versions
    /// it missed before them: the writer writes them last. The caller holds the store's lock.
    func end(handing records: [ChangeRecord], dropped: UInt64) {
        self.dropped &+= dropped
        state.withLock { shared in
            shared.handed = records
            shared.wake = true
            state.broadcast()
        }
    }

    /// Wakes the writer before its interval ends: the log holds half the journal's capacity of
    /// records it has not read. Under the store's lock: it only signals.
    func wakeWriter() {
        state.withLock { shared in
            shared.wake = true
            state.broadcast()
        }
    }

    /// How long the writer sleeps when it found nothing to read: the longest an entry waits to
    /// be written while the journal is less than half its capacity behind.
    static let writerInterval = 10

    /// Waits until the writer has read the entry of `version` (or the journal stopped): it is
    /// then back within its capacity. The caller holds no store lock.
    func waitForRoom(through version: UInt64) {
        state.unsafe.lock()
        state.unsafe.valuePointer.pointee.wake = true
        state.broadcast()
        while state.unsafe.valuePointer.pointee.taken < version, !state.unsafe.valuePointer.pointee.stopped {
            state.unsafe.wait()
        }
        state.unsafe.unlock()
    }

    /// Waits until the writer has dealt with every entry up to `version` (or the journal
    /// stopped), then reports what is not in the file as recorded (``takeProblem()``). The
    /// caller holds no store lock.
    func flush(through version: UInt64) -> StoreError? {
        state.unsafe.lock()
        state.unsafe.valuePointer.pointee.wake = true
        state.broadcast()  // wakes the writer now rather than at its next interval
        while state.unsafe.valuePointer.pointee.written < version, !state.unsafe.valuePointer.pointee.stopped {
            state.unsafe.wait()
        }
        state.unsafe.unlock()
        return takeProblem()
    }

    /// What is not in the file as it was recorded, in words, or `nil` when every entry dealt
    /// with so far is there whole: entries lost to a failed write (said every time: the journal
    /// writes nothing more), else lines written without their payload or patch since the last
    /// report (said once).
    func takeProblem() -> StoreError? {
        state.withLock { shared in
            if let loss = shared.unwritten { return unwrittenError(loss) }
            if let loss = shared.incomplete {
                shared.incomplete = nil
                return StoreError(
                    loss.kind,
                    "journal \(path): \(Self.describe(loss)) "
                        + (loss.count == 1 ? "was written without its payload or patch, the line saying why: "
                            : "were written without their payload or patch, each line saying why; the first: ")
                        + loss.reason)
            }
            return nil
        }
    }

    /// The error the journal's writes met, if one failed; not cleared by reading it.
    var failure: StoreError? {
        state.withLock { shared in shared.unwritten.map(unwrittenError) }
    }

    /// The words for entries lost to a failed write (none counted yet: a failed sync).
    private func unwrittenError(_ loss: Loss) -> StoreError {
        let lost = loss.count == 0 ? "" : "; \(Self.describe(loss)) not written, and the journal "
            + "writes nothing more: stop it, and start it again once the cause is fixed "
            + "(the file holds every line before, whole)"
        return StoreError(.io, "journal \(path): \(loss.reason)\(lost)")
    }

    private static func describe(_ loss: Loss) -> String {
        let entries = loss.count == 1 ? "1 entry" : "\(loss.count) entries"
        let versions = loss.first == loss.last ? "version \(loss.first)" : "versions \(loss.first)–\(loss.last)"
        return "\(entries) (\(versions))"
    }

    /// Writes everything it read or was handed, stops the writer and closes the file, and reports
    /// what is not in the file as recorded (``takeProblem()``). Idempotent. The caller holds no
    /// store lock; the journal's claim is closed (the store dropped it, or is going away).
    @discardableResult
    func stop() -> StoreError? {
        state.unsafe.lock()
        state.unsafe.valuePointer.pointee.stopping = true
        state.broadcast()
        while !state.unsafe.valuePointer.pointee.stopped { state.unsafe.wait() }
        state.unsafe.unlock()
        return takeProblem()
    }

    private func markStopped() {
        storeLock = nil
        state.withLock { shared in
            shared.stopped = true
            state.broadcast()
        }
    }

    // MARK: The writer thread

    private func run() {
        while true {
            let stopping = state.withLock { shared -> Bool in
                if !shared.wake && !shared.stopping { state.unsafe.wait(milliseconds: Self.writerInterval) }
                shared.wake = false
                return shared.stopping
            }
            // What the claim has not read, then what was handed when it closed (after any read:
            // the handing reads the rest under the same lock).
            var batch = storeLock!.withLock { core in
                let (records, dropped) = core.actionLog.read(token, limit: .max)
                self.dropped &+= dropped
                return records
            }
            if let handed = state.withLock({ shared in defer { shared.handed = nil }; return shared.handed }) {
                if batch.isEmpty { batch = handed } else { batch += handed }  // moved when it can be
            }
            if let last = batch.last?.version {
                state.withLock { shared in
                    shared.taken = last
                    state.broadcast()  // for dispatchers waiting for room
                }
                write(batch)
            }
            if stopping && batch.isEmpty { break }
        }
        closeFile()
        markStopped()
    }

    /// Writes the entries' lines so that a crash, SIGKILL included, never leaves half a line:
    /// Linux cuts a write to a file short only at a page boundary of the file (it copies page by
    /// page, or folio by folio, each aligned to its size, and checks for a fatal signal between
    /// them: `generic_perform_write()` in the kernel's `mm/filemap.c`; this is the kernel's
    /// behaviour, not a documented promise of `write(2)`), so no line may cross one. Nothing
    /// depends on it for correctness: a torn last line, however it came, is cut off by the next
    /// journal started on the file and reported by every reader. A line that
    /// would cross into the next page starts on it instead: the line before it is padded with
    /// spaces (JSON allows them) to the page's end, where its newline moves. Only a line longer
    /// than a page spans pages, and a crash may cut it (a journal started on the file cuts it
    /// off; replay reports it). The padded lines go out in one write per batch and file: a write
    /// per page cost more system time than formatting the lines took (Benchmarks/README.md,
    /// "What inspection costs").
    ///
    /// The file rotates before a line that would take it past ``JournalOptions/maximumFileSize``
    /// (padding counted), so a file is larger only when it holds one line that is.
    ///
    /// A write that fails (a full disk, a file size limit) is cut back off the file, so the file
    /// keeps every line before it, whole; its entries and every later one are counted as not
    /// written (``takeProblem()``).
    private func write(_ entries: [ChangeRecord]) {
        let broken = state.withLock { $0.unwritten != nil }
        if broken {
            lose(entries[...], reason: nil)
            return
        }
        formatter.reset()
        lineEnds.removeAll(keepingCapacity: true)
        for entry in entries {
            let start = formatter.output.count
            var problem = formatter.appendLine(for: entry, includingPatch: options.recordPatches)
            if formatter.output.count - start - 1 > Self.maximumLineSize {
                let length = formatter.output.count - start - 1
                formatter.truncate(to: start)
                let omission = "its line would be \(length) bytes, more than the journal's limit of \(Self.maximumLineSize)"
                formatter.appendLine(for: entry, includingPatch: options.recordPatches, omittingPayload: omission)
                problem = JournalLineProblem(kind: .limit, reason: "version \(entry.version): \(omission)")
            }
            if let problem { noteIncomplete(entry.version, problem) }
            lineEnds.append(formatter.output.count)
        }
        let output = formatter.output
        // The entries from `first` on are in `staged` or still to stage; `stagedEnds` holds
        // where each staged line ends in `staged`, its newline included.
        var first = 0
        stagedEnds.removeAll(keepingCapacity: true)
        // The bytes to write from `start` on: the lines, padded.
        var start = size
        var position = size  // the file offset of the next byte of `staged`
        staged.count = 0
        do throws(JournalWriteFailure) {
            var lineStart = 0
            for (index, lineEnd) in lineEnds.enumerated() {
                let length = lineEnd - lineStart
                var room = Self.page - position % Self.page
                var padding = length > room && length <= Self.page && room < Self.page ? room : 0
                if position > 0 && position + padding + length > options.maximumFileSize {
                    try writeAt(start, staged.contents)
                    linesInFile += stagedEnds.count
                    first = index
                    stagedEnds.removeAll(keepingCapacity: true)
                    do throws(StoreError) {
                        try rotate()
                    } catch {
                        throw JournalWriteFailure(reason: error.message, written: 0)
                    }
                    start = 0
                    position = 0
                    staged.count = 0
                    room = Self.page
                    padding = 0
                }
                if padding > 0 {
                    // The newline before `position` becomes a space; spaces and the newline
                    // fill the page.
                    if staged.count == 0 {
                        start -= 1  // that newline is in the file: written over
                        staged.append(0x20)
                    } else {
                        staged.setLast(0x20)
                    }
                    staged.append(repeating: 0x20, count: room - 1)
                    staged.append(0x0A)
                    position += room
                    if !stagedEnds.isEmpty { stagedEnds[stagedEnds.count - 1] = staged.count }
                }
                staged.append(UnsafeBufferPointer(rebasing: output[lineStart..<lineEnd]))
                stagedEnds.append(staged.count)
                position += length
                lineStart = lineEnd
            }
            try writeAt(start, staged.contents)
            linesInFile += stagedEnds.count
        } catch {
            // Keep the lines written whole; cut the rest off.
            let whole = stagedEnds.lastIndex { $0 <= error.written }
            let kept = whole.map { start + stagedEnds[$0] } ?? size
            var repaired = file < 0 || ftruncate(file, off_t(kept)) == 0  // (closed: a rotation failed)
            if file >= 0 && repaired && whole == nil && start < size {
                var newline: UInt8 = 0x0A  // the padded write began over it
                repaired = pwrite(file, &newline, 1, off_t(size - 1)) == 1
            }
            size = kept
            let cut = repaired ? "" : " (and the file could not be cut back: its last line may be torn, which a journal started on it cuts off)"
            lose(entries[(first + (whole.map { $0 + 1 } ?? 0))...], reason: error.reason + cut)
            return
        }
        state.withLock { shared in
            shared.written = entries.last!.version
            state.broadcast()  // for flush()
        }
        _checkWriterInvariants()
    }

    // MARK: Invariants (REDUXSTORE_INTERNAL_CHECKS: debug builds, the tests)

    /// What holds on the writer thread after a batch: the writer dealt with no more than it
    /// took, and its idea of the file's size is the file's (no other writer: the file's lock),
    /// which is within ``JournalOptions/maximumFileSize`` unless it holds one longer line.
    private func _checkWriterInvariants() {
        #if REDUXSTORE_INTERNAL_CHECKS
        let (taken, written, broken) = state.withLock { ($0.taken, $0.written, $0.unwritten != nil) }
        precondition(written <= taken, "ReduxStore journal: more written than read from the log")
        guard file >= 0, !broken else { return }
        var info = stat()
        precondition(fstat(file, &info) == 0 && Int(info.st_size) == size,
                     "ReduxStore journal: the file's size is not the size the writer wrote")
        precondition(size <= max(options.maximumFileSize, openedSize) || (openedSize == 0 && linesInFile == 1),
                     "ReduxStore journal: the file grew past maximumFileSize")
        #endif
    }

    /// Counts `entries` as not written: `reason` is the failure that stopped the journal (nil:
    /// it had stopped before).
    private func lose(_ entries: ArraySlice<ChangeRecord>, reason: String?) {
        guard let firstVersion = entries.first?.version, let lastVersion = entries.last?.version else { return }
        state.withLock { shared in
            var loss = shared.unwritten ?? Loss(reason: reason ?? "", first: firstVersion, last: lastVersion)
            if loss.count == 0 { loss.first = firstVersion }  // after a failed sync
            loss.count += entries.count
            loss.last = lastVersion
            shared.unwritten = loss
            shared.written = lastVersion
            state.broadcast()
        }
    }

    private func noteIncomplete(_ version: UInt64, _ problem: JournalLineProblem) {
        state.withLock { shared in
            if shared.incomplete == nil {
                shared.incomplete = Loss(kind: problem.kind, reason: problem.reason, first: version, last: version)
            }
            shared.incomplete!.count += 1
            shared.incomplete!.last = version
        }
    }

    /// The size of a page of the file, as the kernel copies writes.
    private static let page = 4096

    // MARK: Files

    /// Opens (appending to) the journal file and takes its lock. A last line left torn by a
    /// crash is cut off first, so every line in the file is whole.
    ///
    /// Only a regular file is opened, and opening never blocks: a FIFO or a device is refused
    /// (before the open, and after it: the open is non-blocking, so one put in the file's place
    /// meanwhile is refused too). A file another journal holds, in this process or another, is
    /// refused: two writers would write their lines over each other's.
    private func open() throws(StoreError) {
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
    private func closeFile() {
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
    private func rotate() throws(StoreError) {
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
    private func writeAt(_ offset: Int, _ bytes: UnsafeBufferPointer<UInt8>) throws(JournalWriteFailure) {
        var done = 0
        while done < bytes.count {
            let written = pwrite(file, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            if written < 0 {
                if errno == EINTR { continue }
                throw JournalWriteFailure(reason: "a write failed: \(String(cString: strerror(errno)))", written: done)
            }
            done += written
        }
        size = max(size, offset + bytes.count)
    }
}

/// A write of the journal's that failed, and how many of its bytes it wrote first.
struct JournalWriteFailure: Error {
    let reason: String
    let written: Int
}
