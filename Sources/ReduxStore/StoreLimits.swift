/// The documented limits on input that crosses into a store. Past any of them, input is refused
/// with ``StoreError/Kind/limit`` and nothing changes.
public enum StoreLimits {
    /// The deepest nesting of arrays and objects a JSON value may have (the top level is depth 1).
    public static let maximumNestingDepth = 256
    /// The largest JSON text, in bytes, that is parsed (actions, saved files).
    public static let maximumJSONTextSize = 64 << 20
    /// The longest action identifier, in UTF-8 bytes.
    public static let maximumIdentifierLength = 1024
    /// The most dispatches that may run inside one another's middleware on one thread, counting
    /// every store: a middleware that dispatches (to its own store or another) opens one more
    /// level until its dispatch returns. A middleware that dispatches without end would otherwise
    /// overflow the thread's stack; past this depth the dispatch is refused (a trap, see
    /// ``Store/dispatchAction(_:file:line:)``). Each level takes a few KiB
    /// of stack, more in a debug build than in a release build, so 64 levels stay far inside a
    /// thread's usual 8 MiB (libdispatch's queue threads have as much on Linux), and deep enough
    /// for any chain a program means to make. Actions a reducer dispatches do not nest: they pass
    /// the chain one after the other.
    public static let maximumMiddlewareDepth = 64
}
