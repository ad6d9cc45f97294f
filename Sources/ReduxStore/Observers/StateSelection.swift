/// A value an observer selects from the state (a key path's value, a JSON Pointer's node): read
/// and compared under the store's lock after each notifying action, so the observer is called
/// only when it changed, and no snapshot is taken.
///
/// The store calls ``start(state:)`` and ``update(state:version:)`` holding its lock, on the
/// state's address (a pointer to the stored `State`); nothing else may touch what they keep
/// between calls. What the observer is handed is kept apart, behind a lock of the selection's
/// own, because it is read after the store's lock is released.
package protocol StateSelection: AnyObject, Sendable {
    /// Reads the value of the state at rest, when the observer is added outside a reducer.
    func start(state: UnsafeMutableRawPointer)

    /// Reads the value after the action applied as `version` and compares it with the last one
    /// read. When it differs, keeps it as the newest for the observer and returns `true`. When
    /// no value was read yet (the observer was added inside a reducer), keeps it as the last
    /// one read and returns `false`.
    func update(state: UnsafeMutableRawPointer, version: UInt64) -> Bool
}

/// The newest value of a selection not yet handed to its observer, and the version it changed
/// at: a round delivered late (another thread's dispatch delivered first) hands nothing rather
/// than an older value, so an observer never sees a value go back.
package struct SelectedValue<Value> {
    private var value: Value?
    private var version: UInt64 = 0
    private var delivered: UInt64 = 0

    package init() {}

    /// Keeps `value` as the value at `version`.
    package mutating func set(_ value: Value, at version: UInt64) {
        self.value = value
        self.version = version
    }

    /// The newest value if it was not handed out yet.
    package mutating func take() -> Value? {
        guard version > delivered else { return nil }
        delivered = version
        return value
    }
}

/// The selection of ``Store/observe(_:queue:using:)``: the value at a key path of the state.
final class KeyPathSelection<State, Value: Equatable & Sendable>: StateSelection, @unchecked Sendable {
    // @unchecked: `last` is touched only by the store holding its lock; `newest` is behind its
    // own lock; the key path is immutable and Sendable.
    private let keyPath: KeyPath<State, Value> & Sendable
    /// The value read last (under the store's lock); `nil` until the first read.
    private var last: Value?
    /// What the observer is handed next; the observer's block holds it too.
    let newest = Locked(SelectedValue<Value>())

    init(_ keyPath: KeyPath<State, Value> & Sendable) {
        self.keyPath = keyPath
    }

    @inline(__always)
    private func read(_ state: UnsafeMutableRawPointer) -> Value {
        state.assumingMemoryBound(to: State.self).pointee[keyPath: keyPath]
    }

    func start(state: UnsafeMutableRawPointer) {
        last = read(state)
    }

    func update(state: UnsafeMutableRawPointer, version: UInt64) -> Bool {
        let value = read(state)
        guard let last else {
            self.last = value
            return false
        }
        guard value != last else { return false }
        self.last = value
        newest.withLock { $0.set(value, at: version) }
        return true
    }
}
