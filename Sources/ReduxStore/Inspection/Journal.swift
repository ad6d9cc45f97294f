internal import CJSONC
#if canImport(Glibc)
import Glibc
#endif

/// How a store's journal records (``Store/startJournal(at:options:)``).
public struct JournalOptions: Sendable {
    /// What a dispatch does when the journal's queue is full.
    public enum Overflow: Sendable, Equatable {
        /// The dispatching thread waits (after releasing the store's lock) until the writer has
        /// room: nothing is lost, and dispatch slows to the disk's pace.
        case block
        /// The entry is dropped and counted (``Store/journalDroppedEntries``): dispatch never
        /// waits, and the journal has a gap, which replay reports.
        case drop
    }

    /// Whether each entry also carries the action's RFC 6902 patch (the change it made to the
    /// state), so the state at any version can be rebuilt without the reducers. Costs a
    /// snapshot and a diff per action. `false` by default.
    public var recordPatches = false
    /// The size in bytes past which the journal file is rotated: `journal` becomes `journal.1`,
    /// `journal.1` becomes `journal.2`, and so on. 64 MiB by default.
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

/// One applied action, as the journal keeps it until the writer writes it.
struct JournalEntry: @unchecked Sendable {
    // @unchecked: `action` is Sendable (a C action's payload is a copy this entry owns).
    let version: UInt64
    /// The action, owning what it holds (a C action's payload is copied when recorded).
    let action: any Action
    /// When the action was applied, to within the kernel's clock tick (`CLOCK_REALTIME_COARSE`:
    /// a few milliseconds).
    let time: timespec
    /// The version of the first action of the batch this action belongs to, if any.
    let batch: UInt64?
    /// The action's patch (with ``JournalOptions/recordPatches``); the writer prints it.
    let patch: [JSONPatch.Operation]?
}

/// An action that can say what to record for it, beyond what the journal knows how to encode
/// (``JSONAction``'s payload, an `Encodable` action's properties): the C face's actions.
package protocol JournalRecordable: Action {
    /// A copy of the action that owns what it holds, to keep past the dispatch.
    func ownedForJournal() -> any Action
    /// The payload as a json-c tree (borrowed from the action), or NULL for none.
    var journalPayload: OpaquePointer? { get }
}

/// A running journal: a bounded queue the dispatch path appends to under the store's lock, and a
/// thread that writes the entries as JSON Lines and rotates the files.
///
/// Two locks, each for its own fields: the queue (``Queue``) is guarded by the store's lock,
/// which a dispatch holds anyway, so appending takes no lock of its own; the writer takes the
/// store's lock only to swap the queue for an empty one, every ``writerInterval`` milliseconds
/// or when woken. What waiters wait for (the writer's progress, its stop) is behind the
/// journal's own lock, `state`, and its condition. The writer never holds both.
final class Journal: @unchecked Sendable {
    // @unchecked: `queue` is touched only under the store's lock; `state`'s value only under
    // its lock; `file`, `size` and the buffers by the writer thread only.
    let path: String
    let options: JournalOptions

    /// What the dispatch path changes, under the store's lock.
    struct Queue {
        var pending: [JournalEntry] = []
        var dropped = 0
        /// The highest version appended.
        var appended: UInt64 = 0
    }
    /// Under the store's lock.
    @exclusivity(unchecked) private var queue = Queue()
    /// The store's lock, while the writer runs: `nil` once it stopped (the store holds the
    /// journal; this must not keep the store's core alive past that).
    private var storeLock: Locked<StoreCore>?

    private struct Shared {
        var stopping = false
        var stopped = false
        /// Set by a dispatch that found the queue half full, or by ``flush()``: the writer then
        /// does not wait for its interval.
        var wake = false
        /// The highest version the writer has taken from the queue.
        var taken: UInt64 = 0
        /// The highest version the writer has written (or failed to write: see `lastError`).
        var written: UInt64 = 0
        var lastError: StoreError?
    }
    private let state = Locked(Shared())
    private var file: Int32 = -1
    private var size = 0
    /// The writer thread's: the line formatter and the ends of the lines it formatted, kept
    /// between batches with their buffers; and the emptied queue it gives back.
    @exclusivity(unchecked) private var formatter = JournalLineFormatter()
    @exclusivity(unchecked) private var lineEnds: [Int] = []
    /// The writer thread's: the lines of a batch as written, padded to keep each in a page.
    @exclusivity(unchecked) private var staged = ByteBuffer()
    @exclusivity(unchecked) private var spare: [JournalEntry] = []
    private var thread = pthread_t()

