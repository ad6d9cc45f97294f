// BenchmarkReport: reads one saved run of the benchmarks (the results.json that
// `swift package benchmark baseline update NAME` writes) and writes, into an output folder:
//   results.json  every benchmark's per-operation figures, and each goal's measured ratio
//   results.csv   the same figures, one benchmark a line
//   results.md    the Markdown tables (scripts/bench puts them into Benchmarks/README.md, the goals table into README.md)
// Every ratio is between two benchmarks of that one run. Usage:
//   BenchmarkReport <results.json> <output folder> [run seconds]
import Foundation
import Histogram

// MARK: - The saved run, as the benchmark tool encodes it

struct SavedRun: Decodable {
    var baselineName: String
    var machine: Machine
    /// Benchmark identifiers and their results, alternating (a dictionary with struct keys).
    var results: [(name: String, results: [SavedResult])]

    struct Machine: Codable {
        var hostname: String
        var processors: Int
        var processorType: String
        var memory: Int
        var kernelVersion: String
    }

    struct Identifier: Decodable {
        var name: String
        var target: String
    }

    enum CodingKeys: String, CodingKey { case baselineName, machine, results }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        baselineName = try container.decode(String.self, forKey: .baselineName)
        machine = try container.decode(Machine.self, forKey: .machine)
        var entries = try container.nestedUnkeyedContainer(forKey: .results)
        results = []
        while !entries.isAtEnd {
            let identifier = try entries.decode(Identifier.self)
            let values = try entries.decode([SavedResult].self)
            results.append((identifier.name, values))
        }
    }
}

struct SavedResult: Decodable {
    /// `wallClock`, `mallocCountTotal`, …, or a custom metric's own name.
    var metric: String
    var scalesWithFactor: Bool
    var scalingFactor: Int
    var histogram: Histogram<UInt>

    enum CodingKeys: String, CodingKey { case metric, scalingFactor, statistics }
    enum StatisticsKeys: String, CodingKey { case histogram }
    struct CustomMetric: Decodable {
        var name: String
        var useScalingFactor: Bool
        enum CodingKeys: String, CodingKey { case name = "_0", useScalingFactor }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        scalingFactor = try container.decode(Int.self, forKey: .scalingFactor)
        let statistics = try container.nestedContainer(keyedBy: StatisticsKeys.self, forKey: .statistics)
        histogram = try statistics.decode(Histogram<UInt>.self, forKey: .histogram)
        // `{"wallClock": {}}` or `{"custom": {"_0": "name", "useScalingFactor": …}}`
        if let custom = try? container.decode([String: CustomMetric].self, forKey: .metric),
            let value = custom["custom"]
        {
            metric = value.name
            scalesWithFactor = value.useScalingFactor
        } else {
            let plain = try container.decode([String: [String: Int]].self, forKey: .metric)
            metric = plain.keys.first ?? "?"
            // Metrics that count per iteration are divided by the scaling factor; memory sizes
            // and thread counts are not.
            scalesWithFactor = ["wallClock", "cpuTotal", "cpuUser", "cpuSystem", "mallocCountTotal",
                                "mallocCountSmall", "mallocCountLarge", "freeCountTotal",
                                "mallocBytesCount", "instructions", "retainCount", "releaseCount"]
                .contains(metric)
        }
    }

    /// A percentile of the metric, per operation (one action, one snapshot round, …).
    func perOperation(_ percentile: Double) -> Double {
        Double(histogram.valueAtPercentile(percentile)) / divisor
    }

    var meanPerOperation: Double { histogram.mean / divisor }
    private var divisor: Double { scalesWithFactor ? Double(scalingFactor) : 1 }
}

// MARK: - Figures per benchmark

