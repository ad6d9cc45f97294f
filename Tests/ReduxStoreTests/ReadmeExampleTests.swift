import ReduxStore
import ReduxStoreTestSupport
import Testing

// The README's Swift example, as written there (inside a test function, so its types are local),
// and a check that every Swift block of the README is in this file line for line: change the
// README's example and this suite fails until the copy here is changed too. (The README's C
// example is compiled and run by Tests/CTests/run.sh, straight from the README.)

@Suite("The README's Swift example")
struct ReadmeExampleTests {
    @Test("the example, as written in the README, does what its comments say")
    func example() {
        final class AppState: Codable {
            var todos: [String] = []
            var done: Set<Int> = []
        }

        enum TodoAction: Action {
            case add(String)
            case toggle(Int)
            var identifier: String {
                switch self {
                case .add: "todo.add"
                case .toggle: "todo.toggle"
                }
            }
        }

        // Each reducer names the actions it is for; the store finds them by the action's type and
        // hands the action over typed: no cast.
        var reducers = Reducers<AppState>()
        reducers.on(TodoAction.self) { state, action in
            switch action {
            case .add(let title): state.todos.append(title)
            case .toggle(let index):
                if state.done.remove(index) == nil { state.done.insert(index) }
            }
        }

        let store = Store(reducers: reducers, state: AppState())

        // Synchronous observer: runs on the dispatching thread, once per action, in order.
        let token = store.addObserver { note in
            print("\(note.name) version \(note.version) after \(note.actionIdentifier)")
        }

        store.dispatchAction(TodoAction.add("Write the header"))    // applied before it returns
        store.enqueueAction(TodoAction.toggle(0))                   // returns at once
        store.flush()                                               // waits for the enqueued ones

        let copy = store.currentState()     // a deep copy: changing it never reaches the store
        copy.todos.append("mine alone")
        print(store.currentState().todos, store.version)    // ["Write the header"] 2
        store.removeObserver(token)         // once it returns, the observer is never called again

        #expect(store.currentState().todos == ["Write the header"])
        #expect(store.currentState().done == [0])
        #expect(store.version == 2)
        #expect(copy.todos == ["Write the header", "mine alone"])
        #expect(store.removeObserver(token) == false)
    }

    @Test("every Swift block of the README is in this file, line for line")
    func readmeBlocksAreHere() throws {
        let root = String(#filePath.split(separator: "/", omittingEmptySubsequences: false)
            .dropLast(3).joined(separator: "/"))
        let readme = try #require(readText(root + "/README.md"), "README.md not found under \(root)")
        let here = try #require(readText(#filePath))
        // The live inspector's block is the inspector suite's (ReduxStoreInspectorTests), the
        // replication's two the replication suite's (ReduxStorePostgresTests), which check and
        // run them the same way.
        let all = Self.fencedBlocks(readme, language: "swift")
        let blocks = all.filter {
            !$0.contains("import ReduxStoreInspector") && !$0.contains("import ReduxStorePostgres")
                && !$0.contains("ReplicatedStore")
        }
        #expect(all.count == 4, "the README has \(all.count) Swift blocks; this suite and the inspector's copy one each, the replication's two")
        #expect(blocks.count == 1, "the README has \(blocks.count) Swift blocks of the core; this suite copies one")
        let text = Self.normalized(here)
        for (index, block) in blocks.enumerated() {
            // Imports stand at the top of this file; the rest of the block stands in one piece.
            let lines = Self.normalized(block).split(separator: "\n")
            let imports = lines.filter { $0.hasPrefix("import ") }
            let body = lines.filter { !$0.hasPrefix("import ") }.joined(separator: "\n")
            #expect(imports == ["import ReduxStore"])
            for line in imports {
                #expect(text.hasPrefix(line) || text.contains("\n" + line + "\n"), "\(line) is not in \(#fileID)")
            }
            #expect(body.split(separator: "\n").count > 20)
            #expect(text.contains(body), "README Swift block \(index + 1) is not in \(#fileID) as written:\n\(block)")
        }
    }

    /// The contents of each ```LANGUAGE fence of a Markdown text.
    static func fencedBlocks(_ markdown: String, language: String) -> [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if var lines = current {
                if line.hasPrefix("```") {
                    blocks.append(lines.joined(separator: "\n"))
                    current = nil
                } else {
                    lines.append(line)
                    current = lines
                }
            } else if line == "```" + language {
                current = []
            }
        }
        return blocks
    }

    /// The text's lines without their leading and trailing blanks, empty lines dropped.
    static func normalized(_ text: String) -> String {
        text.split(separator: "\n")
            .map { $0.trimmingPrefix(while: \.isWhitespace) }
            .map { String($0.reversed().drop(while: \.isWhitespace).reversed()) }
            .filter { !$0.isEmpty }
            .joined(separator: "\n")
    }
}
