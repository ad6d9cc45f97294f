internal import CJSONC
import FoundationEssentials
import ReduxStore
import Synchronization

/// What the inspector needs of a store, whatever its state's type: its change feed, its state
/// as JSON at a version, diffs, restore and dispatch. Also the inspector's own record of the
/// newest actions, and the pages connected to it.
final class InspectedStore: Sendable {
    let name: String
    let options: InspectorOptions
    private let access: any StoreAccess
    /// The newest actions (without patches), for a page that connects later; and the pages.
    private let shared: SharedBox

    struct Shared: Sendable {
        var backlog: Ring<ChangeRecord>
        var clients: [ObjectIdentifier: ClientQueue] = [:]
        /// The listener that fans each record out to the pages, with its patch; only while a
        /// page is connected (patches cost each action an encoding of the state and a diff).
        var fanOut: ChangeListener?
    }

    init<State>(_ store: Store<State>, options: InspectorOptions) {
        name = String(describing: State.self)
        self.options = options
        access = StoreAccessOf(store: store)
        let shared = SharedBox(Shared(backlog: Ring(capacity: options.keptActions)))
        self.shared = shared
        backlogListenerToken = ChangeListener(includingPatches: false) { record in
            shared.withLock { $0.backlog.append(record) }
        }
        access.addListener(backlogListenerToken)
    }

    private let backlogListenerToken: ChangeListener

    /// Stops listening to the store.
    func detach() {
        access.removeListener(backlogListenerToken)
        let fanOut = shared.withLock { shared -> ChangeListener? in
            defer { shared.fanOut = nil }
            return shared.fanOut
        }
        if let fanOut { access.removeListener(fanOut) }
    }

    // MARK: Pages

    /// Registers a page's queue; returns the backlog and the version it holds up to, read while
    /// no action is applied (so the page's first change follows it). `nil` when
    /// ``InspectorOptions/maximumClients`` pages are connected.
    func connect(_ queue: ClientQueue) -> (backlog: [ChangeRecord], version: UInt64)? {
        access.whileNoActionIsApplied { addListener -> (backlog: [ChangeRecord], version: UInt64)? in
            let result = shared.withLock { shared -> (backlog: [ChangeRecord], needsFanOut: Bool)? in
                guard shared.clients.count < options.maximumClients else { return nil }
                shared.clients[ObjectIdentifier(queue)] = queue
                return (shared.backlog.elements, shared.fanOut == nil)
            }
            guard let result else { return nil }
            if result.needsFanOut {
                let fanOut = ChangeListener(includingPatches: true) { [shared] record in
                    for client in shared.withLock({ Array($0.clients.values) }) { client.put(record) }
                }
                shared.withLock { $0.fanOut = fanOut }
                // Under the store's lock: the listener hears the very next action.
                addListener(fanOut)
            }
            return (result.backlog, access.version)
        }
    }

    /// Removes a page's queue; the last page gone, the patches stop.
    func disconnect(_ queue: ClientQueue) {
        let fanOut = shared.withLock { shared -> ChangeListener? in
            shared.clients[ObjectIdentifier(queue)] = nil
            guard shared.clients.isEmpty, let fanOut = shared.fanOut else { return nil }
            shared.fanOut = nil
            return fanOut
        }
        if let fanOut { access.removeListener(fanOut) }
    }

    var clientCount: Int { shared.withLock { $0.clients.count } }

    // MARK: The store

    var version: UInt64 { access.version }
    var keptVersions: [UInt64] { access.keptVersions }

    /// The state as JSON at `version` (the newest when `nil`), and that version.
    func state(at version: UInt64?) throws(StoreError) -> (version: UInt64, value: JSONValue) {
        try access.state(at: version)
    }

    func diff(from: UInt64, to: UInt64) throws(StoreError) -> [JSONPatch.Operation] {
        let (_, before) = try access.state(at: from)
        let (_, after) = try access.state(at: to)
        return JSONPatch.diff(from: before, to: after)
    }

