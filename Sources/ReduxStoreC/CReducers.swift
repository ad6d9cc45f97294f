internal import CJSONC
internal import CReduxStoreAPI
@_spi(Bindings) import ReduxStore
#if canImport(Glibc)
import Glibc
#endif

/// The reducers C passes to a constructor, checked.
enum CReducerList {
    /// The reducers, or the first fault among them: a NULL `reduce`, an identifier that is not
    /// one an action could carry (longer than ``StoreLimits/maximumIdentifierLength`` bytes, not
    /// UTF-8). Their identifiers are still the caller's: ``CReducers`` copies them.
    static func check(_ reducers: UnsafePointer<rdx_reducer>?, _ count: Int) throws(StoreError)
        -> [rdx_reducer]
    {
        guard count > 0 else { return [] }
        let reducers = try CInput.required(reducers, "reducers")
        let list = Array(UnsafeBufferPointer(start: reducers, count: count))
        for (index, reducer) in list.enumerated() {
            guard reducer.reduce != nil else {
                throw StoreError(.invalidArgument, "reducers[\(index)].reduce is NULL")
            }
            guard let identifier = reducer.identifier else { continue }
            do {
                _ = try CInput.identifier(identifier)
            } catch {
                throw StoreError(error.kind, "reducers[\(index)].\(error.message)")
            }
        }
        return list
    }
}

/// The C reducers of a store, each action's found by its identifier.
///
/// A reducer with an identifier sees only the actions of that identifier; one without sees
/// every action; those that apply run in the order C listed them. The table is made once: for
/// each identifier some reducer names, the reducers that apply to it (its own and those without
/// an identifier, in order); for any other identifier, those without one. A dispatch hashes the
/// action's identifier once and compares it with the one identifier in its slot, whatever the
/// number of reducers; a store whose reducers name no identifier skips even that.
///
/// Buffers this object owns, not arrays, so walking them costs no retain and release.
final class CReducers: @unchecked Sendable {
    // @unchecked: the tables are immutable after init; C promised its reducers may be called
    // from any thread, one at a time.
    /// The reducers for an identifier no reducer names (all of them when none names one).
    private let unnamed: UnsafeMutableBufferPointer<rdx_reducer>
    /// Open addressing by the identifier's bytes, a power of two of slots, at most half full;
    /// empty when no reducer names an identifier.
    private let slots: UnsafeMutableBufferPointer<Slot>
    /// The copies of the identifiers the reducers name, which this object frees.
    private let names: [UnsafeMutablePointer<CChar>]

    private struct Slot {
        var hash: UInt64 = 0
        /// NULL: an empty slot.
        var name: UnsafePointer<CChar>?
        var length = 0
        var reducers = UnsafeMutableBufferPointer<rdx_reducer>(start: nil, count: 0)
    }

    /// The reducers, their identifiers copied; the failure is memory running out.
    init(_ reducers: [rdx_reducer]) throws(StoreError) {
        // The distinct identifiers, in the order they first appear, copied before anything else
        // is allocated (nothing to undo if a copy fails); each reducer's index among them (nil:
        // every action). Found by their bytes in a dictionary: a store of thousands of named
        // reducers is made in linear time.
        var names: [UnsafeMutablePointer<CChar>] = []
        var nameIndex: [[UInt8]: Int] = [:]
        var reducerNames: [Int?] = []
        reducerNames.reserveCapacity(reducers.count)
        for reducer in reducers {
            guard let identifier = reducer.identifier else {
                reducerNames.append(nil)
                continue
            }
            let bytes = Array(UnsafeRawBufferPointer(start: identifier, count: strlen(identifier)))
            if let index = nameIndex[bytes] {
                reducerNames.append(index)
                continue
            }
            guard let copy = strdup(identifier) else {
                names.forEach { free($0) }
                throw StoreError(.outOfMemory, "out of memory copying the reducers' identifiers")
            }
            nameIndex[bytes] = names.count
            reducerNames.append(names.count)
            names.append(copy)
        }
        self.names = names
        let every = reducers.filter { $0.identifier == nil }
        unnamed = .allocate(capacity: every.count)
        _ = unnamed.initialize(from: every)
        var size = 0
        if !names.isEmpty {
            size = 4
            while size < 2 * names.count { size *= 2 }
        }
        slots = .allocate(capacity: size)
        slots.initialize(repeating: Slot())
        // The reducers that apply to each identifier, in the order given: those that name it
        // (with its copy as their identifier) and those for every action.
        var applying = [[rdx_reducer]](repeating: [], count: names.count)
        for (reducer, index) in zip(reducers, reducerNames) {
            if let index {
                applying[index].append(
                    rdx_reducer(reduce: reducer.reduce, context: reducer.context, identifier: names[index]))
            } else {
                for index in applying.indices { applying[index].append(reducer) }
            }
        }
        for (name, applying) in zip(names, applying) {
            let buffer = UnsafeMutableBufferPointer<rdx_reducer>.allocate(capacity: applying.count)
            _ = buffer.initialize(from: applying)
            let (hash, length) = Self.hash(name)
            var index = Int(truncatingIfNeeded: hash) & (size - 1)
            while slots[index].name != nil { index = (index + 1) & (size - 1) }
            slots[index] = Slot(hash: hash, name: name, length: length, reducers: buffer)
        }
    }

