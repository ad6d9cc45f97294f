/// Makes an action that may borrow what it holds (a C caller's identifier and payload, valid
/// only for the call) into one that owns it: what a store's journal and action log keep of an
/// action past its dispatch. A store of such actions is given one at creation; it is called
/// under the store's lock only.
///
/// It knows one borrowing type, `Borrowing`, and one kept type, `Kept` (a value of at most the
/// container's inline buffer that owns nothing: a kept name, say). For an action of any other
/// type it does nothing; for a `Borrowing` it calls the keep function, which either writes the
/// bytes of a `Kept` value, the keeper completing its container, or a whole owned action. What
/// is known of the container's layout stays in ``ActionContainer``, checked before any store
/// exists.
///
/// A C function and the memory it works on, not a protocol's method: the action log calls it
/// for every record, and a call through a function pointer retains nothing and returns no
/// container to destroy (Benchmarks/README.md, "The live inspector on a C store").
package struct ActionKeeper: @unchecked Sendable {
    // @unchecked: `state` is the keeper's own memory, touched under the store's lock only;
    // `owner` keeps it alive as long as the store.

    /// What a keep function did with the `Borrowing` value at its first argument.
    package enum Outcome: Int {
        /// Nothing: the value owns what it holds already.
        case owns = 0
        /// Wrote a whole `any Action` that owns what it holds into the slot.
        case wroteAction = 1
        /// Wrote the bytes of a `Kept` value at the slot's start (its inline buffer).
        case wroteKept = 2
    }

    /// `keep(value, slot, state)`: `value` is a `Borrowing` in place in an action's container;
    /// `slot` uninitialized memory for one `any Action`; `state` the keeper's. Returns an
    /// ``Outcome``'s raw value.
    typealias Keep = @convention(c) (
        _ value: UnsafeRawPointer, _ slot: UnsafeMutableRawPointer, _ state: UnsafeMutableRawPointer?
    ) -> Int

    private let keep: Keep
    private let state: UnsafeMutableRawPointer?
    private let owner: AnyObject?
    /// The identity of the borrowing type.
    private let borrowing: UInt
    /// The words after a kept value's inline buffer in its container (``ActionContainer``).
    private let keptType: ActionContainer.TypeWords

    /// A keeper of `Borrowing` actions, calling `keep` with `state`, which `owner` keeps valid;
    /// `sample` is any `Kept` value (its container's type words are taken from it).
    package init<Borrowing: Action, Kept: Action>(
        keeping _: Borrowing.Type, as sample: Kept,
        keep: @escaping @convention(c) (UnsafeRawPointer, UnsafeMutableRawPointer, UnsafeMutableRawPointer?) -> Int,
        state: UnsafeMutableRawPointer?, owner: AnyObject?
    ) {
        precondition(_isPOD(Kept.self), "ReduxStore: a kept action type owns nothing: it is copied as bytes")
        ActionContainer.checkInline(Kept.self)
        ActionContainer.checkInline(Borrowing.self)
        self.keep = keep
        self.state = state
        self.owner = owner
        borrowing = ActionContainer.identity(of: Borrowing.self)
        keptType = ActionContainer.typeWords(of: sample)
    }

    /// Writes into `slot` (uninitialized memory for one `any Action`) the action of the container
    /// at `container`, made to own what it holds, and returns true; returns false and writes
    /// nothing when that action owns what it holds already (not a `Borrowing`, or one that owns).
    @inline(__always)
    func keep(_ container: UnsafeRawPointer, into slot: UnsafeMutableRawPointer) -> Bool {
        guard ActionContainer.typeIdentity(at: container) == borrowing else { return false }
        switch Outcome(rawValue: keep(container, slot, state)) {
        case .owns: return false
        case .wroteAction: return true
        case .wroteKept:
            ActionContainer.complete(slot, as: keptType)
            return true
        case nil: preconditionFailure("ReduxStore: an action keeper returned no outcome it knows")
        }
    }
}