struct Figures: Codable {
    var name: String
    var samples: Int
    var operationsPerSample: Int
    /// Wall clock per operation, nanoseconds.
    var p50Nanoseconds: Double?
    var p99Nanoseconds: Double?
    var meanNanoseconds: Double?
    /// Heap allocations per operation (p50), the harness's own per-sample allocations removed.
    var mallocsPerOperation: Double?
    var instructionsPerOperation: Double?
    var peakExtraBytes: Double?
    /// The paired journal benchmark's ratio (with ÷ without), in thousandths.
    var journalPerMille: Double?
    /// The paired inspector benchmark's ratios, in thousandths: a dispatch with the inspector on
    /// and one page connected ÷ without an inspector; with the inspector on and no page ÷ without.
    var inspectorPagePerMille: Double?
    var inspectorIdlePerMille: Double?
    var inspectorQuietPerMille: Double?
    var stateJSONBytes: Double?
    /// Every other ratio a paired benchmark measured in each sample (a metric named
    /// `…PerMille`), in thousandths: the median of the samples.
    var perMille: [String: Double]?
}

struct Goal: Codable {
    var goal: String
    var measure: String
    var value: Double
    var target: String
    var met: Bool
}

struct Report: Codable {
    var baseline: String
    var date: String
    var machine: SavedRun.Machine
    var runSeconds: Double?
    var instructionsAvailable: Bool
    var goals: [Goal]
    var benchmarks: [Figures]
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write("usage: BenchmarkReport <results.json> <output folder> [run seconds] [C inspector JSON]\n".data(using: .utf8)!)
    exit(2)
}
let run = try JSONDecoder().decode(SavedRun.self, from: Data(contentsOf: URL(fileURLWithPath: arguments[1])))
let output = URL(fileURLWithPath: arguments[2], isDirectory: true)
let runSeconds = arguments.count > 3 ? Double(arguments[3]) : nil
/// What Benchmarks/C/inspector_dispatch.c measured in the same run (scripts/bench runs it after
/// the benchmarks): for each state, the medians of the rounds' ratios to the store without an
/// inspector.
struct CInspectorRun: Decodable {
    struct State: Decodable { var page: Double; var pages8: Double }
    var counter: State
    var members2000: State
}
let cInspector = try arguments.count > 4
    ? JSONDecoder().decode(CInspectorRun.self, from: Data(contentsOf: URL(fileURLWithPath: arguments[4])))
    : nil
try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)

func metric(_ results: [SavedResult], _ name: String) -> SavedResult? {
    results.first { $0.metric == name }
}

// The harness's own allocations in each measured sample, read off the empty benchmark.
let harnessMallocs: Double = {
    guard let empty = run.results.first(where: { $0.name == "overhead.empty" }),
        let mallocs = metric(empty.results, "mallocCountTotal")
    else { return 0 }
    return Double(mallocs.histogram.valueAtPercentile(50))
}()

var figures: [String: Figures] = [:]
for (name, results) in run.results {
    let wall = metric(results, "wallClock")
    let anyResult = results.first
    var entry = Figures(
        name: name,
        samples: Int(anyResult?.histogram.totalCount ?? 0),
        operationsPerSample: anyResult?.scalingFactor ?? 1)
    entry.p50Nanoseconds = wall?.perOperation(50)
    entry.p99Nanoseconds = wall?.perOperation(99)
    entry.meanNanoseconds = wall?.meanPerOperation
    if let mallocs = metric(results, "mallocCountTotal") {
        let raw = Double(mallocs.histogram.valueAtPercentile(50))
        entry.mallocsPerOperation = max(0, raw - harnessMallocs) / Double(mallocs.scalingFactor)
    }
    if let instructions = metric(results, "instructions"), instructions.histogram.max > 0 {
        entry.instructionsPerOperation = instructions.perOperation(50)
    }
    entry.peakExtraBytes = metric(results, "peakExtraBytes")?.perOperation(50)
    entry.stateJSONBytes = metric(results, "stateJSONBytes")?.perOperation(50)
    entry.journalPerMille = metric(results, "journalPerMille")?.perOperation(50)
    entry.inspectorPagePerMille = metric(results, "inspectorPagePerMille")?.perOperation(50)
    entry.inspectorIdlePerMille = metric(results, "inspectorIdlePerMille")?.perOperation(50)
    entry.inspectorQuietPerMille = metric(results, "inspectorQuietPerMille")?.perOperation(50)
    let paired = results.filter { $0.metric.hasSuffix("PerMille") && !$0.metric.hasPrefix("inspector") && $0.metric != "journalPerMille" }
    if !paired.isEmpty {
        entry.perMille = Dictionary(uniqueKeysWithValues: paired.map { ($0.metric, $0.perOperation(50)) })
    }
    figures[name] = entry
}

