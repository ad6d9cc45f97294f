// swift-tools-version: 6.1
// The benchmarks of ReduxStore: a package of their own, so the library's build stays lean.
//
//   bash scripts/bench          # from the repository root: quick run, results in Benchmarks/results/
//   swift package benchmark     # from Benchmarks/: the plain ordo-one/benchmark run
import PackageDescription

/// The library's package identity: the name of the folder it is checked out in (a path
/// dependency's identity is its folder's name, which differs between clones).
let library = String(#filePath.split(separator: "/").dropLast(2).last ?? "main")

let package = Package(
    name: "ReduxStoreBenchmarks",
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        // Its allocation hook measures a snapshot's peak memory (benchmark itself depends on it).
        .package(url: "https://github.com/ordo-one/malloc-interposer.git", from: "1.6.1"),
        // The histograms in the run's saved results, read back by BenchmarkReport.
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        // The WebSocket client that is the page of the inspector benchmarks (inspection.inspector.*);
        // the library itself depends on it for its inspector's tests (the same version).
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        // The plain INSERT loop replication is measured against (the library's own version).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        // The benchmarks: Swift stores, their baselines, and the C interface (include/reduxstore.h)
        // called from Swift through the library's own C module; the live inspector's cost per dispatch.
        .executableTarget(
            name: "ReduxStoreBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "MallocInterposerSwift", package: "malloc-interposer"),
                .product(name: "ReduxStore", package: library),
                .product(name: "reduxstore", package: library),
                // The live inspector (the library's product while REDUXSTORE_CORE_ONLY is unset)
                // and a WebSocket client to connect a page to it.
                .product(name: "ReduxStoreInspector", package: library),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            ],
            path: "Benchmarks/ReduxStoreBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Reads a saved run (.benchmarkBaselines/ReduxStoreBenchmarks/<name>/results.json), and
        // writes the per-action figures and the goal ratios: results/results.{csv,json,md}.
        .executableTarget(
            name: "BenchmarkReport",
            dependencies: [.product(name: "Histogram", package: "hdrhistogram-swift")],
            path: "Tools/BenchmarkReport"
        ),
        // One workload in a plain loop, to profile under valgrind's callgrind.
        .executableTarget(
            name: "ProfileDriver",
            dependencies: [
                .product(name: "ReduxStore", package: library),
                .product(name: "reduxstore", package: library),
                .product(name: "ReduxStoreInspector", package: library),
            ],
            path: "Tools/ProfileDriver"
        ),
        // Replication on PostgreSQL against PostgreSQL's own insert rate (Benchmarks/replication.sh).
        .executableTarget(
            name: "ReplicationBench",
            dependencies: [
                .product(name: "ReduxStore", package: library),
                .product(name: "ReduxStorePostgres", package: library),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "Tools/ReplicationBench"
        ),
    ]
)
