// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "ReduxStore",
    products: [
        // The Swift library.
        .library(name: "ReduxStore", targets: ["ReduxStore"]),
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
        // The Swift demo the README's Quick start runs.
        .executableTarget(
            name: "ReduxStoreDemo",
            dependencies: ["ReduxStore"],
            path: "Examples/SwiftDemo"
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
    ],
    swiftLanguageModes: [.v6]
)