// MARK: - Goals: each a ratio of two benchmarks of this run (p50 per operation)

@MainActor func p50(_ name: String) -> Double? { figures[name]?.p50Nanoseconds }

var goals: [Goal] = []
@MainActor func ratio(
    _ goal: String, _ measure: String, _ numerator: String, _ denominator: String,
    atMost: Double? = nil, atLeast: Double? = nil, scale: Double = 1
) {
    guard let top = p50(numerator), let bottom = p50(denominator), bottom > 0 else {
        print("warning: \(numerator) or \(denominator) is missing from the run")
        return
    }
    addGoal(goal, measure, top / (bottom * scale), atMost: atMost, atLeast: atLeast)
}

/// A goal measured by a paired benchmark: the median of its samples' ratio `metric` (without
/// `atMost`, a figure shown beside a goal).
@MainActor func pairedRatio(_ goal: String, _ measure: String, _ benchmark: String, _ metric: String, atMost: Double? = nil) {
    guard let perMille = figures[benchmark]?.perMille?[metric] else {
        print("warning: \(benchmark)'s \(metric) is missing from the run")
        return
    }
    addGoal(goal, measure, perMille / 1_000, atMost: atMost)
}

/// The row of a ratio `value`: held to `atMost` or `atLeast`, or, with neither, a figure shown
/// beside a goal.
@MainActor func addGoal(_ goal: String, _ measure: String, _ value: Double, atMost: Double? = nil, atLeast: Double? = nil) {
    if let atMost {
        goals.append(Goal(goal: goal, measure: measure, value: value, target: "≤ \(format(atMost))×", met: value <= atMost))
    } else if let atLeast {
        goals.append(Goal(goal: goal, measure: measure, value: value, target: "≥ \(format(atLeast))×", met: value >= atLeast))
    } else {
        goals.append(Goal(goal: goal, measure: measure, value: value, target: "—", met: true))
    }
}

func format(_ value: Double) -> String {
    if value == value.rounded() && abs(value) < 1e6 { return String(Int(value)) }
    if abs(value) >= 100 { return String(format: "%.0f", value) }
    if abs(value) >= 10 { return String(format: "%.1f", value) }
    return String(format: "%.2f", value)
}

// Dispatch, small state, 1 reducer, 1 observer.
if let mallocs = figures["dispatch.store.counter.r1.o1"]?.mallocsPerOperation {
    goals.append(Goal(goal: "dispatch", measure: "heap allocations per action (counter, 1 reducer, 1 observer)",
                      value: mallocs, target: "0", met: mallocs == 0))
}
ratio("dispatch", "dispatch (counter, 1 reducer, 1 observer) ÷ hand loop (1 reducer)",
      "dispatch.store.counter.r1.o1", "dispatch.hand.counter.r1", atMost: 2.5)
// Against the plain baseline store (one Synchronization.Mutex, compiled in the benchmarks, its
// reducer casting the action as users' reducers do). Routed reducers must beat it; the broadcast
// shape pays for the contract (nested dispatch, removal that waits, thread-aware delivery).
pairedRatio("plain store", "routed: one reducer for the action's type (counter, 1 observer) ÷ plain store doing the same (paired)",
            "dispatch.paired", "routedPerMille", atMost: 0.8)
