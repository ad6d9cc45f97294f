/// How a store delivers notifications without per-thread bookkeeping in the common case.
///
/// One thread at a time may own the store's fast path (`Store.deliveryOwner` holds its id): it
/// delivers its rounds with the queue of pending rounds and the record of the observer being
/// called kept here, not in its thread context. A thread that finds the fast path taken, or that
/// is already delivering this store's notifications on the slow path (`Store.slowDeliveries`),
/// uses its ``ThreadContext`` instead. Both keep the same rules: an action dispatched from inside
/// an observer is notified after the current round.
///
/// The store keeps it behind a pointer (no run-time exclusivity checks); only the owner touches it.
struct DeliveryState {
    /// Rounds queued by actions dispatched from inside the owner's observers.
    var pending: [NotificationRound] = []
    var next = 0
}
