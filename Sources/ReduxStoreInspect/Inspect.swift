import ArgumentParser
import Foundation
@_spi(Bindings) import ReduxStore
import ReduxStoreInspectKit

/// `reduxstore-inspect`: saved states and journals, read from the command line. A thin layer:
/// the reading, diffing and rebuilding are the library's (`Inspector`, `JSONPatch`).
@main
struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reduxstore-inspect",
        abstract: "Look into ReduxStore saved states and journals.",
        discussion: """
            Saved states are the files Store.save(to:) and autosave write \
            ({"reduxstore":1,"version":N,"state":…}); any other JSON file is read as a plain \
            value. Journals are the JSON Lines files Store.startJournal(at:) writes, with their \
            rotated files (app.journal.1, app.journal.2, …).

            Examples:
              reduxstore-inspect show state.json --pointer /todos/0
              reduxstore-inspect diff before.json after.json
              reduxstore-inspect journal app.journal
              reduxstore-inspect state base.json app.journal --at 1200
              reduxstore-inspect serve app.journal --state base.json

            Every command takes --json for output a script can read. Bad input ends with exit \
            status 1 and one line on standard error naming the file and the line or byte.
            """,
        subcommands: [Show.self, Diff.self, JournalSummary.self, StateAt.self, Serve.self])
}

/// Options every command shares.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print JSON for scripts (compact, one document) instead of text for people.")
    var json = false
}

// MARK: - show

struct Show: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a saved state, or the part of it at a JSON Pointer.",
        discussion: """
            Example:
              reduxstore-inspect show state.json --pointer /todos/0
            prints the first todo of the state saved in state.json. Keys are printed sorted \
            by code point; keys that look alike but differ in code points (é as one code point, \
            or as e and a combining accent) are different keys.
            """)

    @Argument(help: "A saved state or a JSON file.")
    var file: String

    @Option(help: "A JSON Pointer (RFC 6901) into the state, such as /todos/0/title.")
    var pointer = ""

    @OptionGroup var output: OutputOptions

    func run() throws {
        try reporting {
            let document = try JSONDocument(contentsOf: file)
            let value = try document.value.value(atPointer: pointer)
            if output.json {
                try printJSON(Show.output(file: file, version: document.version, pointer: pointer, value: value))
            } else {
                if let version = document.version { print(Style.dim("saved state, version \(version)")) }
                try printJSON(value, pretty: true)
            }
        }
    }

    /// What `--json` prints: `{"file":…,"pointer":…,"value":…,"version":…}` (no `version` for
    /// a plain JSON file).
    static func output(file: String, version: UInt64?, pointer: String, value: JSONValue) -> JSONValue {
        var members: [JSONKey: JSONValue] = ["file": .string(file), "pointer": .string(pointer), "value": value]
        if let version { members["version"] = .uint(version) }
        return .object(members)
    }
}

// MARK: - diff

struct Diff: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the RFC 6902 patch that turns one state into another.",
        discussion: """
            Example:
              reduxstore-inspect diff before.json after.json
            prints one operation a line (replace /todos/3/done true); with --json, the patch \
            as a JSON array that rdx_json_patch and JSONPatch.apply take.
            """)

    @Argument(help: "The state before: a saved state or a JSON file.")
    var from: String

    @Argument(help: "The state after: a saved state or a JSON file.")
    var to: String

    @OptionGroup var output: OutputOptions

    func run() throws {
        try reporting {
            let before = try JSONDocument(contentsOf: from)
            let after = try JSONDocument(contentsOf: to)
            let patch = JSONPatch.diff(from: before.value, to: after.value)
            if output.json {
                try printJSON(JSONValue.array(patch.map(jsonValue(of:))))
                return
            }
            if patch.isEmpty { print(Style.dim("no difference")) }
            for operation in patch {
                let name: String
                switch operation.op {
                case .add: name = Style.green("add    ")
                case .remove: name = Style.red("remove ")
                case .replace: name = Style.yellow("replace")
                }
                let value = try operation.value.map { try " " + jsonText($0) } ?? ""
                print("\(name) \(operation.path.isEmpty ? "\"\"" : operation.path)\(value)")
            }
        }
    }
}

// MARK: - journal

