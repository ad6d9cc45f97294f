// The C functions of include/reduxstore.h's inspection part: diff and patch of json-c trees
// (RFC 6902). Thin, as the rest of the C face: the trees are checked and read into JSONValues,
// JSONPatch does the work, and a patched result is written back where it differs.
internal import CJSONC
public import CReduxStoreAPI
@_spi(Bindings) import ReduxStore

@c @implementation
public func rdx_json_diff(_ from: OpaquePointer?, _ to: OpaquePointer?) -> OpaquePointer? {
    do throws(StoreError) {
        let source = try InspectedTree.read(from, "from")
        let target = try InspectedTree.read(to, "to")
        let patch = JSONPatch.diff(from: source, to: target)
        let encoded: OpaquePointer?
        do throws(StoreError) {
            encoded = try JSONCEncoder().encode(patch)
        } catch where error.kind == .limit {
            throw StoreError(.limit, "the patch would be nested deeper than \(StoreLimits.maximumNestingDepth) levels"
                + " (its array and each operation object count as two)")
        }
        // An array always encodes to a node; nil would only mean json-c failed.
        guard let array = encoded else {
            throw StoreError(.outOfMemory, "out of memory making the patch")
        }
        return array
    } catch {
        _ = error.record()
        return nil
    }
}

@c @implementation
public func rdx_json_patch(_ document: OpaquePointer?, _ patch: OpaquePointer?) -> rdx_status {
    status { () throws(StoreError) in
        let document = try CInput.required(document, "document")
        let patchTree = try CInput.required(patch, "patch")
        let before = try InspectedTree.read(document, "document")
        try CInput.tree(patchTree, "patch")
        let operations: [JSONPatch.Operation]
        do throws(StoreError) {
            operations = try JSONCDecoder().decode([JSONPatch.Operation].self, from: patchTree)
        } catch {
            throw error.prefixed("patch")
        }
        let after = try JSONPatch.apply(operations, to: before)
        guard after != before else { return }
        var writer = InspectedTree.Writer()
        do throws(StoreError) {
            try writer.planRoot(document, before, after)
        } catch {
            writer.discard()
            throw error
        }
        try writer.write()
    }
}

/// A json-c tree read for inspection, and the writer that brings one up to date with a value.
enum InspectedTree {
    /// The value of a tree C handed in: not NULL, within the limits, read into a ``JSONValue``.
    /// Failures name the argument.
    static func read(_ tree: OpaquePointer?, _ name: String) throws(StoreError) -> JSONValue {
        let tree = try CInput.required(tree, name)
        try CInput.tree(tree, name)
        do {
            return try JSONCDecoder().decode(JSONValue.self, from: tree)
        } catch {
            throw error.prefixed(name)
        }
    }

    /// Changes a json-c tree into a new value in place, touching only what differs: nodes whose
    /// value stays are left as they are (the same pointers, printed as before).
    ///
    /// Two steps, so that a failure leaves the tree as it was: ``planRoot(_:_:_:)`` compares and
    /// makes every new node (the only step that can fail for a reason other than memory), then
    /// ``write()`` changes the tree. Nodes the plan made are owned by it until written; call
    /// ``discard()`` if the plan is not written.
    struct Writer {
        /// One change to one container of the tree; the new nodes are owned (NULL: JSON null).
        private enum Edit {
            case setMember(OpaquePointer, String, OpaquePointer?)
            case removeMember(OpaquePointer, String)
            case setElement(OpaquePointer, Int, OpaquePointer?)
            case appendElement(OpaquePointer, OpaquePointer?)
            case removeElements(OpaquePointer, from: Int, count: Int)

            /// The node this edit would put in the tree.
            var newNode: OpaquePointer? {
                switch self {
                case .setMember(_, _, let node), .setElement(_, _, let node),
                     .appendElement(_, let node):
                    node
                case .removeMember, .removeElements:
                    nil
                }
            }
        }

        private var edits: [Edit] = []

        /// Plans turning `document` (whose value is `before`) into `after`, which differs.
        ///
        /// - Throws: ``StoreError/Kind/invalidArgument`` when that is not possible in place: a
        ///   document that is not an object or array, or one the patch would make another kind.
        mutating func planRoot(
            _ document: OpaquePointer, _ before: JSONValue, _ after: JSONValue
        ) throws(StoreError) {
            switch (before, after) {
            case (.object, .object), (.array, .array):
                try plan(document, before, after, level: 1)
            case (.object, _), (.array, _):
                throw StoreError(
                    .invalidArgument,
                    "the patch makes the document \(after.kindName): a json_object that is "
                        + "\(before.kindName) cannot become another kind in place")
            default:
                throw StoreError(
                    .invalidArgument,
                    "the patch replaces the document, \(before.kindName): only an object or an "
                        + "array can be changed in place")
            }
        }

