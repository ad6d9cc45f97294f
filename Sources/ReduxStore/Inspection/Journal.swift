internal import CJSONC
#if canImport(Glibc)
import Glibc
#endif

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

    struct Shared {
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
    let state = Locked(Shared())
    var file: Int32 = -1
    var size = 0
    /// The file's size when it was opened, and the lines written to it since (for the checks).
    var openedSize = 0
    var linesInFile = 0
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
    func write(_ entries: [ChangeRecord]) {
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
    static let page = 4096

}

/// A write of the journal's that failed, and how many of its bytes it wrote first.
struct JournalWriteFailure: Error {
    let reason: String
    let written: Int
}
