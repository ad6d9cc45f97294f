public import ReduxStore

/// A store whose actions live in a PostgreSQL stream, shared by any number of processes: each
/// applies every action of the stream, in the stream's one order, to a local ``store``.
///
/// ```swift
/// let stream = try PostgresStream(connection: "postgres://app@localhost/app", stream: "counter")
/// let counter = try await ReplicatedStore.open(
///     stream, reducers: [counterReducer], initialState: Counter(), actions: actions)
/// let version = try await counter.dispatch(Increment(by: 1))   // committed, then applied here
/// print(counter.store.currentState().value)
/// await counter.close()
/// ```
///
/// **Order.** PostgreSQL decides it: every append is one call of the library's procedure, which
/// takes the stream row's lock on the server and commits before it answers, so concurrent writers
/// take turns for the length of one commit and the versions have no gap. A process applies every
/// action of the stream in version order, its own included, so every process's state at a version
/// is the same (for deterministic reducers).
///
/// **Answers.** ``dispatch(_:file:line:)`` returns a version only after the server confirmed the
/// commit, and an action is stored once: each carries this process's name and a sequence number,
/// unique in the stream, so a request repeated or delivered late stores nothing new and answers
/// the version stored the first time. An error means not stored, or says that the outcome is
/// unknown.
///
/// **Group commit.** Concurrent dispatches of one process share one append, up to
/// ``ReplicationOptions/maximumBatch`` actions: while one commit is in flight, the next ones
/// gather. Each action is judged alone: one the server refuses fails only its own dispatch.
///
/// **The local store.** ``store`` is an ordinary `Store`: read it, observe it, journal it,
/// follow its change feed; replicated actions reach observers, key-path observers, the change
/// feed and the journal exactly as local ones, with their source (`File.swift:42`) as the writer
/// recorded it. Its `Store.version` is the stream's version it applied. Its state changes only
/// through the stream: `store.dispatchAction` (or a dispatch from one of its reducers or
/// observers) traps with a message saying so, since it would give the replica a version the
/// stream does not have; `Store.restore(version:)` throws.
///
/// **Faults.** What can heal (a lost connection, a full connection table, a server restarting, a
/// lock or statement timeout) is retried with back-off for up to
/// ``ReplicationOptions/reconnectTimeout`` seconds; after a lost answer the same append is simply
/// made again. What cannot heal — a stored action that does not decode into the program's types,
/// a state that differs from the snapshot stored at its version, trimmed versions, a refused
/// password, tables of a newer library — stops the replica with a ``ReplicationError`` naming the
/// stream and version: it never skips.
public final class ReplicatedStore<State: Codable & Sendable>: Sendable {
    /// The local replica: read, observe, journal. Do not dispatch to it (see above).
    public let store: Store<State>
    let replicator: Replicator
    /// The stream, its server and name.
    public let stream: PostgresStream

    private init(store: Store<State>, replicator: Replicator, stream: PostgresStream) {
        self.store = store
        self.replicator = replicator
        self.stream = stream
    }

    deinit {
        let replicator = self.replicator
        Task { await replicator.close() }
    }

    /// Opens a stream to write to: creates the library's tables and the stream when missing,
    /// starts from the newest snapshot a second process confirmed (or `initialState` at version
    /// 0: "Sharing a store through PostgreSQL" says which snapshots it trusts), applies the actions
    /// after it, and keeps applying what other processes commit.
    ///
    /// - Parameters:
    ///   - stream: the server, the stream's name and the schema of the library's tables.
    ///   - reducers: the same in every process of the stream, deterministic.
    ///   - initialState: the state at version 0, for a stream with no snapshot.
    ///   - actions: the typed actions stored payloads decode into; other identifiers reach the
    ///     reducers as `JSONAction`s.
    ///   - options: snapshots, retention, polling, group size (``ReplicationOptions``).
    /// - Throws: ``ReplicationError``: the server cannot be reached (what may pass — a lost
    ///   connection, a server starting up or restarting, a full connection table — is tried again
    ///   for ``ReplicationOptions/reconnectTimeout`` seconds), refuses the user, or its tables are
    ///   newer than this library; the stored snapshot or an action after it does not
    ///   decode (naming the version).
    public static func open(
        _ stream: PostgresStream, reducers: [Reducer<State>], initialState: State, actions: ActionTypes,
        options: ReplicationOptions = .init()
    ) async throws -> ReplicatedStore<State> {
        try await start(stream, reducers: .broadcast(reducers), initialState: initialState, actions: actions, options: options, writes: true)
    }

