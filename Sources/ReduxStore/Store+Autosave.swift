import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// When a store saves itself: after a number of actions, after a quiet time, or both.
public struct AutosavePolicy: Sendable, Equatable {
    /// Save once this many actions were applied since the last save; `nil`: never for a count.
    public var everyActions: Int?
    /// Save once no action was applied for this long; `nil`: never for quiet.
    public var afterQuiet: Duration?

    public init(everyActions: Int? = nil, afterQuiet: Duration? = nil) {
        self.everyActions = everyActions
        self.afterQuiet = afterQuiet
    }
}

extension Store {
    /// Saves the store to `path` automatically, per `policy`, off the dispatch path: saves run on
    /// a background queue (each one encodes the state under the lock, then writes outside it, as
    /// ``save(to:)`` does). A process that exits normally (`exit`, or returning from the
    /// top-level code) has the last applied action on disk: pending changes are saved at exit.
    ///
    /// Replaces an autosave already running for this store (after saving what it had pending).
    ///
    /// - Parameters:
    ///   - onError: called on the background queue when a save fails; the next trigger tries again.
    public func startAutosave(
        to path: String, policy: AutosavePolicy,
        onError: (@Sendable (StoreError) -> Void)? = nil
    ) {
        stopAutosave()
        let saver = Autosaver(store: self, path: path, policy: policy, onError: onError)
        saver.token = addObserver { [saver] note in saver.actionApplied(version: note.version) }
        autosaver.withLock { $0 = saver }
        Autosaver.registerForExit(saver)
    }

    /// Stops saving automatically, after saving the changes not yet saved. Returns once that
    /// save finished.
    public func stopAutosave() {
        guard let saver = autosaver.withLock({ current -> Autosaver? in
            defer { current = nil }
            return current
        }) else { return }
        if let token = saver.token { removeObserver(token) }
        saver.saveNow()
        Autosaver.unregisterForExit(saver)
    }

    /// Saves what the running autosave has not saved yet, and returns once it is on disk.
    /// Does nothing without an autosave.
    public func flushAutosave() {
        autosaver.withLock { $0 }?.saveNow()
    }

    /// Called by the store's deinit: ends a running autosave.
    func finishAutosaveAtDeinit() {
        stopAutosave()
    }

    /// The error of the last failed autosave, `nil` when the last one succeeded or none ran.
    public var lastAutosaveError: StoreError? {
        autosaver.withLock { $0 }?.lastError.withLock { $0 }
    }
}

/// The autosave of one store: counts applied actions and schedules saves on its own queue.
final class Autosaver: Sendable {
    weak let store: (any AnyStore)?
    let path: String
    let policy: AutosavePolicy
    let onError: (@Sendable (StoreError) -> Void)?
    let queue = DispatchQueue(label: "ReduxStore.autosave")
    /// Set once, right after the observer is added, before any notification can arrive.
    nonisolated(unsafe) var token: ObserverToken?

    /// Guarded by its mutex: what the observer and the queue share.
    private let state = Locked<Progress>(Progress())
    let lastError = Locked<StoreError?>(nil)

    private struct Progress {
        var actionsSinceSave = 0
        var saveScheduled = false
        var quietTimerScheduled = false
        var lastActionAt: ContinuousClock.Instant = .now
        var savedVersion: UInt64?
    }

    init(store: some AnyStore, path: String, policy: AutosavePolicy,
         onError: (@Sendable (StoreError) -> Void)?) {
        self.store = store
        self.path = path
        self.policy = policy
        self.onError = onError
    }

    /// Called by the observer, on the dispatching thread: O(1), one lock, and a block scheduled
    /// only when a save or the quiet timer is due.
    func actionApplied(version: UInt64) {
        let (saveDue, startTimer) = state.withLock { progress -> (Bool, Bool) in
            progress.actionsSinceSave += 1
            progress.lastActionAt = .now
            var saveDue = false
            if let every = policy.everyActions, progress.actionsSinceSave >= every,
               !progress.saveScheduled {
                progress.saveScheduled = true
                saveDue = true
            }
            var startTimer = false
            if policy.afterQuiet != nil, !progress.quietTimerScheduled {
                progress.quietTimerScheduled = true
                startTimer = true
            }
            return (saveDue, startTimer)
        }
        if saveDue { queue.async { [self] in save() } }
        if startTimer, let quiet = policy.afterQuiet { scheduleQuietCheck(after: quiet) }
    }

    private func scheduleQuietCheck(after delay: Duration) {
        let nanoseconds = max(0, Int(delay.components.seconds) * 1_000_000_000
            + Int(delay.components.attoseconds / 1_000_000_000))
        queue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [self] in
            guard let quiet = policy.afterQuiet else { return }
            let remaining = state.withLock { progress -> Duration? in
                let quietFor = ContinuousClock.now - progress.lastActionAt
                if quietFor >= quiet {
                    progress.quietTimerScheduled = false
                    return nil
                }
                return quiet - quietFor
            }
            if let remaining {
                scheduleQuietCheck(after: remaining)
            } else {
                save()
            }
        }
    }

    /// Saves on the calling thread if the store changed since the last save. Runs on the queue.
    private func save() {
        state.withLock { $0.saveScheduled = false }
        guard let store else { return }
        let version = store.version
        if state.withLock({ $0.savedVersion }) == version { return }
        state.withLock { $0.actionsSinceSave = 0 }
        do {
            try store.save(to: path)
            state.withLock { $0.savedVersion = max($0.savedVersion ?? 0, version) }
            lastError.withLock { $0 = nil }
        } catch {
            lastError.withLock { $0 = error }
            onError?(error)
        }
    }

    /// Saves pending changes and waits for the save (and any save queued before it).
    func saveNow() {
        queue.sync { save() }
    }

    // MARK: Saving at exit

    private static let live = Locked<[ObjectIdentifier: Autosaver]>([:])
    private static let exitHookInstalled = Atomic<Bool>(false)

    static func registerForExit(_ saver: Autosaver) {
        live.withLock { $0[ObjectIdentifier(saver)] = saver }
        if !exitHookInstalled.exchange(true, ordering: .acquiringAndReleasing) {
            atexit { Autosaver.saveAllAtExit() }
        }
    }

    static func unregisterForExit(_ saver: Autosaver) {
        _ = live.withLock { $0.removeValue(forKey: ObjectIdentifier(saver)) }
    }

    private static func saveAllAtExit() {
        let savers = live.withLock { Array($0.values) }
        for saver in savers { saver.saveNow() }
    }
}
