extension Store {
    /// Opens a reader's claim on the action log: the store keeps the records of the last
    /// `capacity` applied actions (without patches; as many as the largest open claim asks for)
    /// for readers that read them when they like (the live inspector's pages), until every claim
    /// is closed (``closeActionLog(_:)``). Returns the claim's token.
    ///
    /// A cheaper consumer of the change feed than a listener: a record costs a dispatch a copy
    /// of the action and a few fields into a ring, under the lock the dispatch holds anyway (no
    /// call, no allocation for an action stored inline), and the time: the coarse clock's
    /// (`CLOCK_REALTIME_COARSE`, a few milliseconds' resolution). When every claim is `ticked`, a
    /// record reads that clock only when ``tickActionLog()`` was called since the last record
    /// that read it, and otherwise takes the same time: a ticker that calls it every few
    /// milliseconds while actions are applied spares each dispatch the clock, at the ticker's
    /// resolution (Benchmarks/README.md, "The live inspector: both goals met").
    ///
    /// Package, as are ``closeActionLog(_:)``, ``tickActionLog()`` and
    /// ``readActionLog(after:limit:wake:)``: the live inspector sends its pages what it reads from
    /// the log.
    package func openActionLog(_ capacity: Int, ticked: Bool = false) -> UInt64 {
        withCoreLocked { core, insideReducer in
            openClaimLocked(ActionLog.Claim(capacity: capacity, ticked: ticked), core: core, insideReducer: insideReducer)
        }
    }

    /// Closes a claim ``openActionLog(_:ticked:)`` opened; the last one closed, the log stops and
    /// frees its records. False for a token that is not an open claim of this store.
    @discardableResult
    package func closeActionLog(_ token: UInt64) -> Bool {
        withCoreLocked { core, _ in closeClaimLocked(token, core: core) }
    }

    /// Opens `claim` on the action log; when it asks for patches, the recorder keeps the state
    /// for the next one. Returns its token. The lock is held (or this thread is inside a reducer
    /// or listener).
    func openClaimLocked(_ claim: ActionLog.Claim, core: UnsafeMutablePointer<StoreCore>, insideReducer: Bool) -> UInt64 {
        let token = core.pointee.actionLog.open(claim)
        if claim.patches {
            recorderKeepingStateLocked(core: core, insideReducer: insideReducer)
        }
        return token
    }

    /// Closes the claim of `token`; when no claim asks for patches any more, the recorder stops
    /// making them (and goes when nothing else is wanted of it). False for an unknown token.
    /// The lock is held.
    func closeClaimLocked(_ token: UInt64, core: UnsafeMutablePointer<StoreCore>) -> Bool {
        guard core.pointee.actionLog.close(token) else { return false }
        if !core.pointee.actionLog.wantsPatches { core.pointee.recorder?.forgetState() }
        core.pointee.dropRecorderIfIdle()
        return true
    }

    /// Lets the action log's next record read the clock again (``openActionLog(_:ticked:)``).
    package func tickActionLog() {
        withCoreLocked { core, _ in core.pointee.actionLog.tick() }
    }

    /// Reads the action log (``openActionLog(_:ticked:)``) at one instant: the `records` of the
    /// versions after `version`, oldest first (the oldest `limit`); how many versions after it
    /// are left out, older than the log holds (`dropped`); and the store's `version` when read.
    /// When there is no record after `version`, `wake` (if given) is left for the next record to
    /// call, once, under the store's lock (beside those other readers left): it must only
    /// signal. `nil` when no log is kept (`wake` is then not kept either).
    package func readActionLog(
        after version: UInt64, limit: Int = .max, wake: (@Sendable () -> Void)? = nil
    ) -> (records: [ChangeRecord], dropped: UInt64, version: UInt64)? {
        withCoreLocked { core, _ in
            guard core.pointee.actionLog.isOn else { return nil }
            let (records, dropped) = core.pointee.actionLog.records(after: version, limit: limit, patches: false)
            if records.isEmpty, let wake { core.pointee.actionLog.arm(wake) }
            return (records, dropped, core.pointee.version)
        }
    }
}
