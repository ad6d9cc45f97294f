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
    /// ``save(to:)`` does). Changes not yet saved are saved when the autosave is stopped, when
    /// the store is freed (on the thread that drops the last reference) and when the process
    /// exits normally (`exit`, or returning from the top-level code).
    ///
    /// Replaces an autosave already running for this store, after saving what it had pending.
    /// Two threads starting an autosave at once leave exactly one running: the later one.
    ///
    /// - Parameters:
    ///   - path: the file to save to (see ``save(to:)`` for what a save does).
    ///   - policy: when to save.
    ///   - onError: called when a save of this autosave fails, on the thread that made it: the
    ///     background queue, or the caller of ``flushAutosave()``, ``stopAutosave()`` or
    ///     `startAutosave`, the exiting thread, the thread that freed the store. It may call
    ///     any method of the store, these three included; a save made from inside it does not
    ///     call it again (its error is in ``lastAutosaveError``). The next trigger tries again.
    public func startAutosave(
        to path: String, policy: AutosavePolicy,
        onError: (@Sendable (StoreError) -> Void)? = nil
    ) {
        let saver = Autosaver(target: self, path: path, policy: policy, onError: onError)
        saver.observe(addObserver { [saver] note in saver.actionApplied(version: note.version) })
        Autosaver.registerForExit(saver)
        // One swap under the lock: every saver started is stopped exactly once, by the next
        // start or by a stop, whatever the interleaving of threads.
        let replaced = autosaver.withLock { current -> Autosaver? in
            defer { current = saver }
            return current
        }
        replaced?.stop(store: self)
    }

    /// Stops saving automatically, after saving the changes not yet saved. Returns once that
    /// save finished. Does nothing without an autosave. From inside one of this store's
    /// reducers the save runs on the autosave's queue once the lock is released, and this
    /// returns at once (waiting for it there could deadlock with a save on the queue).
    public func stopAutosave() {
        let saver = autosaver.withLock { current -> Autosaver? in
            defer { current = nil }
            return current
        }
        saver?.stop(store: self)
    }

    /// Saves what the running autosave has not saved yet, and returns once it is on disk (or
    /// the save failed: see ``lastAutosaveError``). Does nothing without an autosave. From
    /// inside one of this store's reducers the save runs on the autosave's queue once the lock is
    /// released, and this returns at once.
    public func flushAutosave() {
        autosaver.withLock { $0 }?.saveNow(using: self)
    }

    /// The error of the last failed autosave, `nil` when the last one succeeded or none ran.
    public var lastAutosaveError: StoreError? {
        autosaver.withLock { $0 }?.lastError
    }

    /// Called by the store's `deinit` (and only there): saves the changes the autosave has not
    /// saved yet, synchronously on the calling thread, and tears the autosave down (its
    /// timer, its entry in the exit list), so nothing of it outlives the store.
    func finishAutosaveAtDeinit() {
        let saver = autosaver.withLock { current -> Autosaver? in
            defer { current = nil }
            return current
        }
        guard let saver else { return }
        let path = saver.path
        saver.finish { (skip) throws(StoreError) in try self.save(to: path, unlessVersion: skip) }
    }
}

/// What an autosave saves: a store, whatever its state type.
protocol AutosaveTarget: AnyObject, Sendable {
    /// Saves unless the version is `unlessVersion`; the version saved, or nil.
    func save(to path: String, unlessVersion: UInt64?) throws(StoreError) -> UInt64?
    @discardableResult func removeObserver(_ token: ObserverToken) -> Bool
    /// Whether the calling thread runs one of the store's reducers (holds its lock).
    var isInsideReducer: Bool { get }
}

extension Store: AutosaveTarget {}

