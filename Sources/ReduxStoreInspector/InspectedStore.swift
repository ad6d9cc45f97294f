internal import CJSONC
import FoundationEssentials
import ReduxStore
import Synchronization

/// What the inspector needs of a store, whatever its kind (a Swift `Store<State>`, a C store, a
/// recorded journal): its change feed, its state as JSON at a version, diffs, restore and
/// dispatch. Also the inspector's own record of the newest actions, and the pages connected to it.
final class InspectedStore: Sendable {
    let name: String
    let options: InspectorOptions
    private let access: any StoreAccess
    /// The newest actions (without patches), for a page that connects later; and the pages.
    private let shared: SharedBox

    struct Shared: Sendable {
        var backlog: Ring<LoggedChange>
        var clients: [ObjectIdentifier: ClientQueue] = [:]
        /// The listener that fans each change out to the pages, with its patch; only while a
        /// page is connected (patches cost each action an encoding of the state and a diff).
        var fanOut: InspectorListener?
        /// Set by ``InspectedStore/detach()``.
        var detached = false
    }

    init(_ access: any StoreAccess, options: InspectorOptions) {
        name = access.name
        self.options = options
        self.access = access
        let shared = SharedBox(Shared(backlog: Ring(capacity: max(options.keptActions, access.recorded.count))))
        for change in access.recorded { shared.withLock { $0.backlog.append(change) } }
        self.shared = shared
        keepsLog = access.keepsLog
        if keepsLog {
            // With keptActions 0 the log is kept only while a page is connected.
            if options.keptActions > 0 { access.keepLog(options.keptActions) }
            backlogListener = nil
            ticker = Task.detached { await Self.tick(access) }
        } else {
            let backlogListener = InspectorListener(includingPatches: false) { change in
                shared.withLock { $0.backlog.append(change) }
            }
            self.backlogListener = backlogListener
            ticker = nil
            access.add(backlogListener)
        }
    }

    /// Whether the store keeps the log itself (a Swift store's action log, read by each page's
    /// sender, ``readLog(after:limit:wake:)``); otherwise the inspector listens to the store,
    /// keeps the backlog, and fans each change out to the pages with its patch.
    let keepsLog: Bool
    private let backlogListener: InspectorListener?
    /// Tells the store's log when to read the clock again (``tick(_:)``); cancelled at ``detach()``.
    private let ticker: Task<Void, Never>?
    /// The pages connected to a store that keeps the log, counted apart from ``shared`` (whose
    /// lock a C store's listener takes under the store's lock): the log is turned on and off
    /// under it, with ``InspectorOptions/keptActions`` 0, as the first page comes and the last goes.
    private let logPages = Mutex(0)

    /// Stops listening to the store and lets it go. Idempotent.
    func detach() {
        let (first, fanOut) = shared.withLock { shared -> (Bool, InspectorListener?) in
            defer {
                shared.fanOut = nil
                shared.detached = true
            }
            return (!shared.detached, shared.fanOut)
        }
        guard first else { return }
        if let backlogListener { access.remove(backlogListener) }
        ticker?.cancel()
        if keepsLog { logPages.withLock { _ in access.keepLog(0) } }
        if let fanOut { access.remove(fanOut) }
        access.detached()
    }

    /// Ticks the store's log (``StoreAccess/tickLog()``) every ``tickInterval`` while its
    /// version moves, and every ``quietTickInterval`` once it has not moved for a second, until
    /// cancelled. A record takes the time the last record that read the clock read, and reads it
    /// again after a tick: so a dispatch does not read the clock itself (about 5 ns of a 40 ns
    /// dispatch), and a record's time is earlier than its action's by at most about a tick
    /// interval: 4 ms while actions flow (the coarse clock's own resolution on most Linux
    /// kernels), 50 ms for the first ones after a quiet second. The first record after a tick
    /// reads the clock: an action alone after a quiet spell has the coarse clock's time.
    private static func tick(_ access: any StoreAccess) async {
        var seen = access.version
        var moved = ContinuousClock.now
        while !Task.isCancelled {
            let version = access.version
            let now = ContinuousClock.now
            if version != seen {
                seen = version
                moved = now
                access.tickLog()
            }
            try? await Task.sleep(for: now - moved < .seconds(1) ? tickInterval : quietTickInterval)
        }
    }

