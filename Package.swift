// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "ReduxStore",
    products: [
        // The Swift library.
        .library(name: "ReduxStore", targets: ["ReduxStore"]),
        // libreduxstore.so: the C interface of include/reduxstore.h, for C programs.
        .library(name: "reduxstore", type: .dynamic, targets: ["ReduxStoreC"]),
    ],
    targets: [
        // json-c, found through pkg-config; Debian's libjson-c-dev provides it.
        .systemLibrary(
            name: "CJSONC",
            pkgConfig: "json-c",
            providers: [.apt(["libjson-c-dev"])]
        ),
        // The Swift core: store, dispatch, observers, snapshots, the Codable ⇄ json-c bridge,
        // persistence. It knows nothing of the C interface.
        .target(
            name: "ReduxStore",
            dependencies: ["CJSONC"]
        ),
        // The public C header, include/reduxstore.h (its public headers folder is a link to it),
        // so that the C face is checked against it at compile time.
        .target(
            name: "CReduxStoreAPI",
            dependencies: ["CJSONC"]
        ),
        // The C face: `@c @implementation` functions, a thin layer over the Swift core.
        .target(
            name: "ReduxStoreC",
            dependencies: ["ReduxStore", "CReduxStoreAPI", "CJSONC"]
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
        // Fakes and fixtures shared by the test suites.
        .target(
            name: "ReduxStoreTestSupport",
            dependencies: ["ReduxStore"],
            path: "Tests/ReduxStoreTestSupport"
        ),
        .testTarget(
            name: "ReduxStoreTests",
            dependencies: ["ReduxStore", "ReduxStoreTestSupport", "CJSONC"]
        ),
        .testTarget(
            name: "ReduxStoreCTests",
            dependencies: ["ReduxStoreC", "ReduxStore", "ReduxStoreTestSupport", "CReduxStoreAPI", "CJSONC"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
