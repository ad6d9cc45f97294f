import Benchmark
import CJSONC
import CReduxStoreAPI
import Foundation
import ReduxStore
import ReduxStoreC

/// The goals that hold one store against another (the plain store, a Swift dispatch, a counter),
/// measured side by side: in each sample every store dispatches 1,000 actions, timed apart, in an
/// order that rotates from sample to sample, so that a slow spell of the machine falls on all of
/// them; each goal's metric is the sample's ratio, in thousandths, and the report takes the
/// median. The single benchmarks (`dispatch.plain.*`, `dispatch.routed.*`, `c.dispatch.*`, …) are
/// the same workloads one after the other, for the tables: their ratios swing with the speed of
/// the machine at the minute each ran.
func registerPairedBenchmarks() {
    let metrics = PairedDispatch.ratios.map {
        BenchmarkMetric.custom($0.metric, polarity: .prefersSmaller, useScalingFactor: false)
    }
    Benchmark(
        "dispatch.paired",
        configuration: .init(metrics: metrics, warmupIterations: 3, maxIterations: 2_000)
    ) { benchmark, paired in
        let nanoseconds = paired.sample()
        for (index, ratio) in PairedDispatch.ratios.enumerated() {
            let value = 1_000 * nanoseconds[ratio.numerator]! / max(nanoseconds[ratio.denominator]!, 1)
            benchmark.measurement(metrics[index], Int(value))
        }
    } setup: {
        PairedDispatch()
    }

    // Four threads dispatching 1,000,000 actions in all to the store, and as many to the plain
    // store, in alternating order in each sample (each sample about a fifth of a second).
    let threadsPerMille = BenchmarkMetric.custom("contention4PerMille", polarity: .prefersSmaller, useScalingFactor: false)
    Benchmark(
        "contention.paired.threads4",
        configuration: .init(metrics: [threadsPerMille], warmupIterations: 1, maxDuration: .seconds(3), maxIterations: 12)
    ) { benchmark, pair in
        func timed(_ dispatch: @escaping @Sendable () -> Void) -> UInt64 {
            let start = DispatchTime.now().uptimeNanoseconds
            onThreads(4) { for _ in 0..<250_000 { dispatch() } }
            return DispatchTime.now().uptimeNanoseconds - start
        }
        pair.samples += 1
        let store = pair.store, plain = pair.plain
        var storeTime: UInt64 = 0, plainTime: UInt64 = 0
        for turn in 0..<2 {
            if (turn + pair.samples).isMultiple(of: 2) {
                storeTime = timed { store.dispatchAction(Increment(amount: 1)) }
            } else {
                plainTime = timed { plain.dispatchAction(Increment(amount: 1)) }
            }
        }
        benchmark.measurement(threadsPerMille, Int(1_000 * storeTime / max(plainTime, 1)))
    } setup: { () -> ContentionPair in
        let store = Store(reducers: counterReducers(1), state: Counter())
        addObservers(1, to: store)
        let plain = PlainStore(reducers: counterReducers(1), state: Counter())
        addObservers(1, to: plain)
        return ContentionPair(store: store, plain: plain)
    }
}

/// The stores of `dispatch.paired`, each with its burst of 1,000 dispatches.
final class PairedDispatch: @unchecked Sendable {
    // @unchecked: used by the benchmark's one thread.
    enum Kind: CaseIterable {
        /// The plain store: counter, 1 reducer casting, 1 observer.
        case plain
        /// Routed reducers: the counter's for `Increment`, 1 observer.
        case routed
        /// The same among 49 reducers of other identifiers.
        case routed50
        /// The broadcast store: counter, 1 reducer casting, 1 observer.
        case broadcast
        /// The broadcast store without an observer: the Swift dispatch the C goals are held to.
        case broadcastNoObserver
        /// 100,000 todos, 1 reducer casting, 1 observer: a `Toggle` of the next todo in turn.
        case todos100000
        /// A C store, NULL payload, the counter's reducer for "counter.add" among 10 routed by
        /// identifier.
        case cRouted
        /// A Swift store handed to C, NULL payload, an identifier registered for a type
        /// without stored properties (`Tick`), its reducer casting.
        case swiftStoreInC
    }

