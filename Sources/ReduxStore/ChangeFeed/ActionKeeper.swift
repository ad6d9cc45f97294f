/// Makes an action that may borrow what it holds (memory its dispatcher lends only for the call)
/// into one that owns it: what a store's action log, and so its journal, keeps of an action past
/// its dispatch. A store whose actions may borrow is given one at creation; stores of Swift
/// values, which own what they hold, have none.
///
/// Called with every action the store's log records, under the store's lock: it returns the
/// action to keep, or `nil` when `action` owns what it holds already and is kept as it is.
@_spi(Bindings) public typealias ActionKeeper = @Sendable (_ action: any Action) -> (any Action)?