/// The autosave of one store: counts applied actions and schedules saves.
///
/// No call waits on a queue: background work is put on `queue` with `async` only, and saves,
/// wherever they run, take turns through `saving`, a lock held for the length of one save and
/// never while calling `onError` or the store's observers. So `onError` may stop, flush or
/// restart the autosave from any thread, its own queue included.
final class Autosaver: Sendable {
    /// The store, weak: the store owns its autosave, not the other way round. It is nil once
    /// the store's `deinit` began; the store then saves through ``finish(save:)``.
    private weak let target: (any AutosaveTarget)?
    let path: String
    let policy: AutosavePolicy
    private let onError: (@Sendable (StoreError) -> Void)?
    /// Background saves and the quiet timer. Only `async` onto it, never `sync`.
    private let queue = DispatchQueue(label: "ReduxStore.autosave")
    /// Held for the length of one save: saves run one at a time, in the order they took it.
    /// Nothing else is done under it; in particular `onError` is called after it is released.
    private let saving = Locked<Void>(())
    /// What the observer, the queue and the callers share; held only briefly.
    private let progress = Locked<Progress>(Progress())

    // @unchecked: `quietTimer`, a `DispatchWorkItem`, which swift-corelibs-libdispatch does not
    // declare `Sendable`; a work item is made to be cancelled from any thread (libdispatch
    // makes `cancel()` atomic), and it is only stored and read here under `progress`'s lock.
    private struct Progress: @unchecked Sendable {
        var token: ObserverToken?
        var stopped = false
        var actionsSinceSave = 0
        var saveScheduled = false
        var quietTimer: DispatchWorkItem?
        var lastActionAt: ContinuousClock.Instant = .now
        /// The version in the file since this autosave's last save, nil before one.
        var savedVersion: UInt64?
        var lastError: StoreError?
        /// Threads calling `onError` right now: a save they make does not call it again.
        var reportingThreads: [UInt] = []
    }

    init(target: any AutosaveTarget, path: String, policy: AutosavePolicy,
         onError: (@Sendable (StoreError) -> Void)?) {
        self.target = target
        self.path = path
        self.policy = policy
        self.onError = onError
    }

    var lastError: StoreError? { progress.withLock { $0.lastError } }

    /// Keeps the token of the store observer that feeds ``actionApplied(version:)``.
    func observe(_ token: ObserverToken) {
        progress.withLock { $0.token = token }
    }

    /// Called by the observer, on the dispatching thread: O(1), one lock, and a block scheduled
    /// only when a save or the quiet timer is due.
    func actionApplied(version: UInt64) {
        let (saveDue, startTimer) = progress.withLock { progress -> (Bool, Bool) in
            guard !progress.stopped else { return (false, false) }
            progress.actionsSinceSave += 1
            progress.lastActionAt = .now
            var saveDue = false
            if let every = policy.everyActions, progress.actionsSinceSave >= every,
               !progress.saveScheduled {
                progress.saveScheduled = true
                saveDue = true
            }
            let startTimer = policy.afterQuiet != nil && progress.quietTimer == nil
            return (saveDue, startTimer)
        }
        if saveDue {
            queue.async { [weak self] in self?.backgroundSave() }
        }
        if startTimer, let quiet = policy.afterQuiet { scheduleQuietCheck(after: quiet) }
    }