pairedRatio("plain store", "routed: 50 reducers, one of them for the action ÷ one reducer (counter, 1 observer; paired)",
            "dispatch.paired", "routed50PerMille", atMost: 1.15)
ratio("plain store", "(beside it) the plain store: 50 reducers ÷ 1, each casting",
      "dispatch.plain.counter.r50.o1", "dispatch.plain.counter.r1.o1")
pairedRatio("plain store", "broadcast: dispatch (counter, 1 reducer, 1 observer) ÷ plain store doing the same (paired)",
            "dispatch.paired", "broadcastPerMille", atMost: 1.25)
pairedRatio("plain store", "broadcast: 4 threads, 1,000,000 actions in all (counter, 1 reducer, 1 observer) ÷ plain store (paired)",
            "contention.paired.threads4", "contention4PerMille", atMost: 1.0)
// Independent of state size: the same reducer and action on 100,000 todos and on 10. The counter's
// reducer is cheaper work than a todo's, so that row is shown beside it without a goal.
ratio("state size", "dispatch 100,000 todos ÷ dispatch 10 todos (same reducer and action)",
      "dispatch.store.todos100000.r1.o1", "dispatch.store.todos10.r1.o1", atMost: 1.2)
pairedRatio("state size", "(beside it) dispatch 100,000 todos ÷ dispatch counter (1 reducer, 1 observer; paired)",
            "dispatch.paired", "todosPerMille")
// Snapshots against Foundation's round trip.
for size in [1_000, 100_000] {
    ratio("snapshots", "Foundation round trip ÷ snapshot, \(size.formatted()) todos (speed-up)",
          "snapshot.foundation.todos\(size).readers1", "snapshot.store.todos\(size).readers1", atLeast: 10)
}
for size in [1_000, 100_000] {
    ratio("snapshots", "10 readers after one action ÷ Foundation (1 encode + 10 decodes), \(size.formatted()) todos",
          "snapshot.store.todos\(size).readers10", "snapshot.foundation.todos\(size).readers10", atMost: 0.15)
}
// C dispatch.
pairedRatio("C", "C dispatch, NULL payload (C store, 10 reducers routed by identifier) ÷ Swift dispatch (counter, 1 reducer, 0 observers; paired)",
            "dispatch.paired", "cRoutedPerMille", atMost: 1.5)
ratio("C", "(beside it) the same with one reducer for every action",
      "c.dispatch.null", "dispatch.store.counter.r1.o0")
pairedRatio("C", "C dispatch, NULL payload (Swift store handed to C, identifier registered) ÷ Swift dispatch (paired)",
            "dispatch.paired", "swiftStoreInCPerMille", atMost: 1.6)
ratio("C", "(beside it) not registered: a JSONAction",
      "c.swiftstore.dispatch.null", "dispatch.store.counter.r1.o0")
ratio("C", "rdx_store_dispatch_json of a small action ÷ json-c parsing and freeing the same text",
      "c.dispatch.json", "c.jsonc.parse", atMost: 1.3)
ratio("C", "rdx_store_dispatch_batch_json of 10 small actions ÷ json-c parsing and freeing the same text",
      "c.dispatch.batch.json", "c.jsonc.parse.batch", atMost: 1.3)
if let mallocs = figures["c.dispatch.payload"]?.mallocsPerOperation {
    goals.append(Goal(goal: "C", measure: "heap allocations per C dispatch with a payload (no text made)",
                      value: mallocs, target: "0", met: mallocs == 0))
}
// Composition: a key-path observer whose value did not change, over the same store without it
// (a difference in nanoseconds, not a ratio); middleware and batches for reference.
if let observed = p50("composition.keypath.unchanged"), let plain = p50("composition.gauge.o0") {
    let extra = observed - plain
    goals.append(Goal(goal: "composition", measure: "key-path observer of an unchanged value: extra ns per action over the same store without it",
                      value: extra, target: "≤ 10 ns", met: extra <= 10))
}
ratio("composition", "dispatch through one pass-through middleware ÷ dispatch without (counter, 1 reducer, 0 observers)",
      "composition.middleware.pass1", "dispatch.store.counter.r1.o0", atMost: 2.5)
