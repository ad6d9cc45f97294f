import ArgumentParser
import Foundation
import ReduxStore

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

            Every command takes --json for output a script can read. Bad input ends with exit \
            status 1 and one line on standard error naming the file and the line or byte.
            """,
        subcommands: [Show.self, Diff.self, JournalSummary.self, StateAt.self])
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
            prints the first todo of the state saved in state.json. Keys are printed sorted.
            """)

    @Argument(help: "A saved state or a JSON file.")
    var file: String

    @Option(help: "A JSON Pointer (RFC 6901) into the state, such as /todos/0/title.")
    var pointer = ""

    @OptionGroup var output: OutputOptions

    func run() throws {
        try reporting {
            let document = try Inspector.readDocument(file)
            let value = try Inspector.value(at: pointer, in: document.value)
            if output.json {
                try printJSON(ShowOutput(file: file, version: document.version, pointer: pointer, value: value))
            } else {
                if let version = document.version { print(Style.dim("saved state, version \(version)")) }
                try printJSON(value, pretty: true)
            }
        }
    }

    struct ShowOutput: Encodable {
        let file: String
        let version: UInt64?
        let pointer: String
        let value: JSONValue
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
            let before = try Inspector.readDocument(from)
            let after = try Inspector.readDocument(to)
            let patch = JSONPatch.diff(from: before.value, to: after.value)
            if output.json {
                try printJSON(patch)
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
            if !summary.identifiers.isEmpty {
                print("actions per identifier")
                let width = summary.identifiers.map { $0.count.formatted().count }.max() ?? 1
                for entry in summary.identifiers {
                    let count = entry.count.formatted()
                    print("  \(String(repeating: " ", count: width - count.count))\(count)  \(entry.identifier)")
                }
            }
        }
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
            let document = try Inspector.readDocument(base)
            let progress = Progress()
            let state = try Inspector.state(at: at, from: document, journal: journal) {
                progress.show("\($0.formatted()) entries read")
            }
            progress.clear()
            let value = try Inspector.value(at: pointer, in: state)
            if output.json {
                try printJSON(Show.ShowOutput(file: journal, version: at, pointer: pointer, value: value))
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

func jsonText(_ value: some Encodable, pretty: Bool = false) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
    return String(decoding: try encoder.encode(value), as: UTF8.self)
}

func printJSON(_ value: some Encodable, pretty: Bool = false) throws {
    print(try jsonText(value, pretty: pretty))
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