struct JournalSummary: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "journal",
        abstract: "Summarise a journal: entries, versions, time span, actions per identifier.",
        discussion: """
            Example:
              reduxstore-inspect journal app.journal
            reads app.journal's rotated files too (app.journal.2, app.journal.1, then \
            app.journal). A gap, a version going back or a torn last line is an error naming \
            the file and line.
            """)

    @Argument(help: "The journal file.")
    var file: String

    @Flag(help: "Group the actions by where they were dispatched from (\"source\": File.swift:42), each with its actions per identifier.")
    var bySource = false

    @OptionGroup var output: OutputOptions

    func run() throws {
        try reporting {
            let progress = Progress()
            let summary = try Inspector.summarize(journal: file) { progress.show("\($0.formatted()) entries read") }
            progress.clear()
            if output.json {
                try printJSON(summary)
                return
            }
            let names = summary.files.map { ($0 as NSString).lastPathComponent }
            print("\(Style.bold(file)) (\(names.count == 1 ? "1 file" : "\(names.count) files: \(names.joined(separator: ", "))"))")
            print("entries          \(summary.entries.formatted())")
            if let first = summary.firstVersion, let last = summary.lastVersion {
                print("versions         \(first.formatted()) to \(last.formatted())")
            }
            if let first = summary.firstTime, let last = summary.lastTime {
                let span = summary.seconds.map { " (\(String(format: "%.3f", $0)) s)" } ?? ""
                print("time             \(first) to \(last)\(span)")
            }
            print("batches          \(summary.batches.formatted()) (\(summary.entriesInBatches.formatted()) entries)")
            print("not replayable   \(summary.notReplayable.formatted())")
            print("with a patch     \(summary.withPatch.formatted())")
            // What the journal could not write says so in its line; the summary names the first.
            if let first = summary.firstPayloadLeftOut {
                print("payload left out \(summary.payloadLeftOut.formatted()) (first: \(StoreError.printable(first)))")
            }
            if let first = summary.firstPatchLeftOut {
                print("patch left out   \(summary.patchLeftOut.formatted()) (first: \(StoreError.printable(first)))")
            }
            if !summary.identifiers.isEmpty {
                print("actions per identifier")
                printCounts(summary.identifiers.map { ($0.count, $0.identifier) }, indent: "  ")
            }
            if !summary.sources.isEmpty {
                print("actions per source" + (summary.withoutSource > 0
                    ? " (\(summary.withoutSource.formatted()) recorded without one)" : ""))
                if bySource {
                    for source in summary.sources {
                        print("  \(source.count.formatted())  \(StoreError.printable(source.source))")
                        printCounts(source.identifiers.map { ($0.count, $0.identifier) }, indent: "      ")
                    }
                } else {
                    printCounts(summary.sources.map { ($0.count, $0.source) }, indent: "  ")
                }
            } else if bySource {
                print("actions per source: none recorded (the journal's lines carry no \"source\")")
            }
        }
    }
}

/// Prints `count  name` lines, the counts aligned right.
private func printCounts(_ rows: [(count: Int, name: String)], indent: String) {
    let width = rows.map { $0.count.formatted().count }.max() ?? 1
    for row in rows {
        let count = row.count.formatted()
        print("\(indent)\(String(repeating: " ", count: width - count.count))\(count)  \(StoreError.printable(row.name))")
    }
}

// MARK: - state

struct StateAt: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "state",
        abstract: "Rebuild the state at a version from a base state and a journal with patches.",
        discussion: """
            Example:
              reduxstore-inspect state base.json app.journal --at 1200
              reduxstore-inspect serve app.journal --state base.json
            applies the patches of app.journal's entries to base.json, up to version 1200. The \
            journal must have been recorded with JournalOptions.recordPatches (C: \
            rdx_store_start_journal(store, path, true)). The base is the state before the \
            journal's first entry, or a saved state at a version the journal continues.
            """)

    @Argument(help: "The state the journal starts from: a saved state or a JSON file.")
    var base: String

    @Argument(help: "The journal file, recorded with patches.")
    var journal: String

    @Option(help: "The version to rebuild.")
    var at: UInt64

    @Option(help: "A JSON Pointer (RFC 6901) into the rebuilt state.")
    var pointer = ""

    @OptionGroup var output: OutputOptions

    func run() throws {
        try reporting {
            let document = try JSONDocument(contentsOf: base)
            let progress = Progress()
            let state = try Inspector.state(at: at, from: document, journal: journal) {
                progress.show("\($0.formatted()) entries read")
            }
            progress.clear()
            let value = try state.value(atPointer: pointer)
            if output.json {
                try printJSON(Show.output(file: journal, version: at, pointer: pointer, value: value))
            } else {
                print(Style.dim("state at version \(at)"))
                try printJSON(value, pretty: true)
            }
        }
    }
}

// MARK: - Output

/// Runs `body`; a `StoreError` (bad input) becomes one line on standard error and exit status 1.
func reporting(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let error as StoreError {
        // Control characters of a quoted key or pointer escaped: the line stays one line, and
        // the terminal's.
        let message = StoreError.printable(error.message)
        FileHandle.standardError.write(Data("reduxstore-inspect: \(message)\n".utf8))
        throw ExitCode(1)
    }
}

/// `value` as JSON text, keys sorted. Foundation's `JSONEncoder` sorts keys too, but keeps them
/// in a dictionary of Swift strings, which merges keys that differ only in code points (`"é"`
/// and `"e\u{301}"`): JSON values are printed by ``JSONText``, which keeps every key.
func jsonText(_ value: some Encodable, pretty: Bool = false) throws -> String {
    if let value = value as? JSONValue { return try JSONText.text(of: value, pretty: pretty) }
    let encoder = JSONEncoder()
    encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
    return String(decoding: try encoder.encode(value), as: UTF8.self)
}

