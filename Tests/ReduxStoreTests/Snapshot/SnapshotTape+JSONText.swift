@testable import ReduxStore

// The tape written as JSON text: what the coder tests compare a tape with. Test support only;
// the store itself never makes text from a tape.
extension SnapshotTape {
    /// The snapshot as compact JSON text, keys in encoding order. O(size of the tape).
    ///
    /// Strings are escaped as JSON requires (`"`, `\`, and control characters; everything else is
    /// written as UTF-8). Doubles and floats use Swift's shortest round-tripping form; an integral
    /// `Double` keeps its fraction (`3.0`). Non-finite numbers, which JSON cannot
    /// express, are written as the strings `"NaN"`, `"Infinity"` and `"-Infinity"`. A value that
    /// encoded nothing is written `{}`. An empty tape gives `""`.
    func jsonString() -> String {
        let b = buffer.pointee
        guard b.slotCount > 0 else { return "" }
        var out: [UInt8] = []
        out.reserveCapacity(b.slotCount * 8)
        writeJSON(0, b, &out)
        return String(decoding: out, as: UTF8.self)
    }

    private func writeJSON(_ node: UInt32, _ b: TapeBuffer, _ out: inout [UInt8]) {
        let slot = b.slots[Int(node)]
        switch slot.tag {
        case .pending:
            out.append(UInt8(ascii: "{")); out.append(UInt8(ascii: "}"))
        case .null:
            out.append(contentsOf: "null".utf8)
        case .bool:
            out.append(contentsOf: (slot.payload != 0 ? "true" : "false").utf8)
        case .int:
            out.append(contentsOf: String(Int64(bitPattern: slot.payload)).utf8)
        case .uint:
            out.append(contentsOf: String(slot.payload).utf8)
        case .bigint:
            out.append(contentsOf: b.strings[Int(slot.payload)].utf8)
        case .double:
            Self.writeNumber(Double(bitPattern: slot.payload), &out)
        case .float:
            let f = Float(bitPattern: UInt32(truncatingIfNeeded: slot.payload))
            if f.isFinite { out.append(contentsOf: f.description.utf8) } else { Self.writeNumber(Double(f), &out) }
        case .string:
            Self.writeString(b.strings[Int(slot.payload)], &out)
        default:
            let isObject = slot.tag == .object
            out.append(UInt8(ascii: isObject ? "{" : "["))
            var child = slot.first
            var firstChild = true
            while child != 0 {
                if !firstChild { out.append(UInt8(ascii: ",")) }
                firstChild = false
                if isObject {
                    Self.writeString(b.strings[Int(b.slots[Int(child)].key)], &out)
                    out.append(UInt8(ascii: ":"))
                }
                writeJSON(child, b, &out)
                child = b.slots[Int(child)].next
            }
            out.append(UInt8(ascii: isObject ? "}" : "]"))
        }
    }

    private static func writeNumber(_ d: Double, _ out: inout [UInt8]) {
        if d.isNaN {
            out.append(contentsOf: "\"NaN\"".utf8)
        } else if d.isInfinite {
            out.append(contentsOf: (d < 0 ? "\"-Infinity\"" : "\"Infinity\"").utf8)
        } else {
            out.append(contentsOf: d.description.utf8)
        }
    }

    private static func writeString(_ s: String, _ out: inout [UInt8]) {
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        out.append(UInt8(ascii: "\""))
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(UInt8(ascii: "\\")); out.append(byte)
            case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\")); out.append(byte)
            case 0x0A: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "r"))
            case 0x09: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "t"))
            case 0x08: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "b"))
            case 0x0C: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "f"))
            case 0..<0x20:
                out.append(contentsOf: "\\u00".utf8)
                out.append(hex[Int(byte >> 4)]); out.append(hex[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