    static let tickInterval = Duration.milliseconds(4)
    static let quietTickInterval = Duration.milliseconds(50)

    // MARK: Pages

    /// Registers a page's queue; returns the backlog and the version it holds up to, read while
    /// no action is applied where the store allows it (so the page's first change follows it;
    /// otherwise a change applied meanwhile reaches the page as a gap). `nil` when
    /// ``InspectorOptions/maximumClients`` pages are connected.
    func connect(_ queue: ClientQueue) -> (backlog: [LoggedChange], version: UInt64, state: Result<JSONValue, StoreError>?)? {
        if keepsLog {
            let added = shared.withLock { shared -> Bool in
                guard shared.clients.count < options.maximumClients else { return false }
                shared.clients[ObjectIdentifier(queue)] = queue
                return true
            }
            guard added else { return nil }
            logPages.withLock { pages in
                pages += 1
                if pages == 1, options.keptActions == 0 { access.keepLog(max(options.clientBuffer, 64)) }
            }
            // The state now, then the log up to its version (every version up to it is logged by
            // then); what follows reaches the page through its sender, patched from this state.
            let state: Result<(version: UInt64, value: JSONValue), StoreError>
            do throws(StoreError) { state = .success(try access.state(at: nil)) } catch { state = .failure(error) }
            let read = access.readLog(after: 0, limit: options.keptActions, includingState: false, wake: nil)
            let version = (try? state.get().version) ?? read?.version ?? access.version
            return (read?.changes.filter { $0.version <= version } ?? [], version, state.map(\.value))
        }
        return access.whileNoActionIsApplied { add -> (backlog: [LoggedChange], version: UInt64, state: Result<JSONValue, StoreError>?)? in
            let result = shared.withLock { shared -> (backlog: [LoggedChange], needsFanOut: Bool)? in
                guard shared.clients.count < options.maximumClients else { return nil }
                shared.clients[ObjectIdentifier(queue)] = queue
                return (shared.backlog.elements, shared.fanOut == nil)
            }
            guard let result else { return nil }
            if result.needsFanOut {
                let fanOut = InspectorListener(includingPatches: true) { [shared] change in
                    for client in shared.withLock({ Array($0.clients.values) }) { client.put(change) }
                }
                shared.withLock { $0.fanOut = fanOut }
                add(fanOut)
            }
            return (result.backlog, result.backlog.last?.version ?? access.version, nil)
        }
    }

    /// Removes a page's queue; the last page gone, the patches stop.
    func disconnect(_ queue: ClientQueue) {
        let fanOut = shared.withLock { shared -> InspectorListener? in
            shared.clients[ObjectIdentifier(queue)] = nil
            guard shared.clients.isEmpty, let fanOut = shared.fanOut else { return nil }
            shared.fanOut = nil
            return fanOut
        }
        if let fanOut { access.remove(fanOut) }
        if keepsLog {
            logPages.withLock { pages in
                pages -= 1
                if pages == 0, options.keptActions == 0, !shared.withLock({ $0.detached }) { access.keepLog(0) }
            }
        }
    }

    var clientCount: Int { shared.withLock { $0.clients.count } }

    /// The store's log after `version` (``keepsLog``): at most `limit` changes, the oldest, with
    /// the state at the store's version when they reach it; or, when there is none, `wake` is
    /// left for the next.
    func readLog(after version: UInt64, limit: Int, wake: @escaping @Sendable () -> Void) -> LogRead? {
        access.readLog(after: version, limit: limit, includingState: true, wake: wake)
    }

    // MARK: The store

    var version: UInt64 { access.version }
    var keptVersions: [UInt64] { access.keptVersions }
    /// Whether the store is live (false for a recorded journal: no restore, no dispatch).
    var isLive: Bool { access.isLive }
    var dispatchableIdentifiers: [String]? { access.dispatchableIdentifiers }

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
        return try access.dispatch(identifier: identifier, payload: payload)
    }
}

