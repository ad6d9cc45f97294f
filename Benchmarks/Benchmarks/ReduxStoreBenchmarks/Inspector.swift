import Benchmark
import Foundation
import HummingbirdWSClient
import Logging
import ReduxStore
import ReduxStoreInspector

/// What the live inspector (`StoreInspector`, default `InspectorOptions`) costs a dispatch: a
/// counter store with the inspector on and one page (a WebSocket client) connected, with the
/// inspector on and no page, and the same store without an inspector.
///
/// The page is a real one: a task reads every message it receives (and notes the version of each
/// change), and a benchmark measures only once the page has its hello. After each measured burst
/// on the store with the page, the page is left to catch up (not measured) until it has the change of
/// the store's version, so the next burst (on any store) does not run beside the inspector's
/// sending, as the journal's benchmarks let the writer catch up.
///
/// Every store's inspector, and the page, are stopped in the benchmark's teardown.
func registerInspectorBenchmarks() {
    let configuration = Benchmark.Configuration(scalingFactor: .kilo)

    // For the tables: each configuration on its own, 1,000 dispatches a sample. Their ratios are
    // not the goals' (two benchmarks run seconds apart can meet different speeds of the machine);
    // the goals' figures are the paired benchmark's, below.
    for kind in InspectedCounter.Kind.allCases {
        let held = InspectorBenchmarkState()
        Benchmark("inspection.inspector.\(kind.rawValue).counter", configuration: configuration) { benchmark, counter in
            for _ in benchmark.scaledIterations {
                counter.store.dispatchAction(Increment(amount: 1))
            }
            benchmark.stopMeasurement()
            counter.catchUp()
        } setup: { () -> InspectedCounter in
            let counter = try await InspectedCounter.start(kind)
            held.counters.append(counter)
            return counter
        } teardown: {
            await held.stop()
        }
    }

    // The goals' figures: the stores side by side in each sample (1,000 dispatches each,
    // timed apart, in an order that rotates from sample to sample; the page catches up after its
    // burst, not timed), so a slow spell of the machine falls on all three. The samples' ratios,
    // in thousandths, are the metrics (the report takes their medians); each store's time for
    // its 1,000 dispatches, in nanoseconds (= picoseconds per dispatch), is kept beside them.
    let pagePerMille = BenchmarkMetric.custom("inspectorPagePerMille", polarity: .prefersSmaller, useScalingFactor: false)
    let idlePerMille = BenchmarkMetric.custom("inspectorIdlePerMille", polarity: .prefersSmaller, useScalingFactor: false)
    let quietPerMille = BenchmarkMetric.custom("inspectorQuietPerMille", polarity: .prefersSmaller, useScalingFactor: false)
    let burstMetrics = Dictionary(uniqueKeysWithValues: InspectedCounter.Kind.allCases.map { kind in
        (kind, BenchmarkMetric.custom("inspector\(kind.metricName)PicosecondsPerDispatch", polarity: .prefersSmaller, useScalingFactor: false))
    })
    let held = InspectorBenchmarkState()
    Benchmark(
        "inspection.inspector.paired.counter",
        configuration: .init(
            metrics: [pagePerMille, idlePerMille, quietPerMille] + InspectedCounter.Kind.allCases.map { burstMetrics[$0]! },
            warmupIterations: 3)
    ) { benchmark, trio in
        trio.samples += 1
        let all = InspectedCounter.Kind.allCases
        let kinds = all.indices.map { all[($0 + trio.samples) % all.count] }
        var nanoseconds: [InspectedCounter.Kind: UInt64] = [:]
        for kind in kinds {
            let counter = trio.counters[kind]!
            nanoseconds[kind] = counter.burst(1_000)
            counter.catchUp()
        }
        let off = max(nanoseconds[.off]!, 1)
        benchmark.measurement(pagePerMille, Int(1_000 * nanoseconds[.page]! / off))
        benchmark.measurement(idlePerMille, Int(1_000 * nanoseconds[.idle]! / off))
        benchmark.measurement(quietPerMille, Int(1_000 * nanoseconds[.quiet]! / off))
        for (kind, value) in nanoseconds { benchmark.measurement(burstMetrics[kind]!, Int(value)) }
    } setup: { () -> InspectedTrio in
        var counters: [InspectedCounter.Kind: InspectedCounter] = [:]
        for kind in InspectedCounter.Kind.allCases {
            let counter = try await InspectedCounter.start(kind)
            held.counters.append(counter)
            counters[kind] = counter
        }
        return InspectedTrio(counters: counters)
    } teardown: {
        await held.stop()
    }
}

