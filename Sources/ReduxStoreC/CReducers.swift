internal import CJSONC
internal import CReduxStoreAPI
import ReduxStore
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
    // @unchecked: immutable after init; C promised its reducers may be called from any thread,
    // one at a time.
    /// The state tree's root, owned by the store's ``JSONCTree``.
    let root: OpaquePointer?
    /// The reducers for an identifier no reducer names (all of them when none names one).
    private let unnamed: UnsafeMutableBufferPointer<rdx_reducer>
    /// Open addressing, a power of two of slots, at most half full; empty when no reducer names
    /// an identifier.
    private let slots: UnsafeMutableBufferPointer<Slot>
    /// The copies of the identifiers the slots hold.
    private let names: [UnsafeMutablePointer<CChar>]

    private struct Slot {
        var hash: UInt64 = 0
        /// NULL: an empty slot.
        var name: UnsafePointer<CChar>?
        var length = 0
        var reducers = UnsafeMutableBufferPointer<rdx_reducer>(start: nil, count: 0)
    }

    /// The reducers, their identifiers copied; the failure is memory running out.
    init(_ reducers: [rdx_reducer], root: OpaquePointer?) throws(StoreError) {
        // The distinct identifiers, in the order they first appear, copied before anything else
        // is allocated (nothing to undo if a copy fails).
        var names: [UnsafeMutablePointer<CChar>] = []
        for identifier in reducers.compactMap(\.identifier) where !names.contains(where: { strcmp($0, identifier) == 0 }) {
            guard let name = strdup(identifier) else {
                names.forEach { free($0) }
                throw StoreError(.outOfMemory, "out of memory copying the reducers' identifiers")
            }
            names.append(name)
        }
        self.names = names
        self.root = root
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
        for name in names {
            let applying = reducers.filter { $0.identifier == nil || strcmp($0.identifier, name) == 0 }
            let buffer = UnsafeMutableBufferPointer<rdx_reducer>.allocate(capacity: applying.count)
            _ = buffer.initialize(from: applying.map {
                rdx_reducer(reduce: $0.reduce, context: $0.context, identifier: $0.identifier.map { _ in UnsafePointer(name) })
            })
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

    /// The reducers that apply to an action of `identifier`, in order.
    @inline(__always)
    private func reducers(for identifier: UnsafePointer<CChar>) -> UnsafeMutableBufferPointer<rdx_reducer> {
        guard slots.count > 0 else { return unnamed }
        let (hash, length) = Self.hash(identifier)
        var index = Int(truncatingIfNeeded: hash) & (slots.count - 1)
        while let name = slots[index].name {
            if slots[index].hash == hash, slots[index].length == length, memcmp(name, identifier, length) == 0 {
                return slots[index].reducers
            }
            index = (index + 1) & (slots.count - 1)
        }
        return unnamed
    }

    func apply(_ action: any Action) {
        if let (identifier, payload) = CAction.parts(of: action) {
            for reducer in reducers(for: identifier) {
                reducer.reduce!(root, identifier, payload, reducer.context)
            }
            return
        }
        // A Swift action dispatched to a C store: its identifier, and a JSONAction's payload.
        action.withCParts { identifier, payload in
            for reducer in reducers(for: identifier) {
                reducer.reduce!(root, identifier, payload, reducer.context)
            }
        }
    }
}