    private func scheduleQuietCheck(after delay: Duration) {
        let item = DispatchWorkItem { [weak self] in self?.quietCheck() }
        let scheduled = progress.withLock { progress -> Bool in
            guard !progress.stopped else { return false }
            progress.quietTimer = item
            return true
        }
        guard scheduled else { return }
        let nanoseconds = max(0, Int(delay.components.seconds) * 1_000_000_000
            + Int(delay.components.attoseconds / 1_000_000_000))
        queue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds), execute: item)
    }

    /// Runs on the queue when the quiet timer fires: saves if the store was quiet long enough,
    /// or sets the timer again for the rest of the time.
    private func quietCheck() {
        guard let quiet = policy.afterQuiet else { return }
        enum Next { case nothing, wait(Duration), save }
        let next = progress.withLock { progress -> Next in
            progress.quietTimer = nil
            if progress.stopped { return .nothing }
            let quietFor = ContinuousClock.now - progress.lastActionAt
            return quietFor >= quiet ? .save : .wait(quiet - quietFor)
        }
        switch next {
        case .nothing: break
        case .wait(let remaining): scheduleQuietCheck(after: remaining)
        case .save: backgroundSave()
        }
    }

    /// A save the policy asked for. Runs on the queue; does nothing once stopped (the stop
    /// saved).
    private func backgroundSave() {
        let stopped = progress.withLock { progress -> Bool in
            progress.saveScheduled = false
            return progress.stopped
        }
        if !stopped { saveNow(using: target) }
    }

    /// Saves the changes not saved yet, on the calling thread, through `target` (kept for the
    /// call: when this is the last reference, the store is freed after the save, with no lock
    /// held). Does nothing when the store is gone.
    func saveNow(using target: (any AutosaveTarget)?) {
        guard let target else { return }
        if target.isInsideReducer {
            // This thread holds the store's lock, which a save on the queue may be waiting for
            // while it holds the turn (`saving`): taking the turn here could deadlock. The save
            // runs on the queue instead, once the lock is released.
            queue.async { [self] in
                withExtendedLifetime(target) {
                    save { (skip) throws(StoreError) in try target.save(to: path, unlessVersion: skip) }
                }
            }
            return
        }
        withExtendedLifetime(target) {
            save { (skip) throws(StoreError) in try target.save(to: path, unlessVersion: skip) }
        }
    }

    /// One save through `write`, which saves unless the store is at the version it is given.
    /// Takes its turn through `saving`; reports a failure to `onError` once the turn is over,
    /// unless this thread is inside `onError` already.
    private func save(_ write: (UInt64?) throws(StoreError) -> UInt64?) {
        let failure = saving.withLockHeld { () -> StoreError? in
            let skip = progress.withLock { progress -> UInt64? in
                progress.actionsSinceSave = 0
                return progress.savedVersion
            }
            do throws(StoreError) {
                let saved = try write(skip)
                progress.withLock { progress in
                    if let saved { progress.savedVersion = saved }
                    progress.lastError = nil
                }
                return nil
            } catch {
                progress.withLock { $0.lastError = error }
                return error
            }
        }
        guard let failure, let onError else { return }
        let thread = currentThreadID()
        let report = progress.withLock { progress -> Bool in
            if progress.reportingThreads.contains(thread) { return false }
            progress.reportingThreads.append(thread)
            return true
        }
        guard report else { return }
        onError(failure)
        progress.withLock { progress in
            _ = progress.reportingThreads.remove(at: progress.reportingThreads.firstIndex(of: thread)!)
        }
    }

    /// Stops this autosave: no more saves are scheduled, the timer is cancelled, the observer is
    /// removed, pending changes are saved on the calling thread. Called once, by whoever took
    /// the saver out of the store.
    func stop(store: some AutosaveTarget) {
        let token = tearDown()
        if let token { store.removeObserver(token) }
        saveNow(using: store)
        Autosaver.unregisterForExit(self)
    }

    /// ``stop(store:)`` for a store in its `deinit`: saves through `save` (the store, which its
    /// weak references no longer reach), and leaves the observer to the store, which frees it.
    func finish(save write: (UInt64?) throws(StoreError) -> UInt64?) {
        _ = tearDown()
        save(write)
        Autosaver.unregisterForExit(self)
    }

    /// Marks the autosave stopped and cancels its timer; returns the observer's token.
    private func tearDown() -> ObserverToken? {
        let (token, timer) = progress.withLock { progress in
            progress.stopped = true
            defer { progress.quietTimer = nil }
            return (progress.token, progress.quietTimer)
        }
        timer?.cancel()
        return token
    }

    // MARK: Saving at exit

    /// The autosaves running in this process, saved at exit. Each one is removed when it stops
    /// or its store is freed.
    static let live = Locked<[ObjectIdentifier: Autosaver]>([:])
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

    /// Saves every running autosave's pending changes, on the exiting thread.
    private static func saveAllAtExit() {
        let savers = live.withLock { Array($0.values) }
        for saver in savers { saver.saveNow(using: saver.target) }
    }
}
