// JSON text through json-c: parsing with its strict tokener (after refusing what it would let
// through), and printing.

internal import CJSONC
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension JSONC {
    // MARK: Text

    /// Parses JSON text into a new tree (NULL for `null`) with json-c's strict tokener, refusing
    /// text over ``StoreLimits/maximumJSONTextSize`` bytes or nested deeper than
    /// ``StoreLimits/maximumNestingDepth``.
    static func parse(_ text: String) throws(StoreError) -> OpaquePointer? {
        var text = text
        let result = text.withUTF8 { bytes in Result { () throws(StoreError) in try parse(bytes) } }
        return try result.get()
    }

    /// Parses UTF-8 JSON text (not NUL-terminated; the whole buffer must be one JSON value, with
    /// white space around it allowed) into a new tree the caller owns, NULL for `null`.
    ///
    /// - Parameter maximumDepth: json-c's depth: it counts a level for each value inside a
    ///   container, so `limit + 1` lets exactly `limit` containers nest around a value. (One
    ///   quirk: json-c never counts the inside of an empty container, so `limit + 1` nested
    ///   containers whose innermost is empty still parse; the decoders refuse to open a container
    ///   past ``StoreLimits/maximumNestingDepth`` all the same.)
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/parse`` (the message names the byte
    ///   offset), or ``StoreError/Kind/limit`` for text too large or too deep.
    static func parse(
        _ bytes: UnsafeBufferPointer<UInt8>,
        maximumDepth: Int = StoreLimits.maximumNestingDepth + 1
    ) throws(StoreError) -> OpaquePointer? {
        let size = bytes.count
        guard size <= StoreLimits.maximumJSONTextSize, Int32(exactly: size) != nil else {
            throw StoreError(.limit, "JSON text of \(size) bytes is larger than the limit of \(StoreLimits.maximumJSONTextSize) bytes")
        }
        // json-c holds integers in 64 bits and clamps longer integer text to a bound without a
        // word; with `.0` after it, it is a double node that keeps its text, which the decoders
        // read exactly (an `Int128`, a `Decimal`) or as a `Double`.
        let wideIntegers = try rejectWhatJSONCLetsThrough(bytes)
        if !wideIntegers.isEmpty {
            var patched: [UInt8] = []
            patched.reserveCapacity(size + 2 * wideIntegers.count)
            var from = 0
            for end in wideIntegers {
                patched.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[from..<end]))
                patched.append(contentsOf: [UInt8(ascii: "."), UInt8(ascii: "0")])
                from = end
            }
            patched.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[from...]))
            let result = patched.withUnsafeBufferPointer { patchedBytes in
                Result { () throws(StoreError) in try tokenize(patchedBytes, maximumDepth: maximumDepth) }
            }
            do {
                return try result.get()
            } catch {
                // The offset in the caller's text: less the two bytes added after each integer.
                throw StoreError(error.kind, error.message.replacing(/at byte (\d+)/) { match in
                    let offset = Int(match.1) ?? 0
                    var shift = 0
                    for end in wideIntegers where end + shift < offset { shift += 2 }
                    return "at byte \(offset - shift)"
                })
            }
        }
        return try tokenize(bytes, maximumDepth: maximumDepth)
    }

    /// json-c's strict tokener on text that passed ``rejectWhatJSONCLetsThrough(_:)``.
    private static func tokenize(
        _ bytes: UnsafeBufferPointer<UInt8>, maximumDepth: Int
    ) throws(StoreError) -> OpaquePointer? {
        let size = bytes.count
        guard let length = Int32(exactly: size) else {
            throw StoreError(.limit, "JSON text of \(size) bytes is too large for json-c")
        }
        let tokener = try ThreadTokeners.tokener(depth: Int32(clamping: maximumDepth))
        // Not JSON_TOKENER_VALIDATE_UTF8: the scan before refused every text that is not UTF-8,
        // by a stricter rule than json-c's (which lets overlong forms through); json-c's check
        // would read every byte again, through a call per byte.
        json_tokener_set_flags(tokener, JSON_TOKENER_STRICT)

        var tree: OpaquePointer?
        if let base = bytes.baseAddress, size > 0 {
            tree = base.withMemoryRebound(to: CChar.self, capacity: size) {
                json_tokener_parse_ex(tokener, $0, length)
            }
        } else {
            tree = json_tokener_parse_ex(tokener, "", 0)
        }
        var end = json_tokener_get_parse_end(tokener)
        if tree == nil && json_tokener_get_error(tokener) == json_tokener_continue {
            // All the text was read and json-c waits for more: a NUL ends the input (and
            // completes a number at the very end).
            tree = json_tokener_parse_ex(tokener, "", 1)
        }
        let status = json_tokener_get_error(tokener)
        // A parse that stopped part-way can leave state `json_tokener_reset` does not clear (a
        // high surrogate waiting for its pair, which the next text's first `\u` escape would
        // join): that tokener is not used again.
        if status != json_tokener_success { ThreadTokeners.discard(tokener) }
        // White space only may follow the value.
        while end < size, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[end]) { end += 1 }
        if status == json_tokener_success && end >= size { return tree }
        json_object_put(tree)
        if status == json_tokener_error_depth {
            throw StoreError(.limit, "JSON text nests deeper than \(maximumDepth - 1) levels")
        }
        let reason: String
        if status == json_tokener_success {
            reason = "unexpected text after the value"
        } else if status == json_tokener_continue {
            reason = "unexpected end of data"
        } else {
            reason = String(cString: json_tokener_error_desc(status))
        }
        throw StoreError(.parse, "JSON text does not parse at byte \(end): \(reason)")
    }

    /// Refuses what json-c's strict tokener still accepts but JSON does not: raw control
    /// characters inside strings, `\u` escapes of half a surrogate pair (json-c makes them
    /// U+FFFD without a word, as Foundation's `JSONDecoder` refuses them), the words `NaN`
    /// and `Infinity`, and numbers outside JSON's grammar (`1.`, `-.5`, `01`, `1.e2`, which
    /// json-c reads and PostgreSQL's `json` refuses); and what json-c cannot hold: an object key
    /// with U+0000 in it (json-c's keys are C strings: it would cut the key short). One pass
    /// over the bytes, before parsing.
    ///
    /// - Returns: where each integer past the 64-bit range ends (json-c would clamp them).
    static func rejectWhatJSONCLetsThrough(_ bytes: UnsafeBufferPointer<UInt8>) throws(StoreError) -> [Int] {
        guard let base = bytes.baseAddress else { return [] }
        var wideIntegers: [Int] = []
        let count = bytes.count
        // Every byte OR-ed in (eight at a time in strings): the top bit of any of its bytes says
        // whether any byte is not ASCII.
        var seen: UInt64 = 0
        var index = 0
        while index < count {
            let byte = base[index]
            seen |= UInt64(byte)
            if byte == UInt8(ascii: "\"") {
                // A string, read to its closing quote in a loop of its own: most of a text's
                // bytes. Eight at a time: the first byte that ends the run of plain ones (a
                // quote, a backslash, a control character) is the lowest one the word's test
                // flags (``stringRunStops(_:)``); the last few bytes of the text one at a time.
                let start = index
                var holdsNUL = false
                index += 1
                while true {
                    if index &+ 8 <= count {
                        let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
                        seen |= word
                        let stops = stringRunStops(word)
                        if stops == 0 {
                            index &+= 8
                            continue
                        }
                        index &+= stops.trailingZeroBitCount &>> 3
                    } else {
                        while index < count {
                            let byte = base[index]
                            guard byte >= 0x20, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") else { break }
                            seen |= UInt64(byte)
                            index += 1
                        }
                        if index >= count { break }
                    }
                    let byte = base[index]
                    if byte == UInt8(ascii: "\\") {
                        if hexUnit(base, count, at: index) == 0 { holdsNUL = true }
                        index += try escapeLength(base, count, at: index)
                    } else if byte == UInt8(ascii: "\"") {
                        if holdsNUL, isKey(base, count, quoteAt: index) {
                            throw StoreError(.parse, "JSON text at byte \(start): an object key holds U+0000 (\\u0000), which json-c cannot hold in a key")
                        }
                        break
                    } else {
                        throw StoreError(.parse, "JSON text does not parse at byte \(index): a control character inside a string must be escaped")
                    }
                }
            } else if byte == UInt8(ascii: "N") || byte == UInt8(ascii: "I") {
                throw StoreError(.parse, "JSON text does not parse at byte \(index): NaN and Infinity are not JSON numbers")
            } else if byte == UInt8(ascii: "-") || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) {
                let (end, fits) = try checkNumber(bytes, at: index)
                if !fits { wideIntegers.append(end) }
                index = end
                continue
            }
            index += 1
        }
        let ascii = seen & 0x8080_8080_8080_8080 == 0
        // json-c's UTF-8 check lets overlong forms and surrogates through (`C0 93`, say), which a
        // Swift `String` would repair into U+FFFD: a key read from C and from Swift would differ.
        if !ascii, let offset = firstInvalidUTF8(bytes) {
            throw StoreError(.parse, "JSON text does not parse at byte \(offset): invalid UTF-8")
        }
        return wideIntegers
    }

    /// The bytes of `word` (little-endian: the first byte lowest) that may end a run of plain
    /// string bytes, each as its top bit: a quote, a backslash or a control character (below
    /// U+0020). The classic "has a zero byte" and "has a byte less than n" tests of 64-bit words:
    /// they flag every such byte, and flag a byte that is not one only above a flagged one, so the
    /// lowest flag is exact; 0 when there is none.
    @inline(__always)
    private static func stringRunStops(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let hasQuote = (quote &- ones) & ~quote
        let hasBackslash = (backslash &- ones) & ~backslash
        let hasControl = (word &- ones &* 0x20) & ~word
        return (hasQuote | hasBackslash | hasControl) & (ones &* 0x80)
    }

    /// How many bytes the escape at `index` (a backslash inside a string) takes for the scan:
    /// two, or twelve for a `\u` surrogate pair (so that its second half is not read alone).
    /// Refuses a `\u` escape of half a surrogate pair that is not followed or preceded by its
    /// other half. An escape that is not well formed is left to json-c to refuse.
    private static func escapeLength(
        _ base: UnsafePointer<UInt8>, _ count: Int, at index: Int
    ) throws(StoreError) -> Int {
        guard let unit = hexUnit(base, count, at: index), (0xD800...0xDFFF).contains(unit) else { return 2 }
        if unit <= 0xDBFF, let low = hexUnit(base, count, at: index + 6), (0xDC00...0xDFFF).contains(low) {
            return 12
        }
        throw StoreError(
            .parse,
            "JSON text does not parse at byte \(index): \\u\(String(unit, radix: 16, uppercase: true)) is half of a surrogate pair, not a character")
    }

    /// The code unit of the `\uXXXX` escape at `index`, or nil when there is none there.
    private static func hexUnit(_ base: UnsafePointer<UInt8>, _ count: Int, at index: Int) -> UInt16? {
        guard index + 6 <= count, base[index] == UInt8(ascii: "\\"), base[index + 1] == UInt8(ascii: "u") else {
            return nil
        }
        var unit: UInt16 = 0
        for offset in 2..<6 {
            let byte = base[index + offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            unit = unit << 4 | UInt16(digit)
        }
        return unit
    }

    /// The offset of the first byte that does not start a well-formed UTF-8 scalar, or nil when
    /// every scalar is well formed (no overlong forms, surrogates or values past U+10FFFF).
    static func firstInvalidUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let scalar): offset += scalar.count
            case .emptyInput: return nil
            case .error: return offset
            }
        }
    }

    /// Whether the string whose closing quote is at `quote` is an object's key: a colon follows
    /// it, after white space.
    private static func isKey(_ base: UnsafePointer<UInt8>, _ count: Int, quoteAt quote: Int) -> Bool {
        var index = quote + 1
        while index < count, [0x20, 0x09, 0x0A, 0x0D].contains(base[index]) { index += 1 }
        return index < count && base[index] == UInt8(ascii: ":")
    }

    /// Reads over the number starting at `start` (a minus or a digit), held to JSON's grammar
    /// (RFC 8259: `-? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?`): the index after it, and
    /// whether json-c holds it as it is (a number with a fraction or exponent is a double, and
    /// fine; an integer only within 64 bits). A minus before `Infinity` or `NaN` is left to the
    /// scan, which refuses the word.
    private static func checkNumber(
        _ bytes: UnsafeBufferPointer<UInt8>, at start: Int
    ) throws(StoreError) -> (end: Int, fits: Bool) {
        var index = start
        func skipDigits() -> Int {
            let from = index
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                index += 1
            }
            return index - from
        }
        func refusal(_ why: String) -> StoreError {
            StoreError(.parse, "JSON text does not parse at byte \(start): \(why)")
        }
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        let digitsStart = index
        guard skipDigits() > 0 else {
            if index < bytes.count, bytes[index] == UInt8(ascii: "I") || bytes[index] == UInt8(ascii: "N") {
                return (index, true)
            }
            throw refusal("a minus sign must be followed by a digit")
        }
        let digits = UnsafeBufferPointer(rebasing: bytes[digitsStart..<index])
        guard digits.count == 1 || digits[0] != UInt8(ascii: "0") else {
            throw refusal("a number does not start with 0 followed by another digit")
        }
        var isInteger = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            isInteger = false
            guard skipDigits() > 0 else { throw refusal("a decimal point must be followed by a digit") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            isInteger = false
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard skipDigits() > 0 else { throw refusal("an exponent must have a digit") }
        }
        guard isInteger else { return (index, true) }
        // The largest magnitudes json-c holds exactly: 2^63 for negative integers, 2^64 - 1 else.
        let bound: StaticString = negative ? "9223372036854775808" : "18446744073709551615"
        let boundDigits = UnsafeBufferPointer(start: bound.utf8Start, count: bound.utf8CodeUnitCount)
        // Digit strings of one length compare as their numbers do.
        let fits = digits.count < boundDigits.count
            || (digits.count == boundDigits.count && !boundDigits.lexicographicallyPrecedes(digits))
        return (index, fits)
    }

    /// Prints a tree (NULL prints as `null`) with json-c's printer.
    static func print(_ tree: OpaquePointer?, pretty: Bool) throws(StoreError) -> String {
        guard let tree else { return "null" }
        let flags = pretty
            ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE
            : JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE
        var length = 0
        guard let text = json_object_to_json_string_length(tree, flags, &length) else {
            throw StoreError(.outOfMemory, "json-c could not print a value")
        }
        return String(decoding: UnsafeRawBufferPointer(start: text, count: length), as: UTF8.self)
    }
}