/// A counter store (1 reducer, 0 observers), with or without an inspector, and the page connected
/// to it if any.
final class InspectedCounter: Sendable {
    enum Kind: String, CaseIterable, Sendable {
        /// No inspector.
        case off
        /// An inspector, no page connected.
        case idle
        /// An inspector with `keptActions` 0 (nothing recorded while no page is connected), no
        /// page: what the backlog for a page opened later costs, by difference with `idle`.
        case quiet
        /// An inspector and one page connected.
        case page

        var metricName: String { rawValue.prefix(1).uppercased() + rawValue.dropFirst() }
    }

    let store: Store<Counter>
    let inspector: StoreInspector?
    let page: InspectorPageClient?

    private init(store: Store<Counter>, inspector: StoreInspector?, page: InspectorPageClient?) {
        self.store = store
        self.inspector = inspector
        self.page = page
    }

    static func start(_ kind: Kind) async throws -> InspectedCounter {
        let store = Store(reducers: counterReducers(1), state: Counter())
        guard kind != .off else { return InspectedCounter(store: store, inspector: nil, page: nil) }
        var options = InspectorOptions()
        if kind == .quiet { options.keptActions = 0 }
        let inspector = try await StoreInspector(store, options: options)
        guard kind == .page else { return InspectedCounter(store: store, inspector: inspector, page: nil) }
        do {
            let page = try await InspectorPageClient.connect(to: inspector)
            return InspectedCounter(store: store, inspector: inspector, page: page)
        } catch {
            await inspector.stop()
            throw error
        }
    }

    /// `count` dispatches, timed: nanoseconds.
    @inline(never)
    func burst(_ count: Int) -> UInt64 {
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<count { store.dispatchAction(Increment(amount: 1)) }
        return DispatchTime.now().uptimeNanoseconds - start
    }

    /// Waits (blocking) until the page has the change of the store's version; at once without a
    /// page.
    func catchUp() {
        guard let page else { return }
        let version = store.version
        if !page.wait(forVersion: version, seconds: 30) {
            FileHandle.standardError.write(Data(
                "inspector benchmark: the page did not receive version \(version) in 30 s (it has \(page.lastVersion))\n".utf8))
        }
    }

    /// Closes the page, then stops the inspector.
    func stop() async {
        await page?.close()
        await inspector?.stop()
    }
}

/// The stores of the paired benchmark.
final class InspectedTrio: @unchecked Sendable {
    // @unchecked: used by the benchmark's one thread.
    let counters: [InspectedCounter.Kind: InspectedCounter]
    var samples = 0
    init(counters: [InspectedCounter.Kind: InspectedCounter]) { self.counters = counters }
}

/// What a benchmark started, for its teardown to stop (the teardown is not handed the setup's
/// result).
final class InspectorBenchmarkState: @unchecked Sendable {
    // @unchecked: written by the setup, read by the teardown, one after the other.
    var counters: [InspectedCounter] = []

    func stop() async {
        for counter in counters { await counter.stop() }
        counters = []
    }
}

/// One page of the inspector: a WebSocket client whose task reads every message it receives. It
/// notes each message's type and version (the top-level `"type"` and `"version"` members, the last
/// of their names in the text: the inspector writes members in key order, a hello's log before
/// them), and counts the messages and the gaps the inspector reports. It does not parse the rest
/// (a browser's page would): on two cores the client's own work runs beside the dispatches, and
/// what is measured should be the inspector's.
final class InspectorPageClient: @unchecked Sendable {
    // @unchecked: the fields below are behind `condition`.
    private let condition = NSCondition()
    private var hello = false
    private var version: UInt64 = 0
    private var messages = 0
    private var gaps = 0
    private var ended = false
    private var failure: (any Error)?
    /// The version the benchmark's thread waits for (`receive` wakes it only then).
    private var waitingFor = UInt64.max
    /// Asks the connection's handler to close.
    private let closing = AsyncStream<Void>.makeStream()
    private var connection: Task<Void, Never>?

    private init() {}

