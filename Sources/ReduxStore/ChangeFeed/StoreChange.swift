public import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One applied action, as ``Store/changes(includingPatches:bufferingNewest:)`` tells it: the
/// version it made, what it was, what it changed and where it was dispatched from.
///
/// ```swift
/// for await change in store.changes(includingPatches: true) {
///     print(change.version, change.identifier, change.source?.description ?? "-", change.patch ?? [])
/// }
/// ```
public struct StoreChange: Sendable {
    /// The version this action made.
    public let version: UInt64
    /// The action's identifier.
    public let identifier: String
    /// The action's payload as JSON: a ``JSONAction``'s payload, an `Encodable` action's
    /// properties, a json-c payload an action holds. `nil` when the action carries none, is not `Encodable`,
    /// or its payload is not JSON (see ``payloadError``).
    public let payload: JSONValue?
    /// Why ``payload`` is `nil` for an action whose payload could not be made JSON (a NaN, an
    /// `encode(to:)` that throws); `nil` otherwise.
    public let payloadError: String?
    /// The action's RFC 6902 patch from the state before it to the state after it, when the
    /// consumer asked for patches and the state is JSON; `nil` otherwise.
    public let patch: [JSONPatch.Operation]?
    /// Where the action was dispatched from, when known (``SourceLocation``).
    public let source: SourceLocation?
    /// When it was applied, to within the kernel's clock tick (a few milliseconds).
    public let time: Date
    /// The versions of the batch (``Store/dispatchActions(_:file:line:)``) this action was
    /// applied in, when it was applied in one of more than one action.
    public let batch: ClosedRange<UInt64>?

    /// The public form of `record`; `includingPatch`: whether the consumer asked for patches.
    init(_ record: ChangeRecord, includingPatch: Bool) {
        version = record.version
        identifier = record.action.identifier
        let payload = ChangeRecord.payloadValue(of: record.action)
        switch payload {
        case .success(let value):
            self.payload = value
            payloadError = nil
        case .failure(let error):
            self.payload = nil
            payloadError = error.message
        }
        patch = includingPatch ? record.patch : nil
        source = record.source.location
        time = Date(
            timeIntervalSince1970: Double(record.time.tv_sec) + Double(record.time.tv_nsec) / 1_000_000_000)
        batch = record.batch
    }
}

/// One applied action as a consumer of the change feed reads it: made from the action log's
/// ring (``ActionLog``), where the apply transaction recorded it once, for the journal, the
/// change listeners, ``Store/changes(includingPatches:bufferingNewest:)`` and the live
/// inspectors. Only the log makes one, so every record owns what it holds.
///
/// Package: the inspector reads records from the action log; replication and bindings make a
/// payload of an action with ``payloadValue(of:)``; bindings' change listeners are handed records.
@usableFromInline
package struct ChangeRecord: @unchecked Sendable {
    // @unchecked: `action` is Sendable and owns what it holds (a borrowed action was copied for
    // the record, ``ActionKeeper``); `source` points at bytes that live as long as the program.
    package let version: UInt64
    /// The action, owning what it holds.
    package let action: any Action
    /// When the action was applied, to within the kernel's clock tick (`CLOCK_REALTIME_COARSE`:
    /// a few milliseconds).
    @inlinable package var time: timespec {
        timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
    }
    /// ``time`` as nanoseconds since 1970: one word, made from the clock's two with arithmetic
    /// (copying the `timespec` the clock wrote as a whole stalled the store forwarding of every
    /// record into the live inspector's log).
    @usableFromInline let nanoseconds: Int64
    /// The versions of the batch this action belongs to, if it was applied in one of more than
    /// one action.
    @inlinable package var batch: ClosedRange<UInt64>? { batchFirst == 0 ? nil : batchFirst...batchLast }
    /// ``batch``'s bounds, 0 for none (versions start at 1): two words rather than an optional
    /// range, whose tag byte made each copy of a record into the live inspector's log a store
    /// forwarding stall.
    @usableFromInline let batchFirst: UInt64
    @usableFromInline let batchLast: UInt64

    /// Made by the action log only (``ActionLog``), whose record owns what it holds.
    @inline(__always)
    init(
        version: UInt64, action: consuming any Action, nanoseconds: Int64, batch: ClosedRange<UInt64>?,
        patch: [JSONPatch.Operation]?, patchError: String?, source: DispatchSite
    ) {
        self.version = version
        self.action = action
        self.nanoseconds = nanoseconds
        batchFirst = batch?.lowerBound ?? 0
        batchLast = batch?.upperBound ?? 0
        self.patch = patch
        self.patchError = patchError
        assert(!source.borrowed, "ReduxStore: the action log keeps every source it records")
        self.source = source
    }
    /// The action's patch, when a consumer asked for patches and it could be made.
    package let patch: [JSONPatch.Operation]?
    /// Why the patch could not be made, when a consumer asked for it.
    let patchError: String?
    /// Where the action was dispatched from; its bytes live as long as the program (the action
    /// log kept it when it recorded the action: ``DispatchSite/kept()``).
    package let source: DispatchSite

    /// The public ``SourceLocation`` of ``source``.
    package var sourceLocation: SourceLocation? { source.location }

    /// `action`'s payload as JSON (see ``StoreChange/payload``): `nil` for none, a failure
    /// naming why it cannot be made JSON.
    package static func payloadValue(of action: any Action) -> Result<JSONValue?, StoreError> {
        do throws(StoreError) {
            let payload: JSONValue?
            if let action = action as? JSONAction {
                payload = action.payload
            } else if let action = action as? any JournalRecordable {
                guard let tree = action.journalPayload else { return .success(nil) }
                payload = try JSONCDecoder().decode(JSONValue.self, from: tree)
            } else if let action = action as? any Encodable {
                payload = try encodeToJSON(action)
            } else {
                payload = nil
            }
            if let payload, let place = nonFiniteNumber(in: payload) {
                throw StoreError(.encode, "the payload holds a number JSON cannot hold (NaN or an infinity) at \"\(place)\"")
            }
            return .success(payload)
        } catch {
            return .failure(error)
        }
    }

    /// The JSON Pointer of a NaN or an infinity in `value`, if it holds one. Loops over the
    /// containers, not a recursion (a payload built in Swift may nest deeper than a stack
    /// allows); the pointers are made only for a payload that holds one.
    private static func nonFiniteNumber(in value: JSONValue) -> String? {
        func find(_ value: JSONValue, naming: Bool) -> String? {
            var pending: [(value: JSONValue, pointer: String)] = [(value, "")]
            while let (value, pointer) = pending.popLast() {
                switch value {
                case .double(let number) where !number.isFinite:
                    return pointer
                case .array(let elements):
                    for (index, element) in elements.enumerated() {
                        pending.append((element, naming ? pointer + "/\(index)" : ""))
                    }
                case .object(let members):
                    for (key, member) in members {
                        pending.append((member, naming ? pointer + "/" + JSONPointerPath.escape(key.string) : ""))
                    }
                default:
                    break
                }
            }
            return nil
        }
        guard find(value, naming: false) != nil else { return nil }
        return find(value, naming: true)
    }

    private static func encodeToJSON<E: Encodable>(_ value: E) throws(StoreError) -> JSONValue {
        let tape = SnapshotTape()
        try SnapshotEncoder().encode(value, into: tape)
        return try SnapshotDecoder.decode(JSONValue.self, from: tape)
    }
}