    /// Follows a stream read-only: starts as ``open(_:reducers:initialState:actions:options:)``
    /// does (confirming the snapshots it compares, its one write), reads the tail in batches,
    /// then applies new versions as they are committed (woken by PostgreSQL's notifications,
    /// and by a poll every ``ReplicationOptions/pollInterval`` seconds should one be missed).
    /// ``dispatch(_:file:line:)`` throws ``ReplicationError/Kind/readOnly``. With
    /// ``ReplicationOptions/standbyConnection`` it reads from that hot standby and writes nothing
    /// (<doc:Standbys>).
    public static func follow(
        _ stream: PostgresStream, reducers: [Reducer<State>], initialState: State, actions: ActionTypes,
        options: ReplicationOptions = .init()
    ) async throws -> ReplicatedStore<State> {
        try await start(stream, reducers: .broadcast(reducers), initialState: initialState, actions: actions, options: options, writes: false)
    }

    /// ``open(_:reducers:initialState:actions:options:)`` with routed reducers (`Reducers`):
    /// stored payloads decode into the types `reducers.actions` registers, and each action reaches
    /// the reducers that handle it, as in a local store made from `Reducers`.
    public static func open(
        _ stream: PostgresStream, reducers: Reducers<State>, initialState: State,
        options: ReplicationOptions = .init()
    ) async throws -> ReplicatedStore<State> {
        try await start(stream, reducers: .routed(reducers), initialState: initialState, actions: reducers.actions, options: options, writes: true)
    }

    /// ``follow(_:reducers:initialState:actions:options:)`` with routed reducers (`Reducers`),
    /// as ``open(_:reducers:initialState:options:)`` has them.
    public static func follow(
        _ stream: PostgresStream, reducers: Reducers<State>, initialState: State,
        options: ReplicationOptions = .init()
    ) async throws -> ReplicatedStore<State> {
        try await start(stream, reducers: .routed(reducers), initialState: initialState, actions: reducers.actions, options: options, writes: false)
    }

    /// The two shapes of reducers a replica's store can have.
    private enum Reducing {
        case broadcast([Reducer<State>])
        case routed(Reducers<State>)

        func makeStore(_ state: State, version: UInt64, middleware: @escaping Middleware<State>, refusal: String) -> Store<State> {
            switch self {
            case .broadcast(let reducers):
                Store(
                    reducers: reducers, adopting: state, version: version, middleware: [middleware],
                    refusingLocalChanges: refusal)
            case .routed(let reducers):
                Store(
                    routing: reducers, adopting: state, version: version, middleware: [middleware],
                    refusingLocalChanges: refusal)
            }
        }
    }

    private static func start(
        _ stream: PostgresStream, reducers: Reducing, initialState: State, actions: ActionTypes,
        options: ReplicationOptions, writes: Bool
    ) async throws(ReplicationError) -> ReplicatedStore<State> {
        let options = try options.validated(stream: stream.stream)
        let standby = try options.standby(of: stream, writes: writes)
        return try await OpenedStream.startingAgainAfterTrims(
            reconnectTimeout: options.reconnectTimeout, trimmed: { $0 }
        ) { () async throws(ReplicationError) in
            try await startOnce(
                stream, reducers: reducers, initialState: initialState, actions: actions, options: options,
                writes: writes, standby: standby)
        }
    }