/// The inspector's shared record, behind its lock; captured by the listeners (which the store
/// holds), so it holds nothing of the store.
final class SharedBox: Sendable {
    private let mutex: Mutex<InspectedStore.Shared>
    init(_ shared: InspectedStore.Shared) { mutex = Mutex(shared) }
    func withLock<T>(_ body: (inout InspectedStore.Shared) -> T) -> T { mutex.withLock { body(&$0) } }
}

/// One applied action, as the inspector logs it and sends it to its pages.
package enum LoggedChange: Sendable {
    /// A Swift store's record: its payload is made into JSON when it is sent, not when applied.
    case record(ChangeRecord)
    /// A change made into JSON up front: a C store's (its trees are only borrowed for the call),
    /// or a recorded journal's line.
    case plain(PlainChange)

    package var version: UInt64 {
        switch self {
        case .record(let record): record.version
        case .plain(let plain): plain.version
        }
    }
}

/// A change as JSON values.
package struct PlainChange: Sendable {
    package var version: UInt64
    package var identifier: String
    package var payload: JSONValue?
    /// Whether the payload is a typed action's properties (a Swift action), not a JSON action's.
    package var typed: Bool
    /// The RFC 6902 patch, an array; `nil` when not known.
    package var patch: JSONValue?
    /// `"main.c:42"`.
    package var source: String?
    package var batch: ClosedRange<UInt64>?
    /// `2026-11-25T03:00:00.123Z`.
    package var time: String

    package init(
        version: UInt64, identifier: String, payload: JSONValue?, typed: Bool, patch: JSONValue?,
        source: String?, batch: ClosedRange<UInt64>?, time: String
    ) {
        self.version = version
        self.identifier = identifier
        self.payload = payload
        self.typed = typed
        self.patch = patch
        self.source = source
        self.batch = batch
        self.time = time
    }
}

extension PlainChange {
    /// `time` as a change's `time` text: `2026-11-25T03:00:00.123Z`.
    package static func timeText(_ time: timespec) -> String { InspectorSession.isoTime(time) }
}

/// A consumer of a store's changes, as the inspector registers it: the access attaches it to the
/// store its own way and keeps what it needs to detach it in ``attachment``.
package final class InspectorListener: Sendable {
    package let includingPatches: Bool
    package let receive: @Sendable (LoggedChange) -> Void
    /// What the access registered (a `ChangeListener`, a C token), for ``StoreAccess/remove(_:)``.
    package let attachment = Mutex<(any Sendable)?>(nil)

    package init(includingPatches: Bool, receive: @escaping @Sendable (LoggedChange) -> Void) {
        self.includingPatches = includingPatches
        self.receive = receive
    }
}

/// A store's operations, erased of its kind and its state's type.
package protocol StoreAccess: Sendable {
    /// What the page calls the store: its state's type.
    var name: String { get }
    var version: UInt64 { get }
    var keptVersions: [UInt64] { get }
    /// False for something recorded (a journal): nothing is applied to it.
    var isLive: Bool { get }
    /// The identifiers a page may dispatch (with ``InspectorOptions/allowsDispatch``); `nil` for
    /// any identifier.
    var dispatchableIdentifiers: [String]? { get }
    /// Changes recorded before the inspector started (a journal's lines), oldest first.
    var recorded: [LoggedChange] { get }
    /// Starts calling `listener` with every change applied from now on.
    func add(_ listener: InspectorListener)
    /// Stops calling `listener`; once this returns it is not called again.
    func remove(_ listener: InspectorListener)
    /// Runs `body` while no action is applied, where the store allows it; a listener added
    /// through `body`'s argument hears the very next action.
    func whileNoActionIsApplied<T>(_ body: (_ add: (InspectorListener) -> Void) -> T) -> T
    func state(at version: UInt64?) throws(StoreError) -> (version: UInt64, value: JSONValue)
    func restore(version: UInt64) throws(StoreError) -> UInt64
    func dispatch(identifier: String, payload: JSONValue?) throws(StoreError) -> UInt64
    /// The inspector has stopped: release what it held of the store.
    func detached()
    /// Whether the store keeps a log of its own (``keepLog(_:)``, ``readLog(after:limit:wake:)``);
    /// otherwise the inspector listens and keeps the log.
    var keepsLog: Bool { get }
    /// Keeps the store's own log of the last `capacity` changes; 0 stops it. Its records read
    /// the clock only after a ``tickLog()``.
    func keepLog(_ capacity: Int)
    /// Lets the log's next record read the clock again.
    func tickLog()
    /// The log's changes after `version`, at most the oldest `limit`, with `includingState` the
    /// state at the store's version when they reach it; when there is none, `wake` is called at
    /// the next.
    func readLog(after version: UInt64, limit: Int, includingState: Bool, wake: (@Sendable () -> Void)?) -> LogRead?
}

