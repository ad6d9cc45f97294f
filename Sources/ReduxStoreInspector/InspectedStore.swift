internal import CJSONC
import FoundationEssentials
import ReduxStore
import Synchronization

/// What the inspector needs of a store, whatever its kind (a Swift `Store<State>`, a C store, a
/// recorded journal): its change feed, its state as JSON at a version, diffs, restore and
/// dispatch. Also the log of the newest actions the pages read, when the store does not keep one
/// itself, and the number of pages connected.
///
/// A page never slows a dispatch: whatever the store, its sender reads what is new off the
/// store's lock, at most every ``InspectorSession/readInterval``, and makes each patch itself
/// from two states. A store that keeps the log itself (a Swift store) records an action in its
/// ring under the lock the dispatch holds; for another (a C store) the inspector's listener copies
/// the action's identifier, payload, source and time into ``Shared/log`` (a few small copies,
/// nothing that grows with the state or the pages), and the state is read, for every page at
/// once, at most every ``stateInterval(after:)``.
final class InspectedStore: Sendable {
    let name: String
    let options: InspectorOptions
    private let access: any StoreAccess
    /// The log and the waiting pages of a store that does not keep the log itself.
    private let shared: SharedBox

    struct Shared: Sendable {
        /// The newest actions, oldest first (a store that keeps no log of its own; a journal's
        /// recorded lines).
        var log: Ring<LoggedChange>
        /// The wake-ups of the pages that found nothing new, called (once) at the next change.
        var wakes: [@Sendable () -> Void] = []
        /// Set by ``InspectedStore/detach()``.
        var detached = false
    }

    init(_ access: any StoreAccess, options: InspectorOptions) {
        name = access.name
        self.options = options
        self.access = access
        keepsLog = access.keepsLog
        let capacity = access.keepsLog ? 0 : max(options.keptActions, options.clientBuffer, access.recorded.count)
        let shared = SharedBox(Shared(log: Ring(capacity: capacity)))
        for change in access.recorded { shared.withLock { $0.log.append(change) } }
        self.shared = shared
        if keepsLog {
            // With keptActions 0 the log is kept only while a page is connected.
            if options.keptActions > 0 { access.keepLog(options.keptActions) }
            listener = nil
            ticker = Task.detached { await Self.tick(access) }
        } else {
            listener = access.isLive ? InspectorListener { change in shared.heard(change) } : nil
            ticker = nil
            // With keptActions 0 the inspector listens only while a page is connected.
            if let listener, options.keptActions > 0 { access.add(listener) }
        }
    }

    /// Whether the store keeps the log itself (a Swift store's action log, read by each page's
    /// sender, ``readLog(after:limit:wake:)``); otherwise the inspector listens to the store and
    /// keeps the log in ``Shared/log``.
    let keepsLog: Bool
    /// What fills ``Shared/log``: a live store that keeps no log of its own.
    private let listener: InspectorListener?
    /// Tells the store's log when to read the clock again (``tick(_:)``); cancelled at ``detach()``.
    private let ticker: Task<Void, Never>?
    /// The pages connected, counted apart from ``shared`` (whose lock the inspector's listener
    /// takes under the store's lock): the log is turned on and off under it, with
    /// ``InspectorOptions/keptActions`` 0, as the first page comes and the last goes.
    private let pages = Mutex(0)
    /// The newest state read for the pages of a store that keeps no log of its own.
    private let latest = Mutex<LatestState?>(nil)