    /// Opens the file and starts the writer. `storeLock` is the lock of the store whose actions
    /// the journal records: the one the dispatch path holds when it calls ``append(version:action:time:batch:patch:)``.
    init(path: String, options: JournalOptions, storeLock: Locked<StoreCore>) throws(StoreError) {
        guard options.maximumFileSize > 0, options.maximumFiles >= 0, options.queueCapacity > 0 else {
            throw StoreError(
                .invalidArgument,
                "journal options: maximumFileSize and queueCapacity must be positive, maximumFiles not negative")
        }
        self.path = path
        self.options = options
        self.storeLock = storeLock
        // Room for the entries of a writer's interval at a moderate pace, so the queue does not
        // grow (a copy of every entry, under the store's lock) in the usual case.
        queue.pending.reserveCapacity(min(options.queueCapacity, 1_024))
        spare.reserveCapacity(min(options.queueCapacity, 1_024))
        try open()
        let box = Unmanaged.passRetained(self).toOpaque()
        let status = pthread_create(&thread, nil, { raw in
            let journal = Unmanaged<Journal>.fromOpaque(raw!).takeRetainedValue()
            journal.run()
            return nil
        }, box)
        guard status == 0 else {
            Unmanaged<Journal>.fromOpaque(box).release()
            closeFile()
            self.storeLock = nil
            throw StoreError(.io, "journal \(path): could not start its writer thread (\(status))")
        }
    }

    // MARK: The dispatch side (under the store's lock)

    /// Appends an entry; the caller holds the store's lock. Returns whether the dispatcher must
    /// wait for the writer once it released the store's lock (``Overflow/block`` and a full
    /// queue).
    ///
    /// It wakes the writer only when the queue reaches half its capacity: otherwise the writer
    /// wakes on its own every ``writerInterval`` milliseconds, so a dispatch makes no system call
    /// (a wake-up per entry cost more than the rest of the journal's work on the dispatch path).
    @inline(__always)
    func append(
        version: UInt64, action: any Action, time: timespec, batch: UInt64?, patch: [JSONPatch.Operation]?
    ) -> Bool {
        let count = queue.pending.count
        if count >= options.queueCapacity && options.overflow == .drop {
            queue.dropped += 1
            return false
        }
        queue.pending.append(
            JournalEntry(version: version, action: action, time: time, batch: batch, patch: patch))
        queue.appended = version
        if count + 1 == max(options.queueCapacity / 2, 1) { wakeWriter() }
        return count + 1 > options.queueCapacity
    }

    /// The entries dropped so far; the caller holds the store's lock.
    var droppedEntriesLocked: Int { queue.dropped }
    /// The highest version appended so far; the caller holds the store's lock.
    var appendedLocked: UInt64 { queue.appended }

    @inline(never)
    private func wakeWriter() {
        state.withLock { shared in
            shared.wake = true
            state.broadcast()
        }
    }

    /// How long the writer sleeps when it finds the queue empty: the longest an entry waits to
    /// be written while the queue is less than half full.
    static let writerInterval = 10

    /// Waits until the writer has taken the entry of `version` from the queue (or the journal
    /// stopped): the queue is then back within its capacity. The caller holds no store lock.
    func waitForRoom(through version: UInt64) {
        state.lock()
        state.valuePointer.pointee.wake = true
        state.broadcast()
        while state.valuePointer.pointee.taken < version, !state.valuePointer.pointee.stopped {
            state.wait()
        }
        state.unlock()
    }

    /// Waits until the writer has written every entry up to `version` (or the journal stopped).
    /// The caller holds no store lock.
    func flush(through version: UInt64) {
        state.lock()
        state.valuePointer.pointee.wake = true
        state.broadcast()  // wakes the writer now rather than at its next interval
        while state.valuePointer.pointee.written < version, !state.valuePointer.pointee.stopped {
            state.wait()
        }
        state.unlock()
    }

    var lastError: StoreError? { state.withLock { $0.lastError } }

    /// Writes everything queued, stops the writer and closes the file. Idempotent. The caller
    /// holds no store lock; no dispatch appends to this journal any more (the store dropped it,
    /// or is going away).
    func stop() {
        let join = state.withLock { shared -> Bool in
            if shared.stopping { return false }
            shared.stopping = true
            state.broadcast()
            return true
        }
        if join { pthread_join(thread, nil) }
        state.lock()
        while !state.valuePointer.pointee.stopped { state.wait() }
        state.unlock()
    }

    // MARK: The writer thread