/// What a page's sender reads of a store's log at one instant.
package struct LogRead: Sendable {
    package var changes: [LoggedChange]
    /// Versions after the one asked for older than ``changes``' oldest: the log no longer
    /// keeps them.
    package var dropped: UInt64
    /// The store's version when read.
    package var version: UInt64
    /// The state at ``version``, when asked for and ``changes`` reach it.
    package var state: Result<JSONValue, StoreError>?
}

extension StoreAccess {
    package var keepsLog: Bool { false }
    package func keepLog(_ capacity: Int) {}
    package func tickLog() {}
    package func readLog(
        after version: UInt64, limit: Int, includingState: Bool, wake: (@Sendable () -> Void)?
    ) -> LogRead? { nil }
    package var recorded: [LoggedChange] { [] }
    package func detached() {}
    package var dispatchableIdentifiers: [String]? { [] }
    package var isLive: Bool { true }

    /// `version` is not kept: the message for it.
    package static func notKept(_ version: UInt64, kept: [UInt64]) -> StoreError {
        let range = kept.isEmpty ? "none" : "\(kept.first!)–\(kept.last!)"
        return StoreError(.invalidArgument, "version \(version) is not kept (kept: \(range))")
    }
}

/// A Swift `Store<State>`'s operations.
struct SwiftStoreAccess<State: Codable>: StoreAccess, @unchecked Sendable {
    // @unchecked: `Store` is Sendable; `State` itself need not be.
    let store: Store<State>
    let actions: ActionTypes

    var name: String { String(describing: State.self) }
    var version: UInt64 { store.version }
    var keptVersions: [UInt64] { store.historyVersions }
    var dispatchableIdentifiers: [String]? { actions.identifiers }

    func add(_ listener: InspectorListener) { store.addChangeListener(attach(listener)) }

    var keepsLog: Bool { true }
    func keepLog(_ capacity: Int) { store.keepActionLog(capacity, ticked: true) }
    func tickLog() { store.tickActionLog() }

    func readLog(after version: UInt64, limit: Int, includingState: Bool, wake: (@Sendable () -> Void)?) -> LogRead? {
        guard let read = store.readActionLog(after: version, limit: limit, includingState: includingState, wake: wake)
        else { return nil }
        return LogRead(
            changes: read.records.map { .record($0) }, dropped: read.dropped, version: read.version,
            state: read.state)
    }

    private func attach(_ listener: InspectorListener) -> ChangeListener {
        let receive = listener.receive
        let changeListener = ChangeListener(includingPatches: listener.includingPatches) { receive(.record($0)) }
        listener.attachment.withLock { $0 = changeListener }
        return changeListener
    }

    func remove(_ listener: InspectorListener) {
        let attached = listener.attachment.withLock { attachment -> ChangeListener? in
            defer { attachment = nil }
            return attachment as? ChangeListener
        }
        if let attached { _ = store.removeChangeListener(attached) }
    }

    func whileNoActionIsApplied<T>(_ body: (_ add: (InspectorListener) -> Void) -> T) -> T {
        store.whileNoActionIsApplied { addListener in
            withoutActuallyEscaping(addListener) { addListener in
                body { listener in addListener(attach(listener)) }
            }
        }
    }

    func state(at version: UInt64?) throws(StoreError) -> (version: UInt64, value: JSONValue) {
        if let version, version != store.version {
            guard let state = store.historyState(at: version) else {
                throw Self.notKept(version, kept: store.historyVersions)
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

    func dispatch(identifier: String, payload: JSONValue?) throws(StoreError) -> UInt64 {
        guard let decode = actions.decoder(for: identifier) else {
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
