#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What one thread is doing with stores right now: which observers it is calling and which
/// stores it is delivering notifications for. Kept per thread (a pthread key) so that the rules
/// "an action dispatched from inside a notification is notified after the current round" and
/// "an observer that removes itself does not wait for itself" need no lock.
struct ThreadContext {
    /// Observer entries this thread is calling at the moment, innermost last.
    var calling: [ObjectIdentifier] = []
    /// Stores this thread is delivering notifications of, innermost last, each with the rounds
    /// that actions dispatched from inside its observers queued.
    var frames: [DeliveryFrame] = []

    init() {
        calling.reserveCapacity(4)
        frames.reserveCapacity(2)
    }

    /// How many calls of `entry` are running on this thread (an observer may be re-entered).
    func callCount(of entry: ObjectIdentifier) -> Int {
        var count = 0
        for id in calling where id == entry { count += 1 }
        return count
    }

    /// The index of the frame delivering for `store`, if this thread is inside such a delivery.
    func frameIndex(for store: ObjectIdentifier) -> Int? {
        var index = frames.count
        while index > 0 {
            index -= 1
            if frames[index].store == store { return index }
        }
        return nil
    }

    /// This thread's context, created on first use and freed when the thread exits.
    static var current: UnsafeMutablePointer<ThreadContext> {
        if let raw = pthread_getspecific(threadContextKey) {
            return raw.assumingMemoryBound(to: ThreadContext.self)
        }
        let context = UnsafeMutablePointer<ThreadContext>.allocate(capacity: 1)
        context.initialize(to: ThreadContext())
        pthread_setspecific(threadContextKey, context)
        return context
    }
}

/// One store's notification delivery in progress on a thread.
struct DeliveryFrame {
    let store: ObjectIdentifier
    /// Rounds queued by actions dispatched from inside the observers, delivered in order after the
    /// current round.
    var pending: [NotificationRound] = []
    var next = 0
}

/// One notification and the observers that were registered when its action was applied.
struct NotificationRound {
    let notification: StoreNotification
    let observers: ObserverList
}

/// The pthread key of ``ThreadContext``; its destructor frees the context when a thread exits.
let threadContextKey: pthread_key_t = {
    var key = pthread_key_t()
    let status = pthread_key_create(&key) { raw in
        guard let raw else { return }
        let context = raw.assumingMemoryBound(to: ThreadContext.self)
        context.deinitialize(count: 1)
        context.deallocate()
    }
    precondition(status == 0, "ReduxStore: pthread_key_create failed (\(status))")
    return key
}()