    /// One attempt of ``start(_:reducers:initialState:actions:options:writes:)``.
    private static func startOnce(
        _ stream: PostgresStream, reducers: Reducing, initialState: State, actions: ActionTypes,
        options: ReplicationOptions, writes: Bool, standby: PostgresStream?
    ) async throws(ReplicationError) -> ReplicatedStore<State> {
        let opened = try await OpenedStream.open(
            stream, writes: writes, standby: standby, reconnectTimeout: options.reconnectTimeout)
        var state = initialState
        if let text = opened.state {
            do {
                state = try JSONCDecoder().decode(State.self, fromJSONString: text)
            } catch {
                try? await opened.connection.close()
                throw ReplicationError(
                    .decode, stream: stream.stream, version: opened.version,
                    "the stored snapshot does not decode into \(State.self): \(error.message)")
            }
        }
        let gate = ReplicaGate(stream: stream.stream)
        let store = reducers.makeStore(
            opened.state == nil ? Store.deepCopy(state) : state,
            version: opened.version, middleware: gate.middleware(),
            refusal: "the store is a replica of stream \"\(stream.stream)\": its versions come from the stream")
        let replicator = Replicator(
            stream: stream, schema: opened.schema, options: options,
            target: SwiftReplicaTarget(store: store, gate: gate, actions: actions),
            logger: opened.logger, writes: writes, standby: standby, connection: opened.connection)
        do {
            try await replicator.catchUp(through: nil)
        } catch {
            await replicator.close()
            throw error
        }
        await replicator.startFollowing()
        return ReplicatedStore(store: store, replicator: replicator, stream: stream)
    }

    /// Commits `action` to the stream and applies it (with everything committed before it) to
    /// the local store; returns its version. Concurrent calls of one process share a commit.
    ///
    /// The payload stored is the action's encoded properties (a `JSONAction`'s payload), as
    /// JSON text kept as written; every process decodes that text with its `ActionTypes` — this
    /// one too, so every process applies the same value. `file` and `line` are recorded as the
    /// action's source.
    ///
    /// - Throws: ``ReplicationError``: ``ReplicationError/Kind/invalidArgument`` when the action
    ///   does not encode as JSON, or its payload does not decode back into its registered type,
    ///   or this process is a forked child of the one that opened the stream (nothing is sent);
    ///   ``ReplicationError/Kind/readOnly`` on a follower; ``ReplicationError/Kind/connection``
    ///   when the connection was lost and not regained within
    ///   ``ReplicationOptions/reconnectTimeout``; ``ReplicationError/Kind/closed`` after
    ///   ``close()`` or a failure that stopped the replica. Every error that answers a dispatch
    ///   says what became of it in ``ReplicationError/outcome``: not stored, unknown (with
    ///   ``ReplicationError/writer`` and ``ReplicationError/sequence`` to look it up), or stored
    ///   at a version this replica did not apply.
    @discardableResult
    public func dispatch(
        _ action: some Action & Encodable, file: StaticString = #fileID, line: UInt = #line
    ) async throws -> UInt64 {
        let payload: String
        switch ChangeRecord.payloadValue(of: action) {
        case .success(let value):
            payload = value?.description ?? "null"
        case .failure(let error):
            throw ReplicationError(
                .invalidArgument, stream: stream.stream,
                "action \"\(action.identifier)\" does not encode as JSON: \(error.message)"
            ).refusingDispatch()
        }
        let source = file.hasPointerRepresentation ? "\(file):\(line)" : ""
        return try await replicator.submit(identifier: action.identifier, payload: payload, source: source)
    }

    /// Applies every action committed so far; returns the version applied.
    @discardableResult
    public func catchUp() async throws -> UInt64 {
        try await replicator.catchUp(through: nil)
    }

    /// How far the local store is behind the stream, as far as this process knows.
    public var lag: ReplicationLag {
        get async { await replicator.lag }
    }

    /// What stopped the replica (a payload that does not decode, a divergence, trimmed
    /// versions), or `nil` while it runs.
    public var failure: ReplicationError? {
        get async { await replicator.failure }
    }

    /// Waits for the dispatches under way to commit, stops following and closes the
    /// connections. Later calls throw ``ReplicationError/Kind/closed``. Idempotent; the local
    /// ``store`` stays readable.
    public func close() async {
        await replicator.close()
    }
}
