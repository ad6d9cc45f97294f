import ReduxStore
#if canImport(Glibc)
import Glibc
#endif

/// What `reduxstore-inspect` does with journals, apart from its command line: summarising a
/// journal, rebuilding a state from a journal's patches. A library of its own on the core's
/// public journal reader (``JournalReader``) and documents (``JSONDocument``), so that the core
/// does not carry the tool's summaries; the tool, its tests and its fuzzer link it. Every error
/// is a ``StoreError`` whose message names the file and, where there is one, the line
/// (`app.journal:17: …`).
package enum Inspector {
    // MARK: Journals

    /// What a journal holds, in brief.
    package struct JournalSummary: Codable, Sendable, Equatable {
        /// The journal's files read, oldest first (rotated files, then the current one).
        package var files: [String] = []
        package var entries = 0
        package var firstVersion: UInt64?
        package var lastVersion: UInt64?
        package var firstTime: String?
        package var lastTime: String?
        /// From the first entry's time to the last's, in seconds.
        package var seconds: Double?
        /// Entries per action identifier, most frequent first (ties by identifier).
        package var identifiers: [IdentifierCount] = []
        /// Batches (entries sharing a `"batch"`) and the entries in them.
        package var batches = 0
        package var entriesInBatches = 0
        /// Entries that replay cannot apply (`"replayable":false`: neither a JSONAction nor an
        /// Encodable action; a restore).
        package var notReplayable = 0
        /// Entries that carry a patch (the journal was recorded with `recordPatches`).
        package var withPatch = 0
        /// Entries whose payload the journal could not write (`"payloadError"`), and the first
        /// one's place and reason (`app.journal:17: …`).
        package var payloadLeftOut = 0
        package var firstPayloadLeftOut: String?
        /// Entries whose patch was asked for and could not be made or written (`"patchError"`),
        /// and the first one's place and reason.
        package var patchLeftOut = 0
        package var firstPatchLeftOut: String?

        /// Entries per place they were dispatched from (`"source"`), most frequent first (ties
        /// by source), each with its entries per identifier; entries recorded without a source
        /// are not counted here.
        package var sources: [SourceCount] = []
        /// Entries recorded without a source.
        package var withoutSource = 0

        package struct IdentifierCount: Codable, Sendable, Equatable {
            package var identifier: String
            package var count: Int
        }

        package struct SourceCount: Codable, Sendable, Equatable {
            package var source: String
            package var count: Int
            package var identifiers: [IdentifierCount]
        }
    }

    /// Summarises the journal at `path` (with its rotated files). `progress` is called every
    /// `progressEvery` entries with the number read so far.
    package static func summarize(
        journal path: String, progressEvery: Int = 100_000, progress: (Int) -> Void = { _ in }
    ) throws(StoreError) -> JournalSummary {
        var summary = JournalSummary()
        summary.files = JournalReader.files(of: path)
        // By code points: identifiers that are equal Swift strings with other code points are
        // other actions.
        var counts: [JSONKey: Int] = [:]
        var lastBatch: UInt64?
        var bySource: [JSONKey: [JSONKey: Int]] = [:]
        try JournalReader.read(path) { (line) throws(StoreError) -> Bool in
            summary.entries += 1
            if summary.firstVersion == nil {
                summary.firstVersion = line.version
                summary.firstTime = line.time
            }
            summary.lastVersion = line.version
            summary.lastTime = line.time
            counts[JSONKey(line.identifier), default: 0] += 1
            if let source = line.source {
                bySource[JSONKey(source), default: [:]][JSONKey(line.identifier), default: 0] += 1
            } else {
                summary.withoutSource += 1
            }
            if let batch = line.batch {
                summary.entriesInBatches += 1
                if batch != lastBatch { summary.batches += 1 }
            }
            lastBatch = line.batch
            if !line.isReplayable { summary.notReplayable += 1 }
            if line.hasPatch { summary.withPatch += 1 }
            if let reason = line.payloadError {
                summary.payloadLeftOut += 1
                if summary.firstPayloadLeftOut == nil { summary.firstPayloadLeftOut = "\(line.place): \(reason)" }
            }
            if let reason = line.patchError {
                summary.patchLeftOut += 1
                if summary.firstPatchLeftOut == nil { summary.firstPatchLeftOut = "\(line.place): \(reason)" }
            }
            if summary.entries % progressEvery == 0 { progress(summary.entries) }
            return true
        }
        summary.identifiers = ranked(counts)
        summary.sources = bySource
            .map { source, counts in
                JournalSummary.SourceCount(
                    source: source.string, count: counts.values.reduce(0, +), identifiers: ranked(counts))
            }
            .sorted { $0.count != $1.count ? $0.count > $1.count : JSONKey($0.source) < JSONKey($1.source) }
        if let first = summary.firstTime.flatMap(seconds(of:)), let last = summary.lastTime.flatMap(seconds(of:)) {
            summary.seconds = last - first
        }
        return summary
    }

    /// `counts` as identifier counts, most frequent first, ties by identifier (code points).
    private static func ranked(_ counts: [JSONKey: Int]) -> [JournalSummary.IdentifierCount] {
        counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
            .map { JournalSummary.IdentifierCount(identifier: $0.key.string, count: $0.value) }
    }

    /// The state at `version`, rebuilt from `base` (the state before the journal's first
    /// entry, or a saved state at a version the journal continues) by applying the patches of
    /// the journal's entries in order; the journal must have been recorded with
    /// ``JournalOptions/recordPatches``.
    package static func state(
        at version: UInt64, from base: JSONDocument, journal path: String,
        progressEvery: Int = 100_000, progress: (Int) -> Void = { _ in }
    ) throws(StoreError) -> JSONValue {
        var document = base.value
        var current = base.version
        var first: UInt64?
        var last: UInt64?
        var read = 0
        try JournalReader.read(path) { (line) throws(StoreError) -> Bool in
            read += 1
            if read % progressEvery == 0 { progress(read) }
            if first == nil { first = line.version }
            last = line.version
            // A plain JSON base is the state before the journal's first entry (the reader
            // checked that versions start at 1).
            let at = current ?? (line.version - 1)
            current = at
            if at >= version { return false }
            if line.version <= at { return true }  // before a saved base's version
            if line.version != at + 1 {
                throw StoreError(
                    .corrupt, "\(line.place): version \(line.version) does not follow the base state's version \(at)")
            }
            guard let operations = try line.patch() else {
                if let reason = line.patchError {
                    throw StoreError(.corrupt, "\(line.place): the patch of version \(line.version) was not recorded: \(reason)")
                }
                throw StoreError(.corrupt, "\(line.place): no \"patch\" (record the journal with recordPatches)")
            }
            do throws(StoreError) {
                try checkNesting(operations)
                document = try JSONPatch.apply(operations, to: document)
            } catch {
                throw StoreError(error.kind, "\(line.place): \(error.message)")
            }
            current = line.version
            return line.version < version
        }
        guard current == version else {
            // The base's version: a saved state's, or the one before the journal's first entry.
            if let start = base.version ?? first.map({ $0 - 1 }), version < start {
                throw StoreError(.invalidArgument, "\(path): version \(version) is before the base state's version \(start)")
            }
            let range = first.map { "versions \($0) to \(last ?? $0)" } ?? "no entries"
            throw StoreError(.invalidArgument, "\(path): version \(version) is not in the journal (\(range) after the base)")
        }
        return document
    }

    /// Refuses a patch that would make the state nest deeper than
    /// ``StoreLimits/maximumNestingDepth`` containers, the limit a state is read with: an
    /// operation's value sits inside as many containers as its path has tokens (each line is
    /// read within the limit, but patches can build a state deeper, line after line, than any
    /// file holds and than the walks over it have stack for).
    package static func checkNesting(_ operations: [JSONPatch.Operation]) throws(StoreError) {
        for (index, operation) in operations.enumerated() {
            guard let value = operation.value else { continue }
            // An unescaped "/" starts each token ("~1" stands for one inside a key).
            let depth = operation.path.utf8.reduce(0) { $1 == 0x2F ? $0 + 1 : $0 } + nesting(of: value)
            if depth > StoreLimits.maximumNestingDepth {
                throw StoreError(
                    .limit, codingPath: "patch[\(index)]",
                    detail: "path \"\(operation.path)\": the state would nest \(depth) containers deep, "
                        + "more than the limit of \(StoreLimits.maximumNestingDepth)")
            }
        }
    }

    /// The containers nested in `value`: 0 for a scalar, 1 for `[1]`, 2 for `[[]]`. (A decoded
    /// value nests within the limit, so the recursion is shallow.)
    private static func nesting(of value: JSONValue) -> Int {
        switch value {
        case .array(let elements): 1 + (elements.lazy.map(nesting(of:)).max() ?? 0)
        case .object(let members): 1 + (members.values.lazy.map(nesting(of:)).max() ?? 0)
        default: 0
        }
    }

    /// Seconds since 1970 of a journal time, `2026-11-22T10:00:00.000Z`; nil for other text.
    package static func seconds(of time: String) -> Double? {
        let bytes = Array(time.utf8)
        guard bytes.count == 24, bytes[4] == 0x2D, bytes[10] == 0x54, bytes[19] == 0x2E, bytes[23] == 0x5A else {
            return nil
        }
        func number(_ range: Range<Int>) -> Int32? {
            var value: Int32 = 0
            for byte in bytes[range] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int32(byte - 0x30)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              let milliseconds = number(20..<23)
        else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        return Double(timegm(&parts)) + Double(milliseconds) / 1000
    }
}
