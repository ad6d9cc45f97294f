internal import CJSONC

extension Store {
    /// Rebuilds a store from a state and a journal: the state is the one before the journal's
    /// first entry (the initial state, or the state saved when the journal started), and each
    /// entry is applied with `reducers`, in order, through `version` (by default the last).
    ///
    /// ```swift
    /// var actions = ActionTypes()
    /// actions.register(AddTodo.self, for: "todo.add")
    /// let replayed = try Store(replaying: "journal.jsonl", from: AppState(), reducers: [reducer],
    ///                          actions: actions, through: 1_000)
    /// ```
    ///
    /// An entry of a registered identifier is decoded into its type; an entry marked `"typed"`
    /// whose identifier is not registered is an error; any other entry becomes a
    /// ``JSONAction`` with the entry's payload. The actions of one batch are applied as one
    /// batch. The new store's version is the last entry's applied. The whole journal (through
    /// `version`) is read and checked before anything is applied, so nothing is half applied.
    ///
    /// - Throws: ``StoreError`` naming the file and line for a journal with a gap, a version that
    ///   goes back, a torn last line, a line that is not an entry, an entry that is not
    ///   replayable, or a payload that does not decode; ``StoreError/Kind/invalidArgument`` for a
    ///   `version` outside the journal.
    public convenience init(
        replaying journal: String, from state: State, reducers: [Reducer<State>],
        actions: ActionTypes, through version: UInt64? = nil
    ) throws(StoreError) {
        let (start, groups) = try Self.readReplay(journal, actions: actions, through: version)
        self.init(reducers: reducers, adopting: Self.deepCopy(state), version: start)
        replay(groups)
    }

    /// ``init(replaying:from:reducers:actions:through:)`` with routed reducers (``Reducers``):
    /// the journal is read, checked and applied the same way, and each entry reaches the reducers
    /// that handle it. An entry of an identifier registered in `actions` is decoded by `actions`
    /// (then routed by its type); one that stays a ``JSONAction`` is routed as
    /// ``Reducers`` routes any: decoded if `reducers.actions` registers its identifier, by
    /// identifier if not.
    ///
    /// - Throws: ``StoreError`` as the initializer with a list of reducers does.
    public convenience init(
        replaying journal: String, from state: State, reducers: Reducers<State>,
        actions: ActionTypes, through version: UInt64? = nil
    ) throws(StoreError) {
        let (start, groups) = try Self.readReplay(journal, actions: actions, through: version)
        self.init(routing: reducers, adopting: Self.deepCopy(state), version: start)
        replay(groups)
    }

    /// Reads and checks `journal` through `version` for a replay: the version before its first
    /// entry, and its actions in the groups they were applied in (a batch, or one action).
    private static func readReplay(
        _ journal: String, actions: ActionTypes, through version: UInt64?
    ) throws(StoreError) -> (start: UInt64, groups: [[any Action]]) {

        var groups: [[any Action]] = []
        var first: UInt64?
        var last: UInt64?
        var currentBatch: UInt64?
        try JournalReader.read(journal) { (line) throws(StoreError) -> Bool in
            if first == nil { first = line.version }
            if let version, line.version > version { return false }
            guard line.isReplayable else {
                if let reason = line.payloadError {
                    throw StoreError(
                        .decode,
                        "\(line.place): action \"\(line.identifier)\" was recorded without its payload, which could not be written: \(reason)")
                }
                throw StoreError(
                    .decode, "\(line.place): action \"\(line.identifier)\" was recorded without its payload (not replayable)")
            }
            if line.isTyped, !actions.isRegistered(line.identifier) {
                throw StoreError(
                    .decode,
                    "\(line.place): action \"\(line.identifier)\" is a typed action: register its type in ActionTypes to replay it")
            }
            let action: any Action
            do throws(StoreError) {
                action = try actions.action(identifier: line.identifier, payload: line.payloadTree)
            } catch {
                throw StoreError(error.kind, "\(line.place): \(error.message)")
            }
            if let batch = line.batch, batch == currentBatch, !groups.isEmpty {
                groups[groups.count - 1].append(action)
            } else {
                groups.append([action])
            }
            currentBatch = line.batch
            last = line.version
            return true
        }
        let start = (first ?? 1) - 1
        if let version {
            guard version >= start, version <= (last ?? start) else {
                throw StoreError(
                    .invalidArgument,
                    "through: \(version) is outside the journal (versions \(start)–\(last ?? start))")
            }
        }
        return (start, groups)
    }

    /// Applies the groups a replay read, each as it was applied (one action, or a batch).
    private func replay(_ groups: [[any Action]]) {
        for group in groups {
            if group.count == 1 {
                dispatch(erased: group[0])
            } else {
                dispatch(batch: group, source: .unknown)
            }
        }
    }
}