    deinit {
        for slot in slots where slot.name != nil { slot.reducers.deallocate() }
        slots.deallocate()
        unnamed.deallocate()
        for name in names { free(name) }
    }

    /// A hash of the identifier's bytes, eight at a time (FNV-1a's steps on words; the last
    /// word overlaps the one before when the length is not a multiple of eight), and its length.
    /// Only the identifier's own bytes are read: `strlen` first.
    @inline(__always)
    private static func hash(_ identifier: UnsafePointer<CChar>) -> (UInt64, Int) {
        let length = strlen(identifier)
        let bytes = UnsafeRawPointer(identifier)
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325 ^ UInt64(length)
        func mix(_ word: UInt64) { hash = (hash ^ word) &* 0x0000_0100_0000_01b3; hash ^= hash >> 29 }
        if length >= 8 {
            var index = 0
            while index + 8 <= length {
                mix(bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                index += 8
            }
            if index < length { mix(bytes.loadUnaligned(fromByteOffset: length - 8, as: UInt64.self)) }
        } else {
            var word: UInt64 = 0
            for index in 0..<length { word |= UInt64(bytes.load(fromByteOffset: index, as: UInt8.self)) << (8 * index) }
            mix(word)
        }
        return (hash, length)
    }

    /// The slot of the identifier some reducer names with the bytes of `identifier`, if any
    /// (without reading them when no reducer names one).
    @inline(__always)
    private func slot(for identifier: UnsafePointer<CChar>) -> UnsafeMutablePointer<Slot>? {
        guard slots.count > 0 else { return nil }
        let (hash, length) = Self.hash(identifier)
        var index = Int(truncatingIfNeeded: hash) & (slots.count - 1)
        while let name = slots[index].name {
            if slots[index].hash == hash, slots[index].length == length, memcmp(name, identifier, length) == 0 {
                return slots.baseAddress! + index
            }
            index = (index + 1) & (slots.count - 1)
        }
        return nil
    }

    /// Calls the reducers that apply to `action`, in order, on the tree `root`. Under the
    /// store's lock.
    @inline(__always)
    func apply(_ action: any Action, to root: OpaquePointer?) {
        apply(opened: action, to: root)
    }

    /// ``apply(_:)`` with the action's type known to the function (the existential opened): a
    /// C action's identifier and payload are read as that type; a Swift action dispatched to a C
    /// store gives its identifier and a JSONAction's payload.
    @inline(__always)
    private func apply<A: Action>(opened action: A, to root: OpaquePointer?) {
        if let (identifier, payload) = action.cParts { return call(identifier, payload, root) }
        action.withCParts { call($0, $1, root) }
    }

    /// Calls the reducers that apply to `identifier`, in order.
    @inline(__always)
    private func call(_ identifier: UnsafePointer<CChar>, _ payload: OpaquePointer?, _ root: OpaquePointer?) {
        for reducer in slot(for: identifier)?.pointee.reducers ?? unnamed {
            reducer.reduce!(root, identifier, payload, reducer.context)
        }
    }
}
