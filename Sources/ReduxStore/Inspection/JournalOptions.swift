internal import CJSONC
#if canImport(Glibc)
import Glibc
#endif

/// How a store's journal records (``Store/startJournal(at:options:)``).
public struct JournalOptions: Sendable {
    /// What a dispatch does when the journal's queue is full: ``queueCapacity`` entries wait for
    /// the writer.
    public enum Overflow: Sendable, Equatable {
        /// The dispatching thread waits (after releasing the store's lock) until the writer has
        /// room: nothing is lost, and dispatch slows to the disk's pace.
        case block
        /// The oldest entry waiting is dropped and counted (``Store/journalDroppedEntries``):
        /// dispatch never waits, and the journal has a gap, which replay reports.
        case drop
    }

    /// Whether each entry also carries the action's RFC 6902 patch (the change it made to the
    /// state), so the state at any version can be rebuilt without the reducers. Costs a
    /// snapshot and a diff per action. `false` by default.
    public var recordPatches = false
    /// The size in bytes a journal file does not pass: before a line that would take it past this
    /// size (its page padding counted), the file is rotated: `journal` becomes `journal.1`,
    /// `journal.1` becomes `journal.2`, and so on. A file is larger only when it holds a single
    /// line that is. 64 MiB by default.
    public var maximumFileSize = 64 << 20
    /// How many rotated files are kept besides the current one; older ones are deleted. 8 by
    /// default.
    public var maximumFiles = 8
    /// How many entries may wait for the writer before ``overflow`` applies. 65,536 by default.
    public var queueCapacity = 65_536
    /// What a full queue does. ``Overflow/block`` by default.
    public var overflow = Overflow.block

    public init() {}
}

/// A dispatcher's wait for a journal that blocks and is more than its capacity behind, run after
/// it released the store's lock (``ActionLog/takeOwedWait()``).
struct JournalWait {
    let journal: Journal
    let version: UInt64
    func run() { journal.waitForRoom(through: version) }
}

/// An action that can say what to record for it, beyond what the journal knows how to encode
/// (``JSONAction``'s payload, an `Encodable` action's properties): an action holding a json-c
/// payload.
///
/// Package: the inspector tells a typed action from one that carries a tree by it.
package protocol JournalRecordable: Action {
    /// The payload as a json-c tree (borrowed from the action), or NULL for none.
    var journalPayload: OpaquePointer? { get }
}
