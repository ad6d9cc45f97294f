#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A value each thread has its own of: made on the thread's first use, freed when the thread
/// exits. A pthread key holds the pointer to it.
///
/// `pthread_key_create` takes the destructor as a C function, which cannot be generic: the
/// caller names the type, `ThreadStorage<Kept> { ThreadStorage<Kept>.free($0) }`, or first
/// releases what the value holds.
@_spi(Bindings) public struct ThreadStorage<Value>: Sendable {
    /// The key (a number, the same in every thread).
    @usableFromInline let key: pthread_key_t

    /// Makes the key; `destructor` runs with each thread's value when that thread exits.
    public init(destructor: @convention(c) (UnsafeMutableRawPointer?) -> Void) {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, destructor)
        precondition(status == 0, "ReduxStore: pthread_key_create failed (\(status))")
        self.key = key
    }

    /// This thread's value, or nil before it made one.
    @inlinable @inline(__always)
    public var existing: UnsafeMutablePointer<Value>? {
        pthread_getspecific(key)?.assumingMemoryBound(to: Value.self)
    }

    /// This thread's value, made by `make` on first use; nil when it could not be kept (the
    /// system ran out of memory for the key's slot).
    @inlinable @inline(__always)
    public func value(orMake make: () -> Value) -> UnsafeMutablePointer<Value>? {
        if let existing { return existing }
        return keep(make())
    }

    /// Keeps `value` as this thread's.
    @usableFromInline
    func keep(_ value: Value) -> UnsafeMutablePointer<Value>? {
        let made = UnsafeMutablePointer<Value>.allocate(capacity: 1)
        made.initialize(to: value)
        guard pthread_setspecific(key, made) == 0 else {
            made.deinitialize(count: 1)
            made.deallocate()
            return nil
        }
        return made
    }

    /// Deinitializes and frees a value this storage made: the destructor's work.
    public static func free(_ raw: UnsafeMutableRawPointer?) {
        guard let raw else { return }
        let value = raw.assumingMemoryBound(to: Value.self)
        value.deinitialize(count: 1)
        value.deallocate()
    }
}