    /// Each goal's metric: numerator ÷ denominator.
    static let ratios: [(metric: String, numerator: Kind, denominator: Kind)] = [
        ("routedPerMille", .routed, .plain),
        ("routed50PerMille", .routed50, .routed),
        ("broadcastPerMille", .broadcast, .plain),
        ("todosPerMille", .todos100000, .broadcast),
        ("cRoutedPerMille", .cRouted, .broadcastNoObserver),
        ("swiftStoreInCPerMille", .swiftStoreInC, .broadcastNoObserver),
    ]

    private let plain = PlainStore(reducers: counterReducers(1), state: Counter())
    private let routed = Store(reducers: routedCounterReducers(1), state: Counter())
    private let routed50 = Store(reducers: routedCounterReducers(50), state: Counter())
    private let broadcast = Store(reducers: counterReducers(1), state: Counter())
    private let broadcastNoObserver = Store(reducers: counterReducers(1), state: Counter())
    private let todos = Store(reducers: todoReducers(1), state: TodoList(count: 100_000))
    private let cRouted = CStore(state: json_tokener_parse(#"{"count": 0}"#), routedAmong: 10)
    private let swiftStoreInC = SwiftStoreHandle(Store(reducers: tickReducers(), state: Counter()), actions: tickActionTypes())
    private var todoIndex = 0
    private var samples = 0

    init() {
        addObservers(1, to: plain)
        addObservers(1, to: routed)
        addObservers(1, to: routed50)
        addObservers(1, to: broadcast)
        addObservers(1, to: todos)
    }

    /// One sample: each store's 1,000 dispatches, timed apart, in rotating order.
    func sample() -> [Kind: UInt64] {
        samples += 1
        let all = Kind.allCases
        var nanoseconds: [Kind: UInt64] = [:]
        for turn in all.indices {
            let kind = all[(turn + samples) % all.count]
            nanoseconds[kind] = burst(kind)
        }
        return nanoseconds
    }

    @inline(never)
    private func burst(_ kind: Kind) -> UInt64 {
        let start = DispatchTime.now().uptimeNanoseconds
        switch kind {
        case .plain: for _ in 0..<1_000 { plain.dispatchAction(Increment(amount: 1)) }
        case .routed: for _ in 0..<1_000 { routed.dispatchAction(Increment(amount: 1)) }
        case .routed50: for _ in 0..<1_000 { routed50.dispatchAction(Increment(amount: 1)) }
        case .broadcast: for _ in 0..<1_000 { broadcast.dispatchAction(Increment(amount: 1)) }
        case .broadcastNoObserver: for _ in 0..<1_000 { broadcastNoObserver.dispatchAction(Increment(amount: 1)) }
        case .todos100000:
            for _ in 0..<1_000 {
                todos.dispatchAction(Toggle(index: todoIndex))
                todoIndex = todoIndex + 1 == 100_000 ? 0 : todoIndex + 1
            }
        case .cRouted:
            for _ in 0..<1_000 { precondition(rdx_store_dispatch_action(cRouted.pointer, "counter.add", nil) == RDX_OK) }
        case .swiftStoreInC:
            for _ in 0..<1_000 {
                precondition(rdx_store_dispatch_action(swiftStoreInC.handle.pointer, "counter.tick", nil) == RDX_OK)
            }
        }
        return DispatchTime.now().uptimeNanoseconds - start
    }
}

/// The stores of `contention.paired.threads4`.
final class ContentionPair: @unchecked Sendable {
    // @unchecked: `samples` is used by the benchmark's one thread; the stores are Sendable.
    let store: Store<Counter>
    let plain: PlainStore<Counter>
    var samples = 0
    init(store: Store<Counter>, plain: PlainStore<Counter>) {
        self.store = store
        self.plain = plain
    }
}
