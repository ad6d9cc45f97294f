internal import CJSONC
import FoundationEssentials
import NIOConcurrencyHelpers
import ReduxStore

/// What the inspector needs of a store, whatever its kind (a Swift `Store<State>`, a C store, a
/// recorded journal): its action log, its state as JSON at a version, diffs, restore and dispatch;
/// and the number of pages connected.
///
/// A page never slows a dispatch: a live store records each action in its own ring under the lock
/// the dispatch holds (the action log: a copy of the action and its source, no call), and each
/// page's sender reads what is new off the store's lock, at most every
/// ``InspectorSession/readInterval``, and makes its patches itself from two states. The state is
/// read for every page at once, at most every ``stateInterval(after:)``: whatever the number of
/// pages, the reads hold the store's lock at most about 5% of the time.
final class InspectedStore: Sendable {
    let name: String
    let options: InspectorOptions
    private let access: any StoreAccess

    init(_ access: any StoreAccess, options: InspectorOptions) {
        name = access.name
        self.options = options
        self.access = access
        var claim: UInt64?
        if access.isLive {
            // With keptActions 0 the log is kept only while a page is connected.
            if options.keptActions > 0 { claim = access.openLog(options.keptActions) }
            ticker = Task.detached { await Self.tick(access) }
        } else {
            ticker = nil
        }
        pages = NIOLockedValueBox(Pages(claim: claim))
    }

    /// Tells the store's log when to read the clock again (``tick(_:)``); cancelled at ``detach()``.
    private let ticker: Task<Void, Never>?
    /// The pages connected, the inspector's claim on the store's log, and whether it has
    /// detached: with ``InspectorOptions/keptActions`` 0 the claim is opened as the first page
    /// comes and closed as the last goes.
    private let pages: NIOLockedValueBox<Pages>

    private struct Pages {
        var count = 0
        var claim: UInt64?
        var detached = false
    }
    /// The newest state read for the pages.
    private let latest = NIOLockedValueBox<LatestState?>(nil)

    /// Stops the store's log and lets the store go. Idempotent.
    func detach() {
        let first = pages.withLockedValue { pages -> Bool in
            guard !pages.detached else { return false }
            pages.detached = true
            if let claim = pages.claim { access.closeLog(claim) }
            pages.claim = nil
            return true
        }
        guard first else { return }
        ticker?.cancel()
        access.detached()
    }

