import Dispatch

extension Store {
    /// Observes one value of the state: `block` is called with the new value after an action
    /// changed it, and not for actions that left it equal.
    ///
    /// ```swift
    /// let token = store.observe(\.todos.count) { count in
    ///     print("now \(count) todos")
    /// }
    /// ```
    ///
    /// The value is read under the store's lock after each notifying action (no snapshot is
    /// taken) and compared with the value read before. For a struct state and a path of stored
    /// properties (`\.settings.limit`) the read is a load at a fixed offset; a path through a
    /// class or a computed property is applied as a key path, which costs more (see
    /// `Benchmarks/README.md`, "What composition costs"). The first comparison is with the value
    /// when the observer was added. It follows the rules of
    /// ``addObserver(forName:queue:using:)``: with no `queue` the block runs on the dispatching
    /// thread before `dispatchAction` returns; with a `queue` calls are coalesced. Each call
    /// hands the newest value not yet handed out, so each change is handed at most once, and a
    /// round delivered after a newer one hands nothing. With a `queue` (one serial queue) the
    /// values arrive in the order of the changes and the last one is the state's; without one,
    /// calls from several dispatching threads may run at the same time and finish in any order,
    /// as for any observer without a queue. An action that opts out of notifying
    /// (``Action/notifiesObservers``) is not compared: its change is seen by the next notifying
    /// action. A batch (``dispatchActions(_:file:line:)``) is compared once, after its last action.
    ///
    /// Removed with ``removeObserver(_:)``, like any observer.
    ///
    /// - Parameters:
    ///   - keyPath: the value to watch; reading it must not call back into the store.
    ///   - queue: where to call `block`, or `nil` for the dispatching thread.
    ///   - block: called with each new value.
    /// - Returns: the token for ``removeObserver(_:)``.
    @discardableResult
    @inlinable
    public func observe<Value: Equatable & Sendable>(
        _ keyPath: KeyPath<State, Value> & Sendable,
        queue: DispatchQueue? = nil,
        using block: @escaping @Sendable (Value) -> Void
    ) -> ObserverToken {
        // Inlinable, so the reading and comparing below is specialized in the caller's module.
        // A path of stored properties of a struct is an offset into the state: read there, it
        // costs a load; any other path is applied as a key path, which costs a call into the
        // runtime's unspecialized code (Benchmarks/README.md, "What composition costs").
        let offset = MemoryLayout<State>.offset(of: keyPath)
        let box = SelectedValueBox<Value>()
        let selection = StateSelection(
            compare: { state in
                let value =
                    if let offset {
                        (state + offset).assumingMemoryBound(to: Value.self).pointee
                    } else {
                        state.assumingMemoryBound(to: State.self).pointee[keyPath: keyPath]
                    }
                guard let last = box.last else {
                    box.last = value
                    return false
                }
                if value == last { return false }
                box.last = value
                return true
            },
            current: { box.last! })
        return addObserver(named: .stateDidChange, queue: queue, onRelease: nil, selection: selection) { _ in
            if let value = selection.takeNewest()?.value as? Value { block(value) }
        }
    }
}
