/// The inspector's page: `Page/inspector.html`, one self-contained file (its script and styles
/// inline, nothing loaded from any other address), compiled into the library so that a program
/// or `libreduxstore-inspector.so` serves it wherever it is installed.
enum InspectorPage {
    static var html: [UInt8] { PackageResources.inspector_html }
}