    func restore(version: UInt64) throws(StoreError) -> UInt64 {
        guard options.allowsRestore else {
            throw StoreError(.invalidArgument, "restore is not allowed by this program (InspectorOptions.allowsRestore)")
        }
        return try access.restore(version: version)
    }

    func dispatch(identifier: String, payload: JSONValue?) throws(StoreError) -> UInt64 {
        guard options.allowsDispatch else {
            throw StoreError(.invalidArgument, "dispatch is not allowed by this program (InspectorOptions.allowsDispatch)")
        }
        guard let decode = options.actions.decoder(for: identifier) else {
            throw StoreError(.invalidArgument, "\"\(identifier)\" is not an identifier this program lets the page dispatch")
        }
        let tree = try payload.map { (value) throws(StoreError) in try JSONCEncoder().encode(value) } ?? nil
        defer { json_object_put(tree) }
        let action: any Action
        do {
            action = try decode(tree)
        } catch {
            throw StoreError(coding: error, prefix: "payload")
        }
        return access.dispatch(action)
    }
}

/// The inspector's shared record, behind its lock; captured by the listeners (which the store
/// holds), so it holds nothing of the store.
final class SharedBox: Sendable {
    private let mutex: Mutex<InspectedStore.Shared>
    init(_ shared: InspectedStore.Shared) { mutex = Mutex(shared) }
    func withLock<T>(_ body: (inout InspectedStore.Shared) -> T) -> T { mutex.withLock { body(&$0) } }
}

/// A store's operations, erased of its state's type.
protocol StoreAccess: Sendable {
    var version: UInt64 { get }
    var keptVersions: [UInt64] { get }
    func addListener(_ listener: ChangeListener)
    func removeListener(_ listener: ChangeListener)
    func whileNoActionIsApplied<T>(_ body: (_ addListener: (ChangeListener) -> Void) -> T) -> T
    func state(at version: UInt64?) throws(StoreError) -> (version: UInt64, value: JSONValue)
    func restore(version: UInt64) throws(StoreError) -> UInt64
    func dispatch(_ action: any Action) -> UInt64
}

struct StoreAccessOf<State: Codable>: StoreAccess, @unchecked Sendable {
    // @unchecked: `Store` is Sendable; `State` itself need not be.
    let store: Store<State>

    var version: UInt64 { store.version }
    var keptVersions: [UInt64] { store.historyVersions }
    func addListener(_ listener: ChangeListener) { store.addChangeListener(listener) }
    func removeListener(_ listener: ChangeListener) { store.removeChangeListener(listener) }
    func whileNoActionIsApplied<T>(_ body: (_ addListener: (ChangeListener) -> Void) -> T) -> T {
        store.whileNoActionIsApplied(body)
    }

    func state(at version: UInt64?) throws(StoreError) -> (version: UInt64, value: JSONValue) {
        if let version, version != store.version {
            guard let state = store.historyState(at: version) else {
                let kept = store.historyVersions
                let range = kept.isEmpty ? "none" : "\(kept.first!)–\(kept.last!)"
                throw StoreError(.invalidArgument, "version \(version) is not kept (kept: \(range))")
            }
            return (version, try JSONValue(encoding: state))
        }
        return try store.withLockedState { (state, version) throws(StoreError) in
            (version, try JSONValue(encoding: state))
        }
    }

    func restore(version: UInt64) throws(StoreError) -> UInt64 {
        try store.restore(version: version)
        return store.version
    }

    func dispatch(_ action: any Action) -> UInt64 {
        store.dispatch(erased: action, source: .unknown)
        return store.version
    }
}

/// A bounded ring of the newest elements.
struct Ring<Element> {
    // Sendable below, where its elements are.
    private var storage: [Element] = []
    private var start = 0
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    mutating func append(_ element: Element) {
        guard capacity > 0 else { return }
        if storage.count < capacity {
            storage.append(element)
        } else {
            storage[start] = element
            start = (start + 1) % capacity
        }
    }

    /// Oldest first.
    var elements: [Element] { Array(storage[start...] + storage[..<start]) }
}

extension Ring: Sendable where Element: Sendable {}
