import Dispatch

extension Store {
    /// Records every applied action in a journal file, as JSON Lines, off the dispatch path.
    ///
    /// ```swift
    /// try store.startJournal(at: "/var/lib/app/journal.jsonl")
    /// // … dispatches …
    /// store.stopJournal()
    /// ```
    ///
    /// Each line is one applied action:
    /// `{"version":N,"identifier":"…","payload":…,"time":"2026-11-22T10:00:00.000Z"}`, in
    /// version order. The payload is a ``JSONAction``'s payload or an `Encodable` action's
    /// encoded properties (then `"typed":true`: replay needs its type registered in
    /// ``ActionTypes``); any other action is recorded by identifier alone with
    /// `"replayable":false`. The actions of a batch (``dispatchActions(_:file:line:)``) carry
    /// `"batch":F`, the version of the batch's first action, and are replayed as one batch.
    /// With ``JournalOptions/recordPatches`` each line also carries `"patch":[…]`, the action's
    /// RFC 6902 patch.
    ///
    /// The dispatch path only records the action in the store's action log, the record every
    /// consumer of the change feed reads (under the store's lock); the journal reads it through a
    /// claim of ``JournalOptions/queueCapacity`` entries, and a thread of its own formats and
    /// writes the lines (no line crosses a page of the
    /// file, and Linux cuts a write short only between pages, so a crash, SIGKILL included,
    /// never leaves half a line of at most 4 KiB), and rotates the file by size (padding
    /// counted: a file is larger than ``JournalOptions/maximumFileSize`` only when one line is).
    /// `"time"` is when the action was applied, to within the kernel's clock tick (a few
    /// milliseconds). A full queue blocks the dispatcher (after it released the lock) or drops and
    /// counts the entry, per ``JournalOptions/overflow``. A file left with a torn last line by a
    /// crash is cut back to its last whole line when a journal is started on it; otherwise lines
    /// are appended.
    ///
    /// What the file holds is whole and in order:
    /// - Only a regular file is opened, and starting never blocks (a FIFO or a device is refused).
    /// - One journal holds a file at a time (an exclusive `flock(2)`): a path that another
    ///   journal, of this store, another store or another process, is writing is refused with
    ///   ``StoreError/Kind/io``. (Starting a journal on the path of the store's own running one
    ///   first stops that one, so the new one appends after its last line.)
    /// - A file is appended to only when it is a journal whose last line comes before the store's
    ///   next version: one whose last line is not a journal's, or records that version or a later
    ///   one (another store's journal, or this store's from a later run), is refused
    ///   (``StoreError/Kind/io``) and left as it was. A gap, actions applied while no journal ran,
    ///   is allowed: replay reports it.
    /// - A write that fails (a full disk, a file size limit) is cut back off the file, and the
    ///   journal writes nothing more: ``flushJournal()`` throws until it is stopped, naming the
    ///   versions not written, and ``journalError`` says it.
    /// - A payload or patch that cannot be written (a number JSON cannot hold, a line longer than
    ///   ``StoreLimits/maximumJSONTextSize``, which the journal's readers parse at most) is left out
    ///   of its line, which says why (`"payloadError":"…"`, `"patchError":"…"`); the next
    ///   ``flushJournal()`` throws once to say so.
    ///
    /// Starting a journal while one runs stops the running one first, after the new one took
    /// over: every action is in one of the two.
    ///
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/io`` when the file cannot be opened, is
    ///   not a regular file or is in use by another journal; ``StoreError/Kind/invalidArgument``
    ///   for options out of range, an empty path, or a call from inside a reducer. Then no journal
    ///   runs (one that ran before is stopped).
    public func startJournal(at path: String, options: JournalOptions = .init()) throws(StoreError) {
        if isInsideReducer {
            throw StoreError(.invalidArgument, "startJournal inside a reducer: start it before or after the action")
        }
        let journal = try Journal(path: path, options: options, storeLock: core)
        // The new journal takes the entries from now on; the running one writes what it had and
        // lets its file go before the new one opens its own (which may be the same file).
        let previous = withCoreLocked { core, _ -> Journal? in
            let previous = detachJournalLocked(core: core) { _ in true }
            let version = core.pointee.version
            let token = openClaimLocked(
                ActionLog.Claim(
                    capacity: options.queueCapacity, ticked: false, patches: options.recordPatches, cursor: version,
                    journal: journal, holds: options.overflow == .block),
                core: core, insideReducer: false)
            journal.attached(as: token, at: version)
            core.pointee.journal = journal
            return previous
        }
        previous?.stop()
        do throws(StoreError) {
            try journal.start()
        } catch {
            _ = detachJournal { $0 === journal }  // (already stopped: its start failed)
            throw error
        }
    }