    /// Ticks the store's log (``StoreAccess/tickLog()``) every ``tickInterval`` while its
    /// version moves, and every ``quietTickInterval`` once it has not moved for a second, until
    /// cancelled. A record takes the time the last record that read the clock read, and reads it
    /// again after a tick: so a dispatch does not read the clock itself (Benchmarks/README.md
    /// has the figures), and a record's time is earlier than its action's by at most about a
    /// tick interval: 4 ms while actions flow (the coarse clock's own resolution on most Linux
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
        let added = pages.withLockedValue { pages -> Bool in
            guard pages.count < options.maximumClients, !pages.detached else { return false }
            pages.count += 1
            // The log starts before the state is read below: every change after it is logged.
            if pages.claim == nil, access.isLive { pages.claim = access.openLog(max(options.clientBuffer, 64)) }
            return true
        }
        guard added else { return nil }
        guard access.isLive else {
            // A recorded journal: its lines, and no change ever follows them.
            return (access.recorded, access.version, .failure(StoreError(.invalidArgument, "a recorded journal takes no actions")))
        }
        // The state now, then the log up to its version (every version up to it is logged by
        // then); what follows reaches the page through its sender, patched from this state.
        let state = readState()
        let read = access.readLog(after: 0, limit: options.keptActions, wake: nil)
        let version = (try? state.get().version) ?? read?.version ?? access.version
        return (read?.changes.filter { $0.version <= version } ?? [], version, state.map(\.value))
    }

    /// Counts a page out; the last page gone, the log stops (``InspectorOptions/keptActions`` 0).
    func disconnect() {
        pages.withLockedValue { pages in
            pages.count -= 1
            if pages.count == 0, options.keptActions == 0, let claim = pages.claim {
                access.closeLog(claim)
                pages.claim = nil
            }
        }
    }

    var clientCount: Int { pages.withLockedValue { $0.count } }

    /// The log after `version`: at most `limit` changes, the oldest, with the state at the newest
    /// of them when they reach the state read for the pages (a new read is made when the last is
    /// older than the changes and was made at least ``stateInterval(after:)`` ago; until then the
    /// read holds no change and says when to ask again). When there is none, `wake` is left for
    /// the next (or, where the store cannot call it, the read says when to ask again). `nil` once
    /// the log is gone.
    func readLog(after version: UInt64, limit: Int, wake: @escaping @Sendable () -> Void) -> LogRead? {
        guard access.isLive else { return LogRead(changes: [], dropped: 0, version: version, state: nil) }
        guard let read = access.readLog(after: version, limit: limit, wake: wake) else { return nil }
        guard let newest = read.changes.last?.version else { return read }
        if read.changes.count == limit, newest < read.version {
            return read  // more to read: without a state
        }
        let state: LatestState
        switch latestState(atLeast: newest) {
        case .read(let found): state = found
        case .wait(let time):
            // The changes wait for the next read of the state, so that they go with their patch.
            return LogRead(changes: [], dropped: 0, version: version, state: nil, retryAfter: time)
        }
        guard state.version > newest else { return LogRead(read, state: state.value.map(\.value)) }
        // The state read is newer than the changes: the changes up to it.
        guard let through = access.readLog(after: version, limit: limit, wake: nil),
            let last = through.changes.lastIndex(where: { $0.version <= state.version }),
            through.changes[last].version == state.version
        else {
            return read
        }
        var reaching = through
        reaching.changes.removeSubrange((last + 1)...)
        return LogRead(reaching, state: state.value.map(\.value))
    }

    /// A state read for the pages: one read serves every page that needs it.
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
        latest.withLockedValue { latest -> StateOrWait in
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
    /// or 20 times what the last read took. A read encodes the state under the store's lock (a C
    /// store's reducers change its json-c tree in place, so it is copied there): a large state is
    /// read less often, so that the pages' reads hold the lock at most about 5% of the time
    /// whatever its size.
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

/// One applied action, as the inspector logs it and sends it to its pages.
package enum LoggedChange: Sendable {
    /// A Swift store's record: its payload is made into JSON when it is sent, not when applied.
    case record(ChangeRecord)
    /// A change made into JSON values: a C store's (read from its log through the C interface),
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
    /// The state at `version` and that version; with `nil`, the newest state and its version,
    /// read together.
    func state(at version: UInt64?) throws(StoreError) -> (version: UInt64, value: JSONValue)
    func restore(version: UInt64) throws(StoreError) -> UInt64
    func dispatch(identifier: String, payload: JSONValue?) throws(StoreError) -> UInt64
    /// The inspector has stopped: release what it held of the store.
    func detached()
    /// Opens a claim on the store's log of the last `capacity` changes (a live store), whose
    /// records read the clock only after a ``tickLog()``; `nil` when it cannot.
    func openLog(_ capacity: Int) -> UInt64?
    /// Closes a claim ``openLog(_:)`` opened.
    func closeLog(_ claim: UInt64)
    /// Lets the log's next record read the clock again.
    func tickLog()
    /// The log's changes after `version`, at most the oldest `limit`. When there is none, `wake`
    /// is called at the next, where the store can; otherwise the read says when to ask again
    /// (``LogRead/retryAfter``). `nil` when the store keeps no log.
    func readLog(after version: UInt64, limit: Int, wake: (@Sendable () -> Void)?) -> LogRead?
}

/// What a page's sender reads of a store's log at one instant.
package struct LogRead: Sendable {
    package var changes: [LoggedChange]
    /// Versions after the one asked for older than ``changes``' oldest: the log no longer
    /// keeps them.
    package var dropped: UInt64
    /// The store's version when read.
    package var version: UInt64
    /// The state at the newest of ``changes``, when they reach the state read for the pages.
    package var state: Result<JSONValue, StoreError>?
    /// No changes: ask again in this long (changes are logged that wait for the next read of the
    /// state, or the store cannot wake the reader at the next change).
    package var retryAfter: Duration? = nil

    package init(
        changes: [LoggedChange], dropped: UInt64, version: UInt64, state: Result<JSONValue, StoreError>? = nil,
        retryAfter: Duration? = nil
    ) {
        self.changes = changes
        self.dropped = dropped
        self.version = version
        self.state = state
        self.retryAfter = retryAfter
    }

    /// `read` with `state`.
    init(_ read: LogRead, state: Result<JSONValue, StoreError>) {
        self = read
        self.state = state
    }
}

extension StoreAccess {
    package func openLog(_ capacity: Int) -> UInt64? { nil }
    package func closeLog(_ claim: UInt64) {}
    package func tickLog() {}
    package func readLog(after version: UInt64, limit: Int, wake: (@Sendable () -> Void)?) -> LogRead? { nil }
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

    func openLog(_ capacity: Int) -> UInt64? { store.openActionLog(capacity, ticked: true) }
    func closeLog(_ claim: UInt64) { store.closeActionLog(claim) }
    func tickLog() { store.tickActionLog() }

    func readLog(after version: UInt64, limit: Int, wake: (@Sendable () -> Void)?) -> LogRead? {
        guard let read = store.readActionLog(after: version, limit: limit, wake: wake)
        else { return nil }
        return LogRead(changes: read.records.map { .record($0) }, dropped: read.dropped, version: read.version)
    }

    func state(at version: UInt64?) throws(StoreError) -> (version: UInt64, value: JSONValue) {
        if let version, version != store.version {
            guard let state = store.historyState(at: version) else {
                throw Self.notKept(version, kept: store.historyVersions)
            }
            return (version, try JSONValue(encoding: state))
        }
        return try store.jsonSnapshot()
    }

    func restore(version: UInt64) throws(StoreError) -> UInt64 {
        try store.restore(version: version)
        return store.version
    }

    func dispatch(identifier: String, payload: JSONValue?) throws(StoreError) -> UInt64 {
        let notAllowed = StoreError(.invalidArgument, "\"\(identifier)\" is not an identifier this program lets the page dispatch")
        guard actions.isRegistered(identifier) else { throw notAllowed }
        let tree = try payload.map { (value) throws(StoreError) in try JSONCEncoder().encode(value) } ?? nil
        defer { json_object_put(tree) }
        var isValueless = false
        guard let action = try actions.registeredAction(identifier: identifier, payload: tree, isValueless: &isValueless)
        else { throw notAllowed }
        store.dispatch(erased: action, source: .unknown)
        return store.version
    }
}