    /// Stops listening to the store and lets it go. Idempotent.
    func detach() {
        let (first, wakes) = shared.withLock { shared -> (Bool, [@Sendable () -> Void]) in
            defer {
                shared.detached = true
                shared.wakes = []
            }
            return (!shared.detached, shared.wakes)
        }
        guard first else { return }
        for wake in wakes { wake() }
        ticker?.cancel()
        pages.withLock { _ in
            if keepsLog { access.keepLog(0) }
            if let listener { access.remove(listener) }
        }
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

    /// Counts a page in; returns the backlog (at most ``InspectorOptions/keptActions`` changes),
    /// the version it holds up to, and the state at that version, from which the page's patches
    /// start. `nil` when ``InspectorOptions/maximumClients`` pages are connected.
    func connect() -> (backlog: [LoggedChange], version: UInt64, state: Result<JSONValue, StoreError>)? {
        let added = pages.withLock { pages -> Bool in
            guard pages < options.maximumClients, !shared.withLock({ $0.detached }) else { return false }
            pages += 1
            // The log starts before the state is read below: every change after it is logged.
            if pages == 1, options.keptActions == 0 {
                if keepsLog { access.keepLog(max(options.clientBuffer, 64)) }
                if let listener { access.add(listener) }
            }
            return true
        }
        guard added else { return nil }
        if keepsLog {
            // The state now, then the log up to its version (every version up to it is logged by
            // then); what follows reaches the page through its sender, patched from this state.
            let state: Result<(version: UInt64, value: JSONValue), StoreError>
            do throws(StoreError) { state = .success(try access.state(at: nil)) } catch { state = .failure(error) }
            let read = access.readLog(after: 0, limit: options.keptActions, includingState: false, wake: nil)
            let version = (try? state.get().version) ?? read?.version ?? access.version
            return (read?.changes.filter { $0.version <= version } ?? [], version, state.map(\.value))
        }
        guard access.isLive else {
            // A recorded journal: its lines, and no change ever follows them.
            let log = shared.withLock { $0.log.elements }
            return (log, access.version, .failure(StoreError(.invalidArgument, "a recorded journal takes no actions")))
        }
        let state = readState()
        let version = (try? state.get().version) ?? shared.withLock { $0.log.newestVersion } ?? access.version
        let backlog = shared.withLock { $0.log.changes(after: 0, through: version, limit: .max).changes }
        return (Array(backlog.suffix(options.keptActions)), version, state.map(\.value))
    }

    /// Counts a page out; the last page gone, the log stops (``InspectorOptions/keptActions`` 0).
    func disconnect() {
        pages.withLock { pages in
            pages -= 1
            guard pages == 0, options.keptActions == 0, !shared.withLock({ $0.detached }) else { return }
            if keepsLog { access.keepLog(0) }
            if let listener { access.remove(listener) }
        }
    }

    var clientCount: Int { pages.withLock { $0 } }

    /// The log after `version`: at most `limit` changes, the oldest, with the state at the newest
    /// of them when they reach the store's version (and, for a store whose log the inspector
    /// keeps, the state was read long enough ago); or, when there is none, `wake` is left for the
    /// next.
    func readLog(after version: UInt64, limit: Int, wake: @escaping @Sendable () -> Void) -> LogRead? {
        if keepsLog { return access.readLog(after: version, limit: limit, includingState: true, wake: wake) }
        let (changes, dropped, more) = shared.withLock { shared in
            let read = shared.log.changes(after: version, limit: limit)
            if read.changes.isEmpty, !shared.detached { shared.wakes.append(wake) }
            return read
        }
        guard let newest = changes.last?.version else {
            return shared.withLock({ $0.detached }) ? nil : LogRead(changes: [], dropped: 0, version: version, state: nil)
        }
        guard !more, access.isLive else {
            return LogRead(changes: changes, dropped: dropped, version: newest, state: nil)
        }
        let state: LatestState
        switch latestState(atLeast: newest) {
        case .read(let read): state = read
        case .wait(let time):
            // The changes wait for the next read of the state, so that they go with their patch.
            return LogRead(changes: [], dropped: 0, version: version, state: nil, retryAfter: time)
        }
        guard state.version > newest else {
            return LogRead(changes: changes, dropped: dropped, version: newest, state: state.value.map(\.value))
        }
        // The state read is newer than the changes: the changes up to it.
        let through = shared.withLock { $0.log.changes(after: version, through: state.version, limit: limit) }
        guard through.changes.last?.version == state.version else {
            return LogRead(changes: changes, dropped: dropped, version: newest, state: nil)
        }
        return LogRead(changes: through.changes, dropped: through.dropped, version: state.version, state: state.value.map(\.value))
    }

    /// A state read for the pages of a store whose log the inspector keeps: one read serves every
    /// page that needs it.
    private struct LatestState: Sendable {
        var version: UInt64
        var value: Result<(version: UInt64, value: JSONValue), StoreError>
        var read: ContinuousClock.Instant
        /// How long the read took.
        var took: Duration
    }

    private enum StateOrWait {
        case read(LatestState)
        /// The state was read less than ``stateInterval(after:)`` ago: the next read in this long.
        case wait(Duration)
    }

    /// The newest state read when it is at `version` or later; otherwise a new read, unless the
    /// last was less than ``stateInterval(after:)`` ago.
    private func latestState(atLeast version: UInt64) -> StateOrWait {
        latest.withLock { latest -> StateOrWait in
            let start = ContinuousClock.now
            if let latest {
                if latest.version >= version { return .read(latest) }
                let next = latest.read + Self.stateInterval(after: latest.took)
                if start < next { return .wait(next - start) }
            }
            let value = readState()
            // A failed read's version: the store's (it is not older than the changes logged).
            let read = LatestState(
                version: (try? value.get().version) ?? access.version, value: value, read: start,
                took: ContinuousClock.now - start)
            latest = read
            return .read(read)
        }
    }

    /// The least time between two reads of the state for the pages: ``InspectorSession/readInterval``,
    /// or 20 times what the last read took. A C store's state is a json-c tree its reducers mutate
    /// in place, so a read copies it under the store's lock: a large state is read less often,
    /// so that the pages' reads hold the lock at most about 5% of the time whatever its size.
    static func stateInterval(after took: Duration) -> Duration {
        max(InspectorSession.readInterval, took * 20)
    }

    private func readState() -> Result<(version: UInt64, value: JSONValue), StoreError> {
        do throws(StoreError) { return .success(try access.state(at: nil)) } catch { return .failure(error) }
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

    /// Logs a change the inspector's listener heard (under the store's lock) and wakes the pages
    /// that wait for one.
    func heard(_ change: LoggedChange) {
        let wakes = withLock { shared -> [@Sendable () -> Void] in
            shared.log.append(change)
            guard !shared.wakes.isEmpty else { return [] }
            defer { shared.wakes = [] }
            return shared.wakes
        }
        for wake in wakes { wake() }
    }
}

/// One applied action, as the inspector logs it and sends it to its pages.
package enum LoggedChange: Sendable {
    /// A Swift store's record: its payload is made into JSON when it is sent, not when applied.
    case record(ChangeRecord)
    /// A recorded journal's line, as JSON values.
    case plain(PlainChange)
    /// A change a listener heard (a C store's): its parts copied for later, as they came.
    case heard(HeardChange)

    package var version: UInt64 {
        switch self {
        case .record(let record): record.version
        case .plain(let plain): plain.version
        case .heard(let heard): heard.version
        }
    }
}

/// A change as a listener heard it, copied under the store's lock as cheaply as it can be (the
/// trees and strings it was handed are only borrowed for the call); made into a ``PlainChange``
/// when sent.
package struct HeardChange: Sendable {
    package var version: UInt64
    package var identifier: String
    package var payload: JSONValue?
    /// The name of the file it was dispatched from (its last path component), and the line.
    package var file: String?
    package var line: UInt32
    package var batch: ClosedRange<UInt64>?
    /// When it was applied: nanoseconds since 1970 (UTC).
    package var time: Int64

    package init(
        version: UInt64, identifier: String, payload: JSONValue?, file: String?, line: UInt32,
        batch: ClosedRange<UInt64>?, time: Int64
    ) {
        self.version = version
        self.identifier = identifier
        self.payload = payload
        self.file = file
        self.line = line
        self.batch = batch
        self.time = time
    }

    /// The change as JSON values (no patch: the page's sender makes patches from states).
    var plain: PlainChange {
        let seconds = time.quotientAndRemainder(dividingBy: 1_000_000_000)
        return PlainChange(
            version: version, identifier: identifier, payload: payload, typed: false, patch: nil,
            source: file.map { "\($0):\(line)" }, batch: batch,
            time: PlainChange.timeText(timespec(tv_sec: Int(seconds.quotient), tv_nsec: Int(seconds.remainder))))
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

/// A consumer of a store's changes (without patches), as the inspector registers it: the access
/// attaches it to the store its own way and keeps what it needs to detach it in ``attachment``.
package final class InspectorListener: Sendable {
    /// Called under the store's lock, for one action at a time.
    package let receive: @Sendable (LoggedChange) -> Void
    /// What the access registered (a C token), for ``StoreAccess/remove(_:)``.
    package let attachment = Mutex<(any Sendable)?>(nil)

    package init(receive: @escaping @Sendable (LoggedChange) -> Void) {
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
    /// Starts calling `listener` with every change applied from now on (a live store that keeps
    /// no log of its own).
    func add(_ listener: InspectorListener)
    /// Stops calling `listener`; once this returns it is not called again.
    func remove(_ listener: InspectorListener)
    /// The state at `version` and that version; with `nil`, the newest state and its version,
    /// read together.
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
    /// No changes yet, though some are logged: they go with the next read of the state, which
    /// may be made in this long.
    package var retryAfter: Duration? = nil
}

extension StoreAccess {
    package func add(_ listener: InspectorListener) {}
    package func remove(_ listener: InspectorListener) {}
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

    var count: Int { storage.count }

    /// The element `index` places from the oldest.
    subscript(index: Int) -> Element { storage[(start + index) % storage.count] }
}

extension Ring where Element == LoggedChange {
    /// The changes after `version` up to `last`, at most the oldest `limit`; `dropped`: how many
    /// versions after `version` are older than the oldest kept; `more`: whether changes up to
    /// `last` are left past `limit`. Costs the number of changes after `version`, not the ring's.
    func changes(after version: UInt64, through last: UInt64 = .max, limit: Int)
        -> (changes: [LoggedChange], dropped: UInt64, more: Bool)
    {
        var first = count
        while first > 0, self[first - 1].version > version { first -= 1 }
        var changes: [LoggedChange] = []
        var index = first
        while index < count, self[index].version <= last, changes.count < limit {
            changes.append(self[index])
            index += 1
        }
        let more = index < count && self[index].version <= last
        let dropped = first == 0 && count > 0 && self[0].version > version &+ 1 ? self[0].version - version - 1 : 0
        return (changes, dropped, more)
    }

    var newestVersion: UInt64? { count > 0 ? self[count - 1].version : nil }
}

extension Ring: Sendable where Element: Sendable {}
