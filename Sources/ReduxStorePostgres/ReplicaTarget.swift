internal import CJSONC
import ReduxStore
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What a ``Replicator`` applies a stream to: a Swift `Store` (``SwiftReplicaTarget``), or a C
/// store of libreduxstore.so (the C library's target). The replicator calls it from its actor,
/// one action at a time, in the stream's order.
package protocol ReplicaTarget: Sendable {
    /// The stream's version the replica has applied.
    var version: UInt64 { get }
    /// Applies `row`'s action as the next version; throws, applying nothing, when its payload
    /// does not decode into what the program accepts for its identifier.
    func apply(_ row: StreamRow) throws(StoreError)
    /// Throws what ``apply(_:)`` would throw for an action of `identifier` with `payload`
    /// (JSON text), applying nothing: a dispatch is checked so before it is sent.
    func check(identifier: String, payload: String) throws(StoreError)
    /// The state as canonical JSON text (compact, object keys sorted by code point): what
    /// snapshots store and, hashed, compare. Equal states of a C and a Swift program of one JSON
    /// shape give the same text.
    func canonicalState() throws(StoreError) -> String
}

/// A Swift `Store<State>` as a replica: payloads decode through the program's `ActionTypes`,
/// and pass the store's gate.
struct SwiftReplicaTarget<State: Codable & Sendable>: ReplicaTarget {
    let store: Store<State>
    let gate: ReplicaGate
    let actions: ActionTypes

    var version: UInt64 { store.version }

    func apply(_ row: StreamRow) throws(StoreError) {
        gate.apply(try decode(identifier: row.identifier, payload: row.payload), to: store, source: DispatchSite(stored: row.source))
    }

    func check(identifier: String, payload: String) throws(StoreError) {
        _ = try decode(identifier: identifier, payload: payload)
    }

    func canonicalState() throws(StoreError) -> String {
        try JSONValue(canonicallyEncoding: store.snapshot()).description
    }

    /// The action a stored identifier and payload stand for.
    private func decode(identifier: String, payload: String) throws(StoreError) -> any Action {
        let tree = try JSONCText.parse(payload)
        defer { json_object_put(tree) }
        return try actions.action(identifier: identifier, payload: tree)
    }
}

/// Lets through the replica's store only the actions the replicator applies: anything else
/// dispatched to the store (by a program, a reducer or an observer) would give the local store
/// a version the stream does not have.
final class ReplicaGate: Sendable {
    /// The thread allowed to pass one action, or 0.
    private let permitted = Atomic<UInt>(0)
    let stream: String

    init(stream: String) { self.stream = stream }

    func middleware<State: Codable & Sendable>() -> Middleware<State> {
        { [self] _, action, next in
            let me = UInt(bitPattern: Int(bitPattern: pthread_self()))
            guard permitted.compareExchange(expected: me, desired: 0, ordering: .acquiringAndReleasing).exchanged else {
                fatalError(
                    "ReduxStorePostgres: action \"\(action.identifier)\" was dispatched to the store of a replica of stream \"\(stream)\"; the stream decides a replica's versions: dispatch through ReplicatedStore.dispatch(_:), not store.dispatchAction, and not from a reducer or observer of the replica")
            }
            next(action)
        }
    }

    /// Applies `action` to `store`, through the gate.
    func apply<State>(_ action: any Action, to store: Store<State>, source: DispatchSite) {
        permitted.store(UInt(bitPattern: Int(bitPattern: pthread_self())), ordering: .releasing)
        store.dispatch(erased: action, source: source)
        permitted.store(0, ordering: .releasing)
    }
}

