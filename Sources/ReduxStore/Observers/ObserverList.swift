/// The observers of a store at one moment, in the order they were added. Immutable: adding or
/// removing an observer makes a new list, so a delivery can walk the list it took while others
/// come and go; and a delivery's hold on the list keeps its entries alive (see
/// ``ObserverEntry``).
final class ObserverList: Sendable {
    let entries: [ObserverEntry]
    /// ``entries`` unretained, for delivery: a round holds its list, which holds its entries, so
    /// calling each observer needs no reference of its own (a retain and a release per
    /// observer per action otherwise, around the call of its block).
    let unretained: [Unmanaged<ObserverEntry>]
    /// The selections of the observers that select a value from the state (key-path and JSON
    /// Pointer observers), which a dispatch updates under the lock; empty for most stores.
    let selecting: [StateSelection]
    /// Whether ``selecting`` is not empty: tested first, so a dispatch to a store without
    /// selecting observers touches no second array.
    let hasSelections: Bool
    /// The selection when there is exactly one (the common case), unretained: ``selecting``
    /// holds it. Updating it costs no array walk and no reference counting.
    let onlySelection: Unmanaged<StateSelection>?
    /// Whether an observer asked for each action's patch: the store then diffs the state after
    /// each action (see ``Recorder``).
    let wantsPatches: Bool
    /// The observers that asked for patches.
    let patchObservers: [ObserverEntry]
    /// Whether every observer selects a value (then a round where none changed calls nobody).
    let onlySelecting: Bool

    init(_ entries: [ObserverEntry]) {
        self.entries = entries
        self.unretained = entries.map { .passUnretained($0) }
        self.selecting = entries.compactMap(\.selection)
        self.hasSelections = !selecting.isEmpty
        self.onlySelection = selecting.count == 1 ? Unmanaged.passUnretained(selecting[0]) : nil
        self.onlySelecting = selecting.count == entries.count
        self.patchObservers = entries.filter { $0.wantsPatch }
        self.wantsPatches = !patchObservers.isEmpty
    }

    static let empty = ObserverList([])

    var count: Int { entries.count }

    /// Reads and compares the values of the selecting observers of `list` after the action
    /// applied as `version`; returns whether any changed. The caller holds the store's lock,
    /// which keeps the list and its selections alive: this takes no references of its own
    /// (the retains and releases were a large part of a key-path observer's cost;
    /// Benchmarks/README.md, "What composition costs"). Not a method of the generic store:
    /// there, the closure below was called, not inlined.
    static func updateSelections(
        of list: Unmanaged<ObserverList>, state: UnsafeMutableRawPointer, version: UInt64
    ) -> Bool {
        if let only = list._withUnsafeGuaranteedRef({ $0.onlySelection }) {
            return only._withUnsafeGuaranteedRef { $0.update(state: state, version: version) }
        }
        return list._withUnsafeGuaranteedRef { observers in
            observers.selecting.withUnsafeBufferPointer { selections in
                var changed = false
                for index in selections.indices
                where selections[index].update(state: state, version: version) {
                    changed = true
                }
                return changed
            }
        }
    }

    /// The index of the observer with `token`.
    func index(of token: ObserverToken) -> Int? {
        entries.firstIndex { $0.token == token }
    }
}