ratio("composition", "one action of a batch of 10 ÷ one dispatch (counter, 1 reducer, 1 observer)",
      "composition.batch10", "dispatch.store.counter.r1.o1", atMost: 1.0)
// Inspection: the journal's cost per action (without patches), against the same store without
// a journal, side by side in each sample (inspection.journal.paired: the median of the samples'
// ratios); the writer catches up between samples (the sustained rate is the disk's:
// inspection.journal.sustained).
if let perMille = figures["inspection.journal.paired.counter"]?.journalPerMille {
    addGoal("inspection", "dispatch with the journal on ÷ without (counter, 1 reducer, 0 observers; writer keeping up; paired)",
            perMille / 1_000, atMost: 2)
}
// The live inspector's cost per action, against the same store without an inspector, the
// stores side by side in each sample (inspection.inspector.paired: the median of the samples'
// ratios); the page catches up, not timed, after each burst on its store.
if let paired = figures["inspection.inspector.paired.counter"] {
    if let perMille = paired.inspectorPagePerMille {
        addGoal("inspection", "dispatch with the inspector on and one page connected ÷ without an inspector (counter, 1 reducer, 0 observers; page keeping up; paired)",
                perMille / 1_000, atMost: 1.1)
    }
    if let perMille = paired.inspectorIdlePerMille {
        addGoal("inspection", "dispatch with the inspector on and no page ÷ without an inspector (counter, 1 reducer, 0 observers; paired)",
                perMille / 1_000, atMost: 1.1)
    }
    // The ablation: what the backlog for a page opened later costs, by difference.
    if let perMille = paired.inspectorQuietPerMille {
        addGoal("inspection", "the same with keptActions 0 (nothing recorded until a page connects; paired)", perMille / 1_000)
    }
}
// The live inspector on a C store (Benchmarks/C/inspector_dispatch.c, run by scripts/bench):
// NULL-payload dispatches, the stores' bursts side by side in each round, the pages catching up
// after each burst, not timed.
if let cInspector {
    for (name, state) in [("C counter", cInspector.counter), ("C, 2,000 members", cInspector.members2000)] {
        addGoal("inspection", "\(name): dispatch, one page ÷ no inspector (paired bursts)", state.page, atMost: 1.1)
        addGoal("inspection", "\(name): 8 pages ÷ no inspector", state.pages8, atMost: 1.2)
    }
}
ratio("inspection", "diff of two 100,000-todo states with one change ÷ a snapshot of that state",
      "inspection.diff.todos100000", "snapshot.store.todos100000.readers1", atMost: 2)
// Snapshot memory.
for size in [10, 1_000, 100_000] {
    if let peak = figures["memory.store.todos\(size)"]?.peakExtraBytes,
        let json = figures["memory.store.todos\(size)"]?.stateJSONBytes, json > 0
    {
        goals.append(Goal(goal: "memory", measure: "snapshot peak extra memory ÷ JSON text size, \(size.formatted()) todos",
                          value: peak / json, target: "≤ 3×", met: peak / json <= 3))
    }
}
// A quick run's time.
if let runSeconds {
    goals.append(Goal(goal: "quick run", measure: "quick run (scripts/bench, build excluded), seconds",
                      value: runSeconds, target: "< 120 s", met: runSeconds < 120))
}

// MARK: - Output

let ordered = figures.values.sorted { $0.name < $1.name }
let instructionsAvailable = ordered.contains { $0.instructionsPerOperation != nil }
let dateFormatter = ISO8601DateFormatter()
let report = Report(
    baseline: run.baselineName, date: dateFormatter.string(from: Date()), machine: run.machine,
    runSeconds: runSeconds, instructionsAvailable: instructionsAvailable, goals: goals,
    benchmarks: ordered)
