/// The observers of a store at one moment, in the order they were added. Immutable: adding or
/// removing an observer makes a new list, so a delivery can walk the list it took while others
/// come and go.
///
/// The entries sit in a buffer the list owns, each retained once, so walking them costs no
/// retain or release.
final class ObserverList: @unchecked Sendable {
    // @unchecked: immutable after init.
    let entries: UnsafeMutableBufferPointer<Unmanaged<ObserverEntry>>

    init(_ entries: [ObserverEntry]) {
        self.entries = .allocate(capacity: entries.count)
        for (index, entry) in entries.enumerated() {
            (self.entries.baseAddress! + index).initialize(to: .passRetained(entry))
        }
    }

    deinit {
        for entry in entries { entry.release() }
        entries.deallocate()
    }

    static let empty = ObserverList([])

    var count: Int { entries.count }

    /// The entries as an array, to build the next list from.
    var array: [ObserverEntry] { entries.map { $0.takeUnretainedValue() } }

    /// The index of the observer with `token`.
    func index(of token: ObserverToken) -> Int? {
        entries.firstIndex { $0._withUnsafeGuaranteedRef { $0.token == token } }
    }
}
