// `SendableMetatype`: the tasks below run code that names the state's type; every concrete type
// but one with an actor-isolated conformance has it.
extension Store where State: SendableMetatype {
    /// Applies each action of an async sequence as it arrives, in a task, and returns the task.
    ///
    /// ```swift
    /// let ticks = AsyncStream<Tick> { continuation in /* yield a Tick a second */ }
    /// let task = store.dispatch(contentsOf: ticks)
    /// // later
    /// task.cancel()            // no further action is applied
    /// ```
    ///
    /// The actions are applied in the order the sequence yields them, each with
    /// ``dispatchAction(_:file:line:)`` (so they pass the middleware). Cancelling the task stops further
    /// actions at once: none is applied after the cancellation, and the task ends with
    /// `CancellationError`. An error
    /// the sequence throws ends the task with that error (`try await task.value`). The task holds
    /// the store weakly: once the store is freed, nothing more is applied and the task ends
    /// without an error. Each action is recorded as dispatched from `file` and `line`, the
    /// caller's by default.
    @discardableResult
    public func dispatch<S: AsyncSequence & Sendable>(
        contentsOf actions: S, file: StaticString = #fileID, line: UInt = #line
    ) -> Task<Void, any Error>
    where S.Element: Action {
        weak let store = self
        return Task {
            for try await action in actions {
                try Task.checkCancellation()
                guard let store else { return }
                store.dispatchAction(action, file: file, line: line)
            }
            // A sequence that ended because the task was cancelled (as AsyncStream's do) says so.
            try Task.checkCancellation()
        }
    }

    /// Runs an async closure that may await and dispatch (a thunk, an effect), in a task, and
    /// returns the task.
    ///
    /// ```swift
    /// store.dispatch { store in
    ///     let todos = try await api.fetchTodos()
    ///     store.dispatchAction(TodosLoaded(todos: todos))
    /// }
    /// ```
    ///
    /// The error the closure throws ends the task with it (`try await task.value`); nothing is
    /// swallowed. Cancellation is cooperative: the closure sees `Task.isCancelled` and
    /// cancellation errors of what it awaits. The task holds the store weakly until the closure
    /// starts: if the store is freed before then, the closure does not run. Once running, the
    /// closure holds the store it was given.
    @discardableResult
    public func dispatch(
        _ thunk: @escaping @Sendable (Store<State>) async throws -> Void
    ) -> Task<Void, any Error> {
        weak let store = self
        return Task {
            try Task.checkCancellation()
            guard let store else { return }
            try await thunk(store)
        }
    }
}
