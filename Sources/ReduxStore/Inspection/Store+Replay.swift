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
        var groups: [[any Action]] = []
        var first: UInt64?
        var last: UInt64?
        var currentBatch: UInt64?
        try JournalReader.read(journal) { (line) throws(StoreError) -> Bool in
            if first == nil { first = line.version }
            if let version, line.version > version { return false }
            guard line.replayable else {
                if let reason = line.payloadError {
                    throw StoreError(
                        .decode,
                        "\(line.place): action \"\(line.identifier)\" was recorded without its payload, which could not be written: \(reason)")
                }
                throw StoreError(
                    .decode, "\(line.place): action \"\(line.identifier)\" was recorded without its payload (not replayable)")
            }
            if line.typed, !actions.isRegistered(line.identifier) {
                throw StoreError(
                    .decode,
                    "\(line.place): action \"\(line.identifier)\" is a typed action: register its type in ActionTypes to replay it")
            }
            let action: any Action
            do throws(StoreError) {
                action = try actions.action(identifier: line.identifier, payload: line.payload)
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
        self.init(reducers: reducers, adopting: Self.deepCopy(state), version: start)
        for group in groups {
            if group.count == 1 {
                dispatch(erased: group[0])
            } else {
                dispatch(batch: group, source: .unknown)
            }
        }
    }
}
