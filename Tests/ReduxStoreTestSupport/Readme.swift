// The README's examples are copied, line for line, into the tests that run them.

/// The lines (trimmed, not blank) of the README's first Swift block that has the line
/// `import MODULE` which the test file at `testFile` (a `#filePath` under `Tests/TARGET/`) does not
/// contain; `nil` when the README, the file or such a block cannot be found.
public func readmeLinesMissing(
    fromTest testFile: String, blockImporting module: String, orMentioning other: String? = nil
) -> [String]? {
    let root = testFile.split(separator: "/", omittingEmptySubsequences: false).dropLast(3).joined(separator: "/")
    guard let readme = readText(root + "/README.md"), let here = readText(testFile) else { return nil }
    let lines = { (block: Substring) in
        block.split(separator: "\n").map { line in
            line.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed()
        }.map { String($0) }
    }
    let blocks = readme.split(separator: "```swift\n", omittingEmptySubsequences: false).dropFirst()
        .map({ $0.split(separator: "```", maxSplits: 1, omittingEmptySubsequences: false)[0] })
        .filter({ lines($0).contains("import \(module)") || other.map($0.contains) == true })
    guard !blocks.isEmpty else { return nil }
    return blocks.flatMap(lines).filter { !$0.isEmpty && !here.contains($0) }
}