func printJSON(_ value: some Encodable, pretty: Bool = false) throws {
    print(try jsonText(value, pretty: pretty))
}

/// A patch operation as the JSON value RFC 6902 gives it: `{"op":…,"path":…,"value":…}`.
func jsonValue(of operation: JSONPatch.Operation) -> JSONValue {
    var members: [JSONKey: JSONValue] = [
        "op": .string(operation.op.rawValue), "path": .string(operation.path),
    ]
    if let value = operation.value { members["value"] = value }
    return .object(members)
}

/// Prints ``JSONValue``s as Foundation's `JSONEncoder` does with `.sortedKeys` and
/// `.withoutEscapingSlashes` (and `.prettyPrinted` when asked: two spaces, `"key" : value`), but
/// with every key of an object, sorted by code point (``JSONKey``'s order), and each number of
/// its own kind (a whole double as `3.0`).
enum JSONText {
    static func text(of value: JSONValue, pretty: Bool) throws -> String {
        var out = ""
        try write(value, pretty: pretty, indent: 0, into: &out)
        return out
    }

    private static func write(_ value: JSONValue, pretty: Bool, indent: Int, into out: inout String) throws {
        switch value {
        case .null: out += "null"
        case .bool(let flag): out += flag ? "true" : "false"
        case .int(let number): out += String(number)
        case .uint(let number): out += String(number)
        case .double(let number):
            guard number.isFinite else {
                throw StoreError(.encode, "\(number) is not a JSON number")
            }
            // As JSONValue's description and the journal write it: a whole double keeps its kind
            // (3.0, -0.0, 1e+16), so that what is printed reads back as the same value.
            out += number.description
        case .string(let text): writeString(text, into: &out)
        case .array(let elements):
            if elements.isEmpty { out += "[]"; return }
            out += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { out += "," }
                if pretty { newline(indent + 1, &out) }
                try write(element, pretty: pretty, indent: indent + 1, into: &out)
            }
            if pretty { newline(indent, &out) }
            out += "]"
        case .object(let members):
            if members.isEmpty { out += "{}"; return }
            out += "{"
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { out += "," }
                if pretty { newline(indent + 1, &out) }
                writeString(key.string, into: &out)
                out += pretty ? " : " : ":"
                try write(members[key]!, pretty: pretty, indent: indent + 1, into: &out)
            }
            if pretty { newline(indent, &out) }
            out += "}"
        }
    }

    private static func newline(_ indent: Int, _ out: inout String) {
        out += "\n" + String(repeating: "  ", count: indent)
    }

    /// A JSON string: `"` and `\\` escaped, control characters as `\n`, `\t`… or `\u00XX`, the
    /// rest as it is (code point by code point: nothing normalized).
    private static func writeString(_ text: String, into out: inout String) {
        var escaped = String.UnicodeScalarView()
        escaped.append("\"")
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": escaped.append(contentsOf: #"\""#.unicodeScalars)
            case "\\": escaped.append(contentsOf: #"\\"#.unicodeScalars)
            case "\n": escaped.append(contentsOf: #"\n"#.unicodeScalars)
            case "\r": escaped.append(contentsOf: #"\r"#.unicodeScalars)
            case "\t": escaped.append(contentsOf: #"\t"#.unicodeScalars)
            case "\u{8}": escaped.append(contentsOf: #"\b"#.unicodeScalars)
            case "\u{C}": escaped.append(contentsOf: #"\f"#.unicodeScalars)
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                escaped.append(contentsOf: ("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).unicodeScalars)
            default: escaped.append(scalar)
            }
        }
        escaped.append("\"")
        out += String(escaped)
    }
}

/// Colours and emphasis, only on a terminal and without `NO_COLOR` (https://no-color.org).
enum Style {
    static let enabled = isatty(STDOUT_FILENO) == 1 && ProcessInfo.processInfo.environment["NO_COLOR"] == nil
    static func paint(_ text: String, _ code: String) -> String {
        enabled ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }
    static func green(_ text: String) -> String { paint(text, "32") }
    static func red(_ text: String) -> String { paint(text, "31") }
    static func yellow(_ text: String) -> String { paint(text, "33") }
    static func bold(_ text: String) -> String { paint(text, "1") }
    static func dim(_ text: String) -> String { paint(text, "2") }
}

/// A progress line on standard error, only when it is a terminal.
final class Progress {
    private let enabled = isatty(STDERR_FILENO) == 1
    private var shown = false

    func show(_ text: String) {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K\(text)".utf8))
        shown = true
    }

    func clear() {
        guard shown else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
        shown = false
    }
}