        /// Plans the changes inside `node`, a container at nesting level `level` (the document
        /// is level 1) whose value is `before`, to make it `after` (same kind, unequal).
        private mutating func plan(
            _ node: OpaquePointer, _ before: JSONValue, _ after: JSONValue, level: Int
        ) throws(StoreError) {
            switch (before, after) {
            case (.object(let old), .object(let new)):
                var iterator = json_object_iter_begin(node)
                var end = json_object_iter_end(node)
                while json_object_iter_equal(&iterator, &end) == 0 {
                    defer { json_object_iter_next(&iterator) }
                    guard let name = json_object_iter_peek_name(&iterator) else { continue }
                    // json-c keys are bytes; JSONValue keys compare code point by code point.
                    let key = JSONKey(String(cString: name))
                    guard let newMember = new[key] else {
                        edits.append(.removeMember(node, key.string))
                        continue
                    }
                    let oldMember = old[key] ?? .null
                    if oldMember == newMember { continue }
                    if let child = json_object_iter_peek_value(&iterator),
                       Self.sameContainerKind(oldMember, newMember) {
                        try plan(child, oldMember, newMember, level: level + 1)
                    } else {
                        edits.append(.setMember(node, key.string, try make(newMember, level: level)))
                    }
                }
                for (key, newMember) in new where old[key] == nil {
                    guard !key.string.utf8.contains(0) else {
                        throw StoreError(
                            .decode, "key \"\(key)\" contains a NUL character, which json-c cannot hold")
                    }
                    edits.append(.setMember(node, key.string, try make(newMember, level: level)))
                }
            case (.array(let old), .array(let new)):
                let common = min(old.count, new.count)
                for index in 0..<common where old[index] != new[index] {
                    if let child = json_object_array_get_idx(node, index),
                       Self.sameContainerKind(old[index], new[index]) {
                        try plan(child, old[index], new[index], level: level + 1)
                    } else {
                        edits.append(.setElement(node, index, try make(new[index], level: level)))
                    }
                }
                if new.count > common {
                    for index in common..<new.count {
                        edits.append(.appendElement(node, try make(new[index], level: level)))
                    }
                } else if old.count > common {
                    edits.append(.removeElements(node, from: common, count: old.count - common))
                }
            default:
                preconditionFailure("ReduxStore: planned a container of another kind")
            }
        }

        /// Both objects or both arrays: changed by a plan inside, not replaced.
        private static func sameContainerKind(_ a: JSONValue, _ b: JSONValue) -> Bool {
            switch (a, b) {
            case (.object, .object), (.array, .array): true
            default: false
            }
        }

        /// A new json-c node of `value`, to go into a container at nesting level `level`.
        private func make(_ value: JSONValue, level: Int) throws(StoreError) -> OpaquePointer? {
            let limit = StoreLimits.maximumNestingDepth
            guard level + Self.containerDepth(value, limit: limit - level) <= limit else {
                throw StoreError(.limit, "the patched document would be nested deeper than \(limit) levels")
            }
            return try JSONCEncoder().encode(value)
        }

        /// How many containers deep `value` is (0 for a scalar), counted up to `limit + 1`.
        private static func containerDepth(_ value: JSONValue, limit: Int) -> Int {
            switch value {
            case .array(let elements):
                guard limit >= 0 else { return 1 }
                var deepest = 0
                for element in elements {
                    deepest = max(deepest, containerDepth(element, limit: limit - 1))
                    if deepest > limit { break }
                }
                return 1 + deepest
            case .object(let members):
                guard limit >= 0 else { return 1 }
                var deepest = 0
                for member in members.values {
                    deepest = max(deepest, containerDepth(member, limit: limit - 1))
                    if deepest > limit { break }
                }
                return 1 + deepest
            default:
                return 0
            }
        }

        /// Puts the nodes of a plan that will not be written.
        func discard() {
            for edit in edits { json_object_put(edit.newNode) }
        }

        /// Writes the plan into the tree. Only memory can make it fail; the edits not made by
        /// then are discarded, and the tree is left part changed.
        consuming func write() throws(StoreError) {
            for (position, edit) in edits.enumerated() {
                let done: Bool
                switch edit {
                case .setMember(let node, let key, let value):
                    // The object takes the value, replacing (and putting) one of the same key.
                    done = key.withCString { json_object_object_add(node, $0, value) } == 0
                case .removeMember(let node, let key):
                    key.withCString { json_object_object_del(node, $0) }
                    done = true
                case .setElement(let node, let index, let value):
                    done = json_object_array_put_idx(node, index, value) == 0
                case .appendElement(let node, let value):
                    done = json_object_array_add(node, value) == 0
                case .removeElements(let node, let from, let count):
                    done = json_object_array_del_idx(node, from, count) == 0
                }
                if !done {
                    json_object_put(edit.newNode)
                    for rest in edits[(position + 1)...] { json_object_put(rest.newNode) }
                    throw StoreError(
                        .outOfMemory, "out of memory writing the patch into the document (part of it was written)")
                }
            }
        }
    }

}
