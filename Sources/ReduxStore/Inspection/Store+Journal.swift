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
    /// `"replayable":false`. The actions of a batch (``dispatchActions(_:)``) carry
    /// `"batch":F`, the version of the batch's first action, and are replayed as one batch.
    /// With ``JournalOptions/recordPatches`` each line also carries `"patch":[…]`, the action's
    /// RFC 6902 patch.
    ///
    /// The dispatch path only appends the entry to a bounded queue (under the store's lock); a
    /// thread of the journal's own formats and writes the lines (no line crosses a page of the
    /// file, and Linux cuts a write short only between pages, so a crash, SIGKILL included,
    /// never leaves half a line of at most 4 KiB), and rotates the file by size. `"time"` is
    /// when the action was applied, to within the kernel's clock tick (a few milliseconds). A full queue blocks the dispatcher (after it released the lock)
    /// or drops and counts the entry, per ``JournalOptions/overflow``. A file left with a torn
    /// last line by a crash is cut back to its last whole line when a journal is started on it;
    /// otherwise lines are appended.
    ///
    /// Starting a journal while one runs stops the running one first (writing what it had).
    ///
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/io`` when the file cannot be opened (or
    ///   is not a regular file), ``StoreError/Kind/invalidArgument`` for options out of range or
    ///   a call from inside a reducer.
    public func startJournal(at path: String, options: JournalOptions = .init()) throws(StoreError) {
        if isInsideReducer {
            throw StoreError(.invalidArgument, "startJournal inside a reducer: start it before or after the action")
        }
        let journal = try Journal(path: path, options: options, storeLock: core)
        let previous = withCoreLocked { core, _ -> Journal? in
            let recorder = core.pointee.recorder ?? Recorder()
            let previous = recorder.journal
            recorder.journal = journal
            if options.recordPatches && recorder.lastValue == nil {
                recorder.lastValue = stateAsJSONLocked()
            }
            core.pointee.recorder = recorder
            return previous
        }
        previous?.stop()
    }

    /// Stops the journal: writes every entry recorded so far, closes the file. Idempotent;
    /// does nothing when no journal runs. The store's deinit stops its journal the same way.
    ///
    /// From inside a reducer, recording stops at once and the file is finished on another
    /// thread right after (the writer needs the lock the reducer holds).
    public func stopJournal() {
        let (journal, insideReducer) = withCoreLocked { core, insideReducer -> (Journal?, Bool) in
            guard let recorder = core.pointee.recorder else { return (nil, insideReducer) }
            let journal = recorder.journal
            recorder.journal = nil
            if !core.pointee.observers.wantsPatches { recorder.lastValue = nil }
            if recorder.isEmpty { core.pointee.recorder = nil }
            return (journal, insideReducer)
        }
        guard let journal else { return }
        if insideReducer {
            DispatchQueue.global().async { journal.stop() }
        } else {
            journal.stop()
        }
    }

    /// Waits until every entry recorded so far is written to the journal file (handed to the
    /// system: a crash of this process no longer loses it; no `fsync`). Returns at once when no
    /// journal runs, and from inside a reducer (the writer needs the lock the reducer holds).
    ///
    /// ```swift
    /// store.dispatchAction(Checkout())
    /// store.flushJournal()   // the checkout's line is in the file now
    /// ```
    public func flushJournal() {
        let target = withCoreLocked { core, insideReducer -> (Journal, UInt64)? in
            guard !insideReducer, let journal = core.pointee.recorder?.journal else { return nil }
            return (journal, journal.appendedLocked)
        }
        if let (journal, version) = target { journal.flush(through: version) }
    }

    /// Entries the running journal dropped because its queue was full
    /// (``JournalOptions/Overflow/drop``); 0 when no journal runs.
    public var journalDroppedEntries: Int {
        withCoreLocked { core, _ in core.pointee.recorder?.journal?.droppedEntriesLocked } ?? 0
    }

    /// The last error the running journal's writer met (a full disk, say), if any.
    public var journalError: StoreError? {
        withCoreLocked { core, _ in core.pointee.recorder?.journal }?.lastError
    }

    /// Stops the journal when the store goes away (from deinit).
    func stopJournalAtDeinit() {
        core.valuePointer.pointee.recorder?.journal?.stop()
    }
}
