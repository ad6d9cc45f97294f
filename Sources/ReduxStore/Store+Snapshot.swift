#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Store {
    /// A deep copy of the state (ReduxObjC's `currentState`): no later action can change it, and
    /// changing it never reaches the store. It equals the state at one version, never a torn mix.
    ///
    /// It is made by a Codable round trip through an in-memory snapshot tape: the encode half
    /// runs under the store's lock, the decode half outside it. The encoded tape is kept until
    /// the version changes, so N readers after one action cost one encode and N decodes.
    ///
    /// Inside a reducer it never deadlocks. For a class state (the ReduxObjC shape) it returns
    /// the state as the reducers have left it so far in the current action (encoded afresh, not
    /// kept): each reducer works on its own copy of the reference, so the store's copy is free to
    /// read. For a struct state it traps, as Swift traps on an exclusivity violation: the reducer
    /// holds that state `inout`, so read the reducer's parameter instead.
    ///
    /// - Precondition: the state's own `Codable` conformance does not throw, the state nests at
    ///   most ``StoreLimits/maximumNestingDepth`` (256) levels (the snapshot tape's limit, which a
    ///   reducer can go past), and the caller is not inside a reducer of a struct state; use
    ///   ``snapshot()`` to get any of these as an error instead of a trap.
    public func currentState() -> State {
        do {
            return try snapshot()
        } catch {
            fatalError("ReduxStore: the state could not be copied: \(error)")
        }
    }

    /// ``currentState()`` that throws, rather than traps, when the state's Codable conformance
    /// fails.
    ///
    /// - Throws: ``StoreError`` naming the coding path when the state's Codable conformance
    ///   fails; ``StoreError/Kind/limit`` for a state nested deeper than
    ///   ``StoreLimits/maximumNestingDepth`` levels; ``StoreError/Kind/invalidArgument`` inside a
    ///   reducer of a struct state.
    public func snapshot() throws(StoreError) -> State {
        try decodingSnapshot { (tape, _) throws(StoreError) in try SnapshotDecoder.decode(State.self, from: tape) }
    }

    /// The state as JSON and the version it is at, read at one instant (the version is the
    /// state's, whatever other threads dispatch meanwhile): encoded under the lock (the kept
    /// snapshot when the version did not change), made JSON outside it, as ``snapshot()`` does.
    ///
    /// - Throws: as ``snapshot()`` does.
    public func jsonSnapshot() throws(StoreError) -> (version: UInt64, value: JSONValue) {
        try decodingSnapshot { (tape, version) throws(StoreError) in
            (version, try SnapshotDecoder.decode(JSONValue.self, from: tape))
        }
    }

    /// Runs `decode` on the tape of the current state and its version, outside the lock, the
    /// tape counted as read meanwhile.
    private func decodingSnapshot<T>(
        _ decode: (SnapshotTape, UInt64) throws(StoreError) -> T
    ) throws(StoreError) -> T {
        let (tape, version) = try encodedSnapshot()
        defer {
            let left = tape.readers.wrappingSubtract(1, ordering: .releasing).newValue
            #if REDUXSTORE_INTERNAL_CHECKS
            precondition(left >= 0, "ReduxStore: a snapshot tape was released by more readers than it had")
            #endif
            _ = left
        }
        return try decode(tape, version)
    }

    /// The tape of the current state and its version, counted as read (the caller decrements
    /// `readers` with release ordering when done): the kept one if the version did not change.
    /// Inside a reducer, a fresh tape of the state as it is now (at the last completed version).
    func encodedSnapshot() throws(StoreError) -> (tape: SnapshotTape, version: UInt64) {
        if isInsideReducer {
            try checkReadableInsideReducer("currentState()")
            let tape = SnapshotTape()
            try core.unsafe.valuePointer.pointee.encoder.encode(state.pointee, into: tape)
            tape.readers.wrappingAdd(1, ordering: .relaxed)
            return (tape, core.unsafe.valuePointer.pointee.version)
        }
        core.unsafe.lock()
        defer { core.unsafe.unlock() }
        let core = self.core.unsafe.valuePointer
        if let tape = core.pointee.tape, core.pointee.tapeVersion == core.pointee.version {
            tape.readers.wrappingAdd(1, ordering: .relaxed)
            return (tape, core.pointee.version)
        }
        // Reuse the kept tape's storage when no reader holds it any more. (Ablation: a fresh tape
        // per version was slower per action and snapshot, most for a large state, from the page
        // faults of a new buffer; Benchmarks/README.md, "Snapshots".) The reader count is what
        // makes it sound: each reader's releasing decrement pairs with the acquiring load here,
        // so its last read of the tape happens before the tape is written again.
        let tape: SnapshotTape
        if core.pointee.tape?.readers.load(ordering: .acquiring) == 0,
           isKnownUniquelyReferenced(&core.pointee.tape) {
            tape = core.pointee.tape!
        } else {
            tape = SnapshotTape()
        }
        core.pointee.tape = nil
        try core.pointee.encoder.encode(state.pointee, into: tape)
        core.pointee.tape = tape
        core.pointee.tapeVersion = core.pointee.version
        tape.readers.wrappingAdd(1, ordering: .relaxed)
        return (tape, core.pointee.version)
    }
}

extension Store {
    /// Runs `body` with the state and its version while no action can change them (inside a
    /// reducer: as the reducers left it so far). `body` must not keep the state or dispatch.
    ///
    /// - Throws: ``StoreError/Kind/invalidArgument`` inside a reducer of a struct state (see
    ///   ``currentState()``), or what `body` throws.
    @_spi(Bindings) public func withLockedState<T>(
        _ body: (borrowing State, _ version: UInt64) throws(StoreError) -> T
    ) throws(StoreError) -> T {
        try withCoreLocked { (core, insideReducer) throws(StoreError) in
            if insideReducer { try checkReadableInsideReducer("reading the state") }
            return try body(state.pointee, core.pointee.version)
        }
    }

    /// Refuses a read of a struct state from inside a reducer, which holds it `inout`.
    private func checkReadableInsideReducer(_ what: String) throws(StoreError) {
        guard readableInsideReducer else {
            throw StoreError(
                .invalidArgument,
                "\(what) inside a reducer of a store whose state is a struct: the reducer holds "
                    + "the state inout, so read the reducer's state parameter instead")
        }
    }
}