    /// Stops the journal: writes every entry recorded so far, closes the file. Idempotent;
    /// does nothing when no journal runs. The store's deinit stops its journal the same way.
    ///
    /// Call ``flushJournal()`` first to learn whether every line is in the file: it throws when
    /// one is not.
    ///
    /// From inside a reducer, recording stops at once and the file is finished on another
    /// thread right after (the writer needs the lock the reducer holds).
    public func stopJournal() {
        _ = stopJournalReporting()
    }

    /// ``stopJournal()``, returning what the journal could not write (see ``flushJournal()``);
    /// `nil` from inside a reducer, where the file is finished later.
    @_spi(Bindings) public func stopJournalReporting() -> StoreError? {
        let (journal, insideReducer) = detachJournal { _ in true }
        guard let journal else { return nil }
        if insideReducer {
            DispatchQueue.global().async { journal.stop() }
            return nil
        }
        return journal.stop()
    }

    /// Takes the running journal out of the store if `which` says so; returns it (not stopped)
    /// and whether the caller is inside a reducer.
    private func detachJournal(_ which: (Journal) -> Bool) -> (journal: Journal?, insideReducer: Bool) {
        withCoreLocked { core, insideReducer in (detachJournalLocked(core: core, which), insideReducer) }
    }

    /// ``detachJournal(_:)`` with the lock held: the journal is handed the records it has not
    /// read, and its claim closed.
    private func detachJournalLocked(core: UnsafeMutablePointer<StoreCore>, _ which: (Journal) -> Bool) -> Journal? {
        guard let journal = core.pointee.journal, which(journal) else { return nil }
        core.pointee.journal = nil
        core.pointee.actionLog.handUnread(to: journal)
        _ = closeClaimLocked(journal.token, core: core)
        return journal
    }

    /// Waits until every entry recorded so far is written to the journal file (handed to the
    /// system: a crash of this process no longer loses it; no `fsync`). Returns at once when no
    /// journal runs, and from inside a reducer (the writer needs the lock the reducer holds).
    ///
    /// ```swift
    /// store.dispatchAction(Checkout())
    /// try store.flushJournal()   // the checkout's line is in the file now
    /// ```
    ///
    /// - Throws: ``StoreError`` when an entry recorded so far is not in the file as it was
    ///   recorded: ``StoreError/Kind/io`` when a write failed (a full disk; the message names the
    ///   versions not written and the system's reason; thrown by every call until the journal is
    ///   stopped, as it writes nothing more), ``StoreError/Kind/encode`` or
    ///   ``StoreError/Kind/limit`` when lines were written without their payload or patch since the
    ///   last call (each line says why; thrown once).
    public func flushJournal() throws(StoreError) {
        let target = withCoreLocked { core, insideReducer -> (Journal, UInt64)? in
            guard !insideReducer, let journal = core.pointee.journal else { return nil }
            return (journal, core.pointee.version)
        }
        if let (journal, version) = target, let problem = journal.flush(through: version) { throw problem }
    }

    /// Entries the running journal dropped because its queue was full
    /// (``JournalOptions/Overflow/drop``); 0 when no journal runs.
    public var journalDroppedEntries: Int {
        withCoreLocked { core, _ in
            core.pointee.journal.map { Int($0.dropped &+ core.pointee.actionLog.missed($0.token)) }
        } ?? 0
    }

    /// The failure that stopped the running journal's writes (a full disk, say), naming the
    /// versions not written so far, if one did; `nil` when no journal runs.
    public var journalError: StoreError? {
        withCoreLocked { core, _ in core.pointee.journal }?.failure
    }
}
