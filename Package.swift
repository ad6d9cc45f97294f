// swift-tools-version: 6.0
// 6.0: the oldest tools that know swiftLanguageModes (Swift 6 mode); nothing here needs newer.
import PackageDescription

let package = Package(
    name: "ReduxStore",
    products: [
        // The Swift library.
        .library(name: "ReduxStore", targets: ["ReduxStore"]),
        // libreduxstore.so: the C interface of include/reduxstore.h, for C programs.
        .library(name: "reduxstore", type: .dynamic, targets: ["ReduxStoreC"]),
        // reduxstore-inspect: saved states and journals from the command line.
        .executable(name: "reduxstore-inspect", targets: ["reduxstore-inspect"]),
    ],
    dependencies: [
        // Deque, for the store's queue of enqueued actions.
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        // swift-log, for LoggingMiddleware.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // The command line of reduxstore-inspect.
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // `swift package generate-documentation`: the DocC catalog in Sources/ReduxStore.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // json-c, found through pkg-config; Debian's libjson-c-dev provides it.
        .systemLibrary(
            name: "CJSONC",
            pkgConfig: "json-c",
            providers: [.apt(["libjson-c-dev"])]
        ),
        // The Swift core: store, dispatch, observers, snapshots, the Codable ⇄ json-c bridge,
        // persistence. It knows nothing of the C interface: what the libraries for C use beyond
        // the public API is one seam, `@_spi(Bindings)` (the DocC article "The bindings seam").
        .target(
            name: "ReduxStore",
            dependencies: [
                "CJSONC",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [
                // _checkInvariants() of the unsafe structures, run at each dispatch in debug
                // builds (the tests); release builds compile them out.
                .define("REDUXSTORE_INTERNAL_CHECKS", .when(configuration: .debug)),
            ]
        ),
        // The public C header, include/reduxstore.h (its public headers folder is a link to it),
        // so that the C face is checked against it at compile time.
        .target(
            name: "CReduxStoreAPI",
            dependencies: ["CJSONC"]
        ),
        // The one mapping between the core's kinds of failure and the header's statuses, for
        // every C face.
        .target(
            name: "ReduxStoreCStatus",
            dependencies: ["ReduxStore", "CReduxStoreAPI"]
        ),
        // The C face: `@c @implementation` functions, a thin layer over the Swift core.
        .target(
            name: "ReduxStoreC",
            dependencies: ["ReduxStore", "ReduxStoreCStatus", "CReduxStoreAPI", "CJSONC"]
        ),
        // What reduxstore-inspect does with journals (summaries, states rebuilt from patches), a
        // library of its own on the core's journal reader, so that the core carries none of it.
        .target(
            name: "ReduxStoreInspectKit",
            dependencies: ["ReduxStore"]
        ),
        // reduxstore-inspect: show, diff, journal, state. The work is the libraries' (`Inspector`).
        .executableTarget(
            name: "reduxstore-inspect",
            dependencies: [
                "ReduxStore", "ReduxStoreInspectKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/ReduxStoreInspect"
        ),
        // The Swift demo the README's Quick start runs.
        .executableTarget(
            name: "ReduxStoreDemo",
            dependencies: ["ReduxStore"],
            path: "Examples/SwiftDemo"
        ),
        // The C demo, built inside the package (the README also builds it with a plain cc line).
        .executableTarget(
            name: "reduxstore-c-demo",
            dependencies: ["ReduxStoreC", "CReduxStoreAPI"],
            path: "Examples/CDemo"
        ),
        // A process the autosave test runs: it must have saved its last action when it exits.
        .executableTarget(
            name: "reduxstore-autosave-exit-check",
            dependencies: ["ReduxStore"],
            path: "Tests/AutosaveExitCheck"
        ),
        // A process the journal's crash test kills with SIGKILL while it writes.
        .executableTarget(
            name: "reduxstore-journal-kill-check",
            dependencies: ["ReduxStore"],
            path: "Tests/JournalKillCheck"
        ),
        // libFuzzer harnesses (scripts/fuzz builds them with -sanitize=fuzzer,address and
        // -DFUZZING). Built plainly, each replays the files of the folders it is given instead.
        // Their shared entry point:
        .target(
            name: "FuzzSupport",
            path: "Tests/Fuzz/Support"
        ),
        // rdx_store_dispatch_json on a C store and on a Swift store handed to C.
        .executableTarget(
            name: "fuzz-dispatch-json",
            dependencies: ["FuzzSupport", "ReduxStoreC", "ReduxStore", "CReduxStoreAPI", "CJSONC"],
            path: "Tests/Fuzz/DispatchJSON"
        ),
        // rdx_store_open on arbitrary file bytes, then snapshot, dispatch, save, reopen.
        .executableTarget(
            name: "fuzz-open-file",
            dependencies: ["FuzzSupport", "ReduxStoreC", "ReduxStore", "CReduxStoreAPI", "CJSONC"],
            path: "Tests/Fuzz/OpenFile"
        ),
        // JSONCDecoder on arbitrary json-c trees, into a nested Decodable type and JSONValue.
        .executableTarget(
            name: "fuzz-jsonc-decoder",
            dependencies: ["FuzzSupport", "ReduxStore", "CJSONC"],
            path: "Tests/Fuzz/JSONCDecoder"
        ),
        // The Inspector functions reduxstore-inspect calls, on arbitrary journals and states.
        .executableTarget(
            name: "fuzz-inspector",
            dependencies: ["FuzzSupport", "ReduxStore", "ReduxStoreInspectKit"],
            path: "Tests/Fuzz/Inspector"
        ),
        // Fakes and fixtures shared by the test suites.
        .target(
            name: "ReduxStoreTestSupport",
            dependencies: ["ReduxStore"],
            path: "Tests/ReduxStoreTestSupport"
        ),
        .testTarget(
            name: "ReduxStoreTests",
            dependencies: [
                "ReduxStore", "ReduxStoreInspectKit", "ReduxStoreTestSupport", "CJSONC",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "ReduxStoreInspectTests",
            dependencies: ["ReduxStore", "ReduxStoreInspectKit", "ReduxStoreTestSupport"]
        ),
        .testTarget(
            name: "ReduxStoreCTests",
            dependencies: ["ReduxStoreC", "ReduxStore", "ReduxStoreTestSupport", "CReduxStoreAPI", "CJSONC"]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// The live inspector: a product of its own on Hummingbird 2 and its WebSocket module (SwiftNIO),
// so that the core target and libreduxstore.so link neither. REDUXSTORE_CORE_ONLY=1 leaves it
// out of the package: scripts/test's sanitizer runs set it, so that NIO is built once, in the
// main build folder, and not again under every sanitizer.
if Context.environment["REDUXSTORE_CORE_ONLY"] == nil {
    package.dependencies += [
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        // NIOHTTP1, for the answer to a refused WebSocket upgrade (Hummingbird's own dependency).
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // Replication on PostgreSQL, and the TLS of its connections (postgres-nio's own dependency).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // SHA-256 of the snapshots' states (postgres-nio's own dependency).
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
    ]
    package.products += [
        .library(name: "ReduxStoreInspector", targets: ["ReduxStoreInspector"]),
        // libreduxstore-inspector.so: include/reduxstore_inspector.h, for C programs. It reaches
        // the store through libreduxstore.so's C functions (resolved when a program loads both).
        .library(name: "reduxstore-inspector", type: .dynamic, targets: ["ReduxStoreInspectorC"]),
        // Replication of a store through a PostgreSQL stream.
        .library(name: "ReduxStorePostgres", targets: ["ReduxStorePostgres"]),
        // libreduxstore-postgres.so: include/reduxstore_postgres.h, for C programs. It reaches
        // the store through libreduxstore.so's C functions (resolved when a program loads both).
        .library(name: "reduxstore-postgres", type: .dynamic, targets: ["ReduxStorePostgresC"]),
    ]
    // reduxstore-inspect serve: a recorded journal in the inspector's page.
    package.targets.first { $0.name == "reduxstore-inspect" }!.dependencies.append("ReduxStoreInspector")
    package.targets += [
        .target(
            name: "ReduxStoreInspector",
            dependencies: [
                "ReduxStore", "CJSONC",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            resources: [.embedInCode("Page/inspector.html")]
        ),
        // The inspector's C face: `@c @implementation` functions over StoreInspector, checked
        // against include/reduxstore_inspector.h. It calls libreduxstore.so only through
        // include/reduxstore.h, so it does not depend on ReduxStoreC.
        .target(
            name: "ReduxStoreInspectorC",
            dependencies: ["ReduxStoreInspector", "ReduxStore", "ReduxStoreCStatus", "CReduxStoreAPI", "CJSONC"]
        ),
        // A todo store with its inspector, for a person to look at and for the browser test.
        .executableTarget(
            name: "reduxstore-inspector-demo",
            dependencies: ["ReduxStore", "ReduxStoreInspector"],
            path: "Examples/InspectorDemo"
        ),
        // Replication on PostgreSQL (postgres-nio): its own product, so that the core and
        // libreduxstore.so link no NIO.
        .target(
            name: "ReduxStorePostgres",
            dependencies: [
                "ReduxStore", "CJSONC",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Replication's C face: `@c @implementation` over the Replicator, checked against
        // include/reduxstore_postgres.h. Like the inspector's, it calls libreduxstore.so only
        // through include/reduxstore.h.
        .target(
            name: "ReduxStorePostgresC",
            dependencies: ["ReduxStorePostgres", "ReduxStore", "CReduxStoreAPI", "CJSONC"]
        ),
        // A process of the replication tests: writes to or follows a stream, then prints its state.
        .executableTarget(
            name: "reduxstore-replica-check",
            dependencies: ["ReduxStore", "ReduxStorePostgres"],
            path: "Tests/ReplicaCheck"
        ),
        .testTarget(
            name: "ReduxStorePostgresTests",
            dependencies: [
                "ReduxStorePostgres", "ReduxStore", "ReduxStoreTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "ReduxStoreInspectorTests",
            dependencies: [
                "ReduxStoreInspector", "ReduxStore", "ReduxStoreTestSupport",
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            ]
        ),
    ]
}