let encoder = JSONEncoder()
encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
try encoder.encode(report).write(to: output.appendingPathComponent("results.json"))

func cell(_ value: Double?) -> String { value.map { String(format: "%.3f", $0) } ?? "" }
var csv = "benchmark,samples,operations_per_sample,p50_ns,p99_ns,mean_ns,mallocs_per_op,instructions_per_op,peak_extra_bytes,state_json_bytes\n"
for entry in ordered {
    csv += [entry.name, String(entry.samples), String(entry.operationsPerSample),
            cell(entry.p50Nanoseconds), cell(entry.p99Nanoseconds), cell(entry.meanNanoseconds),
            cell(entry.mallocsPerOperation), cell(entry.instructionsPerOperation),
            cell(entry.peakExtraBytes), cell(entry.stateJSONBytes)].joined(separator: ",") + "\n"
}
try csv.write(to: output.appendingPathComponent("results.csv"), atomically: true, encoding: .utf8)

func time(_ nanoseconds: Double?) -> String {
    guard let nanoseconds else { return "" }
    switch nanoseconds {
    case ..<1_000: return String(format: "%.1f ns", nanoseconds)
    case ..<1_000_000: return String(format: "%.2f µs", nanoseconds / 1_000)
    default: return String(format: "%.2f ms", nanoseconds / 1_000_000)
    }
}
func bytes(_ value: Double?) -> String {
    guard let value else { return "" }
    switch value {
    case ..<10_000: return String(format: "%.0f B", value)
    case ..<10_000_000: return String(format: "%.1f KB", value / 1_000)
    default: return String(format: "%.1f MB", value / 1_000_000)
    }
}

var markdown = "| area | measure | measured | target | met |\n|---|---|---|---|---|\n"
for goal in goals {
    let value = goal.measure.hasPrefix("heap allocations") ? String(format: "%.3f", goal.value)
        : goal.goal == "quick run" ? String(format: "%.0f s", goal.value)
        : goal.target.hasSuffix("ns") ? String(format: "%.1f ns", goal.value) : format(goal.value) + "×"
    markdown += "| \(goal.goal) | \(goal.measure) | \(value) | \(goal.target) | \(goal.target == "—" ? "—" : goal.met ? "yes" : "**no**") |\n"
}
markdown += "\n| benchmark | per | p50 | p99 | allocations | samples |\n|---|---|---|---|---|---|\n"
for entry in ordered where entry.p50Nanoseconds != nil && entry.name != "overhead.empty" {
    let per = entry.name.hasPrefix("dispatch") || entry.name.hasPrefix("contention")
        || entry.name.hasPrefix("c.dispatch") || entry.name.hasPrefix("c.hand")
        || entry.name.hasPrefix("c.swiftstore") ? "action"
        : entry.name.contains("readers10") ? "action + 10 reads" : entry.name.contains("readers1") ? "action + 1 read" : "call"
    markdown += "| `\(entry.name)` | \(per) | \(time(entry.p50Nanoseconds)) | \(time(entry.p99Nanoseconds)) | \(entry.mallocsPerOperation.map { format($0) } ?? "") | \(entry.samples) |\n"
}
markdown += "\n| snapshot memory | JSON text | peak extra (store) | peak extra (Foundation) |\n|---|---|---|---|\n"
for size in [10, 1_000, 100_000] {
    let store = figures["memory.store.todos\(size)"]
    let foundation = figures["memory.foundation.todos\(size)"]
    markdown += "| \(size.formatted()) todos | \(bytes(store?.stateJSONBytes)) | \(bytes(store?.peakExtraBytes)) | \(bytes(foundation?.peakExtraBytes)) |\n"
}
try markdown.write(to: output.appendingPathComponent("results.md"), atomically: true, encoding: .utf8)
print(markdown)
