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
    /// Inside a reducer it does not deadlock: it returns the state as the reducers have left it
    /// so far in the current action (encoded afresh, not kept).
    ///
    /// - Precondition: the state's own `Codable` conformance does not throw; use
    ///   ``snapshot()`` to get such a failure as an error instead of a trap.
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
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/decode`` naming the coding path.
    public func snapshot() throws(StoreError) -> State {
        let tape = try encodedSnapshot()
        defer { tape.readers.wrappingSubtract(1, ordering: .releasing) }
        return try SnapshotDecoder.decode(State.self, from: tape)
    }

    /// The tape of the current state, counted as read (the caller decrements `readers` with
    /// release ordering when done): the kept one if the version did not change. Inside a
    /// reducer, a fresh tape of the state as it is now.
    package func encodedSnapshot() throws(StoreError) -> SnapshotTape {
        if isInsideReducer {
            let tape = SnapshotTape()
            try core.pointee.encoder.encode(state.pointee, into: tape)
            tape.readers.wrappingAdd(1, ordering: .relaxed)
            return tape
        }
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        let core = self.core
        if let tape = core.pointee.tape, core.pointee.tapeVersion == core.pointee.version {
            tape.readers.wrappingAdd(1, ordering: .relaxed)
            return tape
        }
        // Reuse the kept tape's storage when no reader holds it any more.
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
        return tape
    }
}

extension Store {
    /// Runs `body` with the state and its version while no action can change them (inside a
    /// reducer: as the reducers left it so far). `body` must not keep the state or dispatch.
    ///
    /// The C face reads through it: a json-c snapshot, a saved file.
    package func withLockedState<T, E: Error>(
        _ body: (borrowing State, _ version: UInt64) throws(E) -> T
    ) throws(E) -> T {
        try withCoreLocked { (core, _) throws(E) in try body(state.pointee, core.pointee.version) }
    }
}