    /// Connects to `inspector`'s WebSocket and returns once the page has its hello.
    static func connect(to inspector: StoreInspector) async throws -> InspectorPageClient {
        let page = InspectorPageClient()
        let url = "ws://127.0.0.1:\(inspector.port)/ws?token=\(inspector.token)"
        let closeRequests = page.closing.stream
        page.connection = Task {
            do {
                try await WebSocketClient.connect(url: url, logger: Logger(label: "inspector-benchmark-page")) {
                    inbound, outbound, _ in
                    // When a close is asked for, the page closes its side of the connection; the
                    // reader below ends with the inspector's answer.
                    let closer = Task {
                        for await _ in closeRequests { break }
                        guard !Task.isCancelled else { return }
                        try? await outbound.close(.normalClosure, reason: nil)
                    }
                    // The page reads every message, until the connection ends.
                    do {
                        for try await message in inbound.messages(maxSize: 1 << 24) {
                            if case .text(let text) = message { page.receive(text) }
                        }
                    } catch {
                        page.end(error)
                    }
                    closer.cancel()
                    await closer.value
                }
            } catch {
                page.end(error)
            }
            page.end(nil)
        }
        // The hello, or the connection's end.
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let (hasHello, ended, failure) = page.condition.withLock { (page.hello, page.ended, page.failure) }
            if hasHello { return page }
            if ended {
                await page.close()
                throw failure ?? InspectorPageError.closed
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        await page.close()
        throw InspectorPageError.noHello
    }

    enum InspectorPageError: Error { case noHello, closed }

    private func receive(_ text: String) {
        // Read from the end: the top-level members come last in key order, after a hello's log.
        var text = text
        let (type, messageVersion) = text.withUTF8 { bytes in
            (Self.lastStringValue(of: Self.typeKey, in: bytes), Self.lastNumberValue(of: Self.versionKey, in: bytes))
        }
        condition.withLock {
            messages += 1
            switch type {
            case "hello"?: hello = true
            case "gap"?: gaps += 1
            default: break
            }
            if type != "gap", let messageVersion, messageVersion > version { version = messageVersion }
            // The benchmark's thread is woken once, when the page has what it waits for.
            if hello, version >= waitingFor { condition.broadcast() }
        }
    }

    private static let typeKey = Array("\"type\":\"".utf8)
    private static let versionKey = Array("\"version\":".utf8)

    /// Where the last `key` in `bytes` ends.
    private static func endOfLast(_ key: [UInt8], in bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard bytes.count >= key.count else { return nil }
        var index = bytes.count - key.count
        while index >= 0 {
            if bytes[index] == key[0] {
                var matched = 1
                while matched < key.count, bytes[index + matched] == key[matched] { matched += 1 }
                if matched == key.count { return index + key.count }
            }
            index -= 1
        }
        return nil
    }

    /// The string after the last `key` (which ends with the opening quote).
    private static func lastStringValue(of key: [UInt8], in bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard let start = endOfLast(key, in: bytes) else { return nil }
        var end = start
        while end < bytes.count, bytes[end] != UInt8(ascii: "\"") { end += 1 }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
    }

    /// The whole number after the last `key`.
    private static func lastNumberValue(of key: [UInt8], in bytes: UnsafeBufferPointer<UInt8>) -> UInt64? {
        guard let start = endOfLast(key, in: bytes) else { return nil }
        var value: UInt64 = 0
        var at = start
        while at < bytes.count, bytes[at] >= UInt8(ascii: "0"), bytes[at] <= UInt8(ascii: "9") {
            value = value &* 10 &+ UInt64(bytes[at] - UInt8(ascii: "0"))
            at += 1
        }
        return at > start ? value : nil
    }

    private func end(_ error: (any Error)?) {
        condition.withLock {
            ended = true
            if failure == nil { failure = error }
        }
        condition.broadcast()
    }

    /// The newest version the page has heard of.
    var lastVersion: UInt64 { condition.withLock { version } }
    /// Messages received, and gaps among them.
    var counts: (messages: Int, gaps: Int) { condition.withLock { (messages, gaps) } }

    /// Blocks until the page has the change of `target` (or later), or the connection ended, or
    /// `seconds` passed. Whether it has it.
    func wait(forVersion target: UInt64, seconds: TimeInterval) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer {
            waitingFor = .max
            condition.unlock()
        }
        waitingFor = target
        while version < target, !ended {
            if !condition.wait(until: deadline) { break }
        }
        return version >= target
    }

    /// Closes the connection (if open) and waits for its task to end.
    func close() async {
        closing.continuation.yield()
        closing.continuation.finish()
        await connection?.value
    }
}