/// JSON text through json-c's tokener, for callers outside this module.
///
/// Package: replication parses the payloads and snapshots the server returns, and prints the trees
/// it sends.
package enum JSONCText {
    /// Parses `length` bytes of UTF-8 JSON text at `text` (NUL termination not needed) into a
    /// new tree the caller owns (`nil` for `null`), with json-c's strict tokener.
    ///
    /// - Parameter maximumDepth: json-c's depth: `limit + 1` lets `limit` containers nest.
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/parse`` naming the byte offset, or
    ///   ``StoreError/Kind/limit`` for text longer than ``StoreLimits/maximumJSONTextSize`` or
    ///   nested too deep.
    static func parse(
        _ text: UnsafePointer<CChar>, length: Int,
        maximumDepth: Int = StoreLimits.maximumNestingDepth + 1
    ) throws(StoreError) -> OpaquePointer? {
        let bytes = UnsafeBufferPointer(
            start: UnsafeRawPointer(text).assumingMemoryBound(to: UInt8.self), count: length)
        return try JSONC.parse(bytes, maximumDepth: maximumDepth)
    }

    /// Parses JSON text into a new tree the caller owns (`nil` for `null`), as
    /// ``parse(_:length:maximumDepth:)`` does.
    package static func parse(_ text: String) throws(StoreError) -> OpaquePointer? {
        try JSONC.parse(text)
    }

    /// Prints a tree (borrowed; `nil` prints as `null`) as compact or pretty JSON text. json-c's
    /// printer writes into the tree it prints: print a tree no other thread uses.
    package static func print(_ object: OpaquePointer?, pretty: Bool = false) throws(StoreError) -> String {
        try JSONC.print(object, pretty: pretty)
    }

    /// The JSON kind of a node, as messages name it: `null`, `boolean`, `number`, `string`,
    /// `array` or `object`.
    static func typeName(_ object: OpaquePointer?) -> String {
        JSONC.kindName(object)
    }
}

