/// How a store delivers notifications without per-thread bookkeeping in the common case.
///
/// One thread at a time may own the store's fast path (`Store.deliveryOwner` holds its id, set
/// under the store's lock): it keeps the rounds queued by its observers' dispatches here, and
/// announces the observer it is calling in `Store.callingEntry`, not in its thread context. A
/// thread that finds the fast path taken, or while any thread delivers this store's notifications
/// on the slow path (`Store.slowDeliveries`), uses its ``ThreadContext`` instead. Both keep the
/// same rules: an action dispatched from inside an observer is notified after the current round.
///
/// The store keeps it behind a pointer (no run-time exclusivity checks); only the owner touches it.
struct DeliveryState {
    /// Rounds queued by actions dispatched from inside the owner's observers.
    var pending: [NotificationRound] = []
    var next = 0
}