    private func run() {
        while true {
            let stopping = state.withLock { shared -> Bool in
                if !shared.wake && !shared.stopping { state.wait(milliseconds: Self.writerInterval) }
                shared.wake = false
                return shared.stopping
            }
            // The emptied queue of the last batch goes in: its storage is reused. Moved out of
            // `spare`, not copied: a second reference to it would make the dispatcher's first
            // append copy the whole array (copy on write), and then grow it again entry by entry.
            var batch: [JournalEntry] = []
            swap(&batch, &spare)
            storeLock!.withLockHeld { swap(&batch, &queue.pending) }
            if let last = batch.last?.version {
                state.withLock { shared in
                    shared.taken = last
                    state.broadcast()  // for dispatchers waiting for room
                }
                write(batch)
            }
            let done = stopping && batch.isEmpty
            batch.removeAll(keepingCapacity: true)
            spare = batch
            if done { break }
        }
        closeFile()
        storeLock = nil
        state.withLock { shared in
            shared.stopped = true
            state.broadcast()
        }
    }

    /// Writes the entries' lines so that a crash, SIGKILL included, never leaves half a line:
    /// Linux cuts a write to a file short only at a page boundary of the file (it copies page by
    /// page and checks for a fatal signal between pages), so no line may cross one. A line that
    /// would cross into the next page starts on it instead: the line before it is padded with
    /// spaces (JSON allows them) to the page's end, where its newline moves. Only a line longer
    /// than a page spans pages, and a crash may cut it (a journal started on the file cuts it
    /// off; replay reports it). The padded lines go out in one write per batch: a write per page
    /// cost more than formatting the lines (measured: 0.15 to 0.45 s of system time for 2 million
    /// entries).
    private func write(_ entries: [JournalEntry]) {
        formatter.reset()
        lineEnds.removeAll(keepingCapacity: true)
        for entry in entries {
            formatter.appendLine(for: entry)
            lineEnds.append(formatter.output.count)
        }
        let output = formatter.output
        do throws(StoreError) {
            if size > 0 && size + output.count > options.maximumFileSize { try rotate() }
            // The bytes to write from `start` on: the lines, padded.
            var start = size
            var position = size  // the file offset of the next byte of `staged`
            staged.count = 0
            var lineStart = 0
            for lineEnd in lineEnds {
                let length = lineEnd - lineStart
                let room = Self.page - position % Self.page
                if length > room && length <= Self.page && room < Self.page {
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
                }
                staged.append(UnsafeBufferPointer(rebasing: output[lineStart..<lineEnd]))
                position += length
                lineStart = lineEnd
            }
            try writeAt(start, staged.contents)
        } catch {
            state.withLock { $0.lastError = error }
        }
        state.withLock { shared in
            shared.written = entries.last!.version
            state.broadcast()  // for flush()
        }
    }

    /// The size of a page of the file, as the kernel copies writes.
    private static let page = 4096

    // MARK: Files

    /// Opens (appending to) the journal file. A last line left torn by a crash is cut off first,
    /// so every line in the file is whole.
    private func open() throws(StoreError) {
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw StoreError(.io, "journal \(path): cannot open: \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            _ = close(fd)
            throw StoreError(.io, "journal \(path): not a regular file")
        }
        var length = Int(info.st_size)
        if length > 0 {
            // Cut a torn last line (no newline at the end) back to the last newline.
            let reader = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            if reader >= 0 {
                defer { _ = close(reader) }
                var byte: UInt8 = 0
                var end = length
                while end > 0, pread(reader, &byte, 1, off_t(end - 1)) == 1, byte != 0x0A { end -= 1 }
                if end != length {
                    _ = ftruncate(fd, off_t(end))
                    length = end
                }
            }
        }
        file = fd
        size = length
    }

    private func closeFile() {
        if file >= 0 {
            _ = fsync(file)
            _ = close(file)
            file = -1
        }
    }

    /// `journal` → `journal.1` → … → `journal.<maximumFiles>` (the last one deleted).
    private func rotate() throws(StoreError) {
        closeFile()
        if options.maximumFiles == 0 {
            _ = unlink(path)
        } else {
            _ = unlink("\(path).\(options.maximumFiles)")
            var index = options.maximumFiles - 1
            while index >= 1 {
                _ = rename("\(path).\(index)", "\(path).\(index + 1)")
                index -= 1
            }
            _ = rename(path, "\(path).1")
        }
        try open()
    }

    /// Writes `bytes` at `offset` (the file's end, or inside its last page), and moves the
    /// file's size past them.
    private func writeAt(_ offset: Int, _ bytes: UnsafeBufferPointer<UInt8>) throws(StoreError) {
        var done = 0
        while done < bytes.count {
            let written = pwrite(file, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            if written < 0 {
                if errno == EINTR { continue }
                throw StoreError(.io, "journal \(path): write failed: \(String(cString: strerror(errno)))")
            }
            done += written
        }
        size = max(size, offset + bytes.count)
    }
}