/// The json-c tokeners each thread parses with, kept for the thread's life: a tokener allocates
/// and clears its stack of `depth` levels when it is made (for the store's 257 levels, more than
/// json-c spends parsing a small action: `Benchmarks/README.md`, "The C text path against
/// json-c's own parse"), and `json_tokener_reset` makes one ready again for nothing. Two
/// depths are asked for (an action, and a batch around actions), so a thread keeps up to two;
/// a pthread key frees them when the thread exits. A tokener is used from start to end of one
/// parse, which calls nothing else, so a thread never needs two of one depth at once.
enum ThreadTokeners {
    private struct Kept {
        var first: (depth: Int32, tokener: UnsafeMutablePointer<json_tokener>?) = (0, nil)
        var second: (depth: Int32, tokener: UnsafeMutablePointer<json_tokener>?) = (0, nil)
    }

    private static let storage = ThreadStorage<Kept> { raw in
        if let kept = raw?.assumingMemoryBound(to: Kept.self) {
            if let tokener = kept.pointee.first.tokener { json_tokener_free(tokener) }
            if let tokener = kept.pointee.second.tokener { json_tokener_free(tokener) }
        }
        ThreadStorage<Kept>.free(raw)
    }

    /// Frees `tokener`, one of this thread's, so that the next parse of its depth makes a new
    /// one.
    static func discard(_ tokener: UnsafeMutablePointer<json_tokener>) {
        guard let kept = storage.existing else { return }
        if kept.pointee.first.tokener == tokener {
            kept.pointee.first = (0, nil)
        } else if kept.pointee.second.tokener == tokener {
            kept.pointee.second = (0, nil)
        } else {
            return
        }
        json_tokener_free(tokener)
    }

    /// This thread's tokener of `depth`, reset: made on first use.
    static func tokener(depth: Int32) throws(StoreError) -> UnsafeMutablePointer<json_tokener> {
        guard let kept = storage.value(orMake: { Kept() }) else {
            throw StoreError(.outOfMemory, "could not keep a json-c tokener for this thread")
        }
        if kept.pointee.first.depth == depth, let tokener = kept.pointee.first.tokener {
            json_tokener_reset(tokener)
            return tokener
        }
        if kept.pointee.second.depth == depth, let tokener = kept.pointee.second.tokener {
            json_tokener_reset(tokener)
            return tokener
        }
        guard let tokener = json_tokener_new_ex(depth) else {
            throw StoreError(.outOfMemory, "json-c could not allocate a tokener")
        }
        if kept.pointee.first.tokener == nil {
            kept.pointee.first = (depth, tokener)
        } else {
            if let old = kept.pointee.second.tokener { json_tokener_free(old) }
            kept.pointee.second = (depth, tokener)
        }
        return tokener
    }
}
