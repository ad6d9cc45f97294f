/// The documented limits on input that crosses into a store. Past any of them, input is refused
/// with ``StoreError/Kind/limit`` (`RDX_ELIMIT` in C) and nothing changes.
public enum StoreLimits {
    /// The deepest nesting of arrays and objects a JSON value may have (the top level is depth 1).
    public static let maximumNestingDepth = 256
    /// The largest JSON text, in bytes, that is parsed (actions, saved files).
    public static let maximumJSONTextSize = 64 << 20
    /// The longest action identifier, in UTF-8 bytes.
    public static let maximumIdentifierLength = 1024
}
