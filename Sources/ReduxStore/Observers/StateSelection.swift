/// A value an observer selects from the state (a key path's value, a JSON Pointer's node): read
/// and compared under the store's lock after each notifying action, so the observer is called
/// only when it changed, and no snapshot is taken.
///
/// One final class, not generic, so a dispatch calls it without generic metadata or a protocol
/// witness. The reading and comparing is a closure made where the state's and the value's types
/// are known: ``Store/observe(_:queue:using:)`` is inlinable, so its closure is specialized in the
/// caller's module (unspecialized, the same work cost many times as much, most of it generic
/// metadata lookups: Benchmarks/README.md, "What composition costs"); a selection of a JSON
/// Pointer is made the same way.
///
/// The store calls ``start(state:)`` and ``update(state:version:)`` holding its lock, on the
/// state's address (a pointer to the stored `State`); what `compare` keeps between calls is
/// touched only then. What the observer is handed is kept apart, behind a lock of its own,
/// because it is taken after the store's lock is released.
///
/// Package, with its initializer and ``takeNewest()``, rather than part of the bindings seam
/// (<doc:TheBindingsSeam>): the inlinable ``Store/observe(_:queue:using:)`` makes one in its
/// caller's module; bindings make one to observe a part of the state.
@usableFromInline
package final class StateSelection: @unchecked Sendable {
    // @unchecked: `compare` and `current` touch their captures only under the store's lock;
    // `newest` is behind its own lock.

    /// Reads the value (the caller holds the store's lock) and compares it with the last one
    /// read: `true` when it changed. The first read keeps the value and returns `false`.
    private let compare: (UnsafeMutableRawPointer) -> Bool
    /// The last value read, boxed for the observer (called only after a change).
    private let current: () -> any Sendable
    private let newest = Locked(SelectedValue<any Sendable>())

    @usableFromInline
    package init(
        compare: @escaping (UnsafeMutableRawPointer) -> Bool,
        current: @escaping () -> any Sendable
    ) {
        self.compare = compare
        self.current = current
    }

    /// Reads the value of the state at rest, when the observer is added outside a reducer.
    @usableFromInline
    func start(state: UnsafeMutableRawPointer) {
        _ = compare(state)
    }

    /// Reads the value after the action applied as `version` and compares it with the last one
    /// read. When it differs, keeps it as the newest for the observer and returns `true`. When
    /// no value was read yet (the observer was added inside a reducer), keeps it as the last
    /// one read and returns `false`.
    @inline(__always)
    func update(state: UnsafeMutableRawPointer, version: UInt64) -> Bool {
        guard compare(state) else { return false }
        keepCurrent(at: version)
        return true
    }

    /// The end of ``update(state:version:)`` when the value changed: out of line, so that the
    /// test of an unchanged value, on every dispatch, stays small enough to inline.
    @inline(never)
    private func keepCurrent(at version: UInt64) {
        let value = current()
        newest.withLock { $0.set(value, at: version) }
    }

    /// The value to hand the observer now and the version it changed at, if it changed since
    /// it was last handed one.
    @usableFromInline
    package func takeNewest() -> (value: any Sendable, version: UInt64)? {
        newest.withLock { $0.take() }
    }
}

/// The newest value of a selection not yet handed to its observer, and the version it changed
/// at: a round delivered late (another thread's dispatch delivered first) hands nothing rather
/// than an older value.
struct SelectedValue<Value> {
    private var value: Value?
    private var version: UInt64 = 0
    private var delivered: UInt64 = 0

    init() {}

    /// Keeps `value` as the value at `version`.
    mutating func set(_ value: Value, at version: UInt64) {
        self.value = value
        self.version = version
    }

    /// The newest value and its version, if it was not handed out yet.
    mutating func take() -> (value: Value, version: UInt64)? {
        guard version > delivered, let value else { return nil }
        delivered = version
        return (value, version)
    }
}

/// The last value a key-path observer read, touched only under the store's lock.
@usableFromInline
final class SelectedValueBox<Value>: @unchecked Sendable {
    // @unchecked: see above. `@exclusivity(unchecked)`: the store's lock already keeps accesses
    // apart; the run-time check cost a call per access.
    @exclusivity(unchecked) @usableFromInline var last: Value?

    @inlinable
    init() {}
}
