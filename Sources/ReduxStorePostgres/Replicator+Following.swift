import Logging
import PostgresNIO

extension Replicator {
    /// Starts the tasks that keep the replica current: a poll every `pollInterval`, and a
    /// listener of the stream's notifications that wakes the follower at once.
    package func startFollowing() {
        let interval = Duration.nanoseconds(Int64(options.pollInterval * 1e9))
        let wake = self.wake
        tasks.append(Task { [weak self] in
            while !Task.isCancelled, self != nil {
                try? await Task.sleep(for: interval)
                wake.yield()
            }
        })
        tasks.append(Task { [weak self] in
            guard let wakeups = self?.wakeups else { return }
            for await _ in wakeups {
                guard let self, await self.followOnce() else { return }
            }
        })
        listenerRunning = true
        tasks.append(Task { [weak self] in
            while !Task.isCancelled {
                guard let self, await self.listenOnce() else { break }
                try? await Task.sleep(for: interval)
            }
            await self?.listenerEnded()
        })
    }

    private func listenerEnded() { listenerRunning = false }

    /// Applies what was committed since the last look; false once the replica is closed or failed.
    private func followOnce() async -> Bool {
        guard !closed, failure == nil else { return false }
        // A commit of this process is on its way: it applies what came before it, and this
        // wake-up (most often its own notification) is looked at once it is done.
        if committing {
            wokenWhileCommitting = true
            return true
        }
        do {
            if standby != nil {
                try await followStandby()
            } else {
                _ = try await catchUp(through: nil)
            }
            try await checkSnapshots()
            lastFollowingError = nil
        } catch {
            // What can heal is tried again at the next wake-up; closing ends the follower
            // without a failure to log.
            if error.stopsReplica, !closed {
                fail(error)
            } else if !closed, error.kind != .closed {
                noteFollowingError(error)
            }
        }
        return !closed && failure == nil
    }

    private func noteFollowingError(_ error: ReplicationError) {
        lastFollowingError = error
        if let last = lastFollowingWarning, last.duration(to: .now) < .seconds(5) { return }
        lastFollowingWarning = .now
        logger.warning("ReduxStorePostgres: \(error.description); following again at the next poll")
    }

    /// Listens to the stream's channel on a connection of its own until it fails; false once
    /// the replica is closed or failed.
    private func listenOnce() async -> Bool {
        guard !closed, failure == nil else { return false }
        guard options.notifies else { return false }
        let connection: PostgresConnection
        do {
            connection = try await StreamConnection.connect(stream, logger: logger)
        } catch {
            return !closed && failure == nil
        }
        // Closed while it connected: its connection is closed here, before ``close()`` returns.
        guard !closed, failure == nil else {
            try? await connection.close()
            return false
        }
        let wake = self.wake
        let channel = self.channel
        listening = connection
        defer { listening = nil }
        do {
            try await connection.listen(on: channel) { notifications in
                wake.yield()  // anything committed before the listen started
                for try await notification in notifications {
                    if let version = UInt64(notification.payload) {
                        self.learned(head: version)
                        // This process's own commit, applied already: nothing to read.
                        if self.hasApplied(version) { continue }
                    }
                    wake.yield()
                }
            }
        } catch {}
        try? await connection.close()
        return !closed && failure == nil
    }

    /// How often at most a follower reads from its standby while the standby replays: its load
    /// there is bounded (a few hundred small reads a second however fast the primary commits)
    /// for a lag of as much more.
    static let standbyReadSpacing = Duration.milliseconds(2)

    /// Catches up from a hot standby. The primary's notification may come before the standby has
    /// replayed the versions it announces: while it has not, the follower reads again every
    /// ``standbyReadSpacing``, until it has them or a poll interval has passed. A standby that
    /// has shown nothing new for a poll interval (stopped, paused, far behind) is read once per
    /// poll interval, whatever the notifications, until it shows progress again.
    private func followStandby() async throws(ReplicationError) {
        let start = ContinuousClock.now
        let patience = Duration.nanoseconds(Int64(options.pollInterval * 1e9))
        while true {
            let stalled = standbyStalledSince.map { $0.duration(to: .now) >= patience } ?? false
            if let last = lastStandbyRead {
                let due = last + (stalled ? patience : Self.standbyReadSpacing)
                if due > .now {
                    // Stalled: the next poll reads. Else a short wait for the standby.
                    if stalled { return }
                    try? await Task.sleep(until: due, clock: .continuous)
                }
            }
            lastStandbyRead = .now
            let before = target.version
            _ = try await catchUp(through: nil)
            if target.version > before || knownHead <= target.version {
                standbyStalledSince = nil
            } else if standbyStalledSince == nil {
                standbyStalledSince = .now
            }
            guard !stalled, !closed, failure == nil, knownHead > target.version,
                start.duration(to: .now) + Self.standbyReadSpacing < patience
            else { return }
        }
    }

    /// Notes that the stream has reached `head`.
    func learned(head: UInt64) {
        guard !closed else { return }
        if head > knownHead { knownHead = head }
        if knownHead > target.version, behindSince == nil { behindSince = .now }
    }

    /// How far behind the stream this replica is.
    package var lag: ReplicationLag {
        let applied = target.version
        let behind = knownHead > applied ? knownHead - applied : 0
        let seconds = behind == 0 ? 0 : behindSince.map { ($0.duration(to: .now)).seconds } ?? 0
        let standbyBehind = standby == nil ? nil : knownHead > standbyHead ? knownHead - standbyHead : 0
        return ReplicationLag(
            versions: behind, seconds: seconds, standbyVersions: standbyBehind,
            lastError: behind == 0 ? nil : lastFollowingError)
    }
}
