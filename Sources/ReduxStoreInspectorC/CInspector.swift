// The C functions of include/reduxstore_inspector.h: a thin layer over StoreInspector, reaching
// the store through CStoreAccess.
internal import CJSONC
public import CReduxStoreAPI
import ReduxStore
import ReduxStoreCStatus
import ReduxStoreInspector
#if canImport(Glibc)
import Glibc
#endif

/// The object behind an `rdx_inspector *`: the inspector and its address as a C string.
final class CInspectorHandle: @unchecked Sendable {
    // @unchecked: immutable; `url` is freed once, at deinit.
    let inspector: StoreInspector
    let url: UnsafeMutablePointer<CChar>

    init(inspector: StoreInspector) {
        self.inspector = inspector
        url = strdup(inspector.url)
    }

    deinit { free(url) }
}

@c @implementation
public func rdx_inspector_start(
    _ store: OpaquePointer?, _ options: UnsafePointer<rdx_inspector_options>?,
    _ status: UnsafeMutablePointer<rdx_status>?
) -> OpaquePointer? {
    do throws(StoreError) {
        guard let store else { throw StoreError(.invalidArgument, "store is NULL") }
        let (inspectorOptions, identifiers) = try InspectorOptions.from(options?.pointee)
        let access = CStoreAccess(store: store, identifiers: identifiers)
        let result = blockingWait { () async throws -> StoreInspector in
            try await StoreInspector(access: access, options: inspectorOptions)
        }
        let inspector: StoreInspector
        switch result {
        case .success(let started): inspector = started
        case .failure(let error as StoreError): throw error
        case .failure(let error): throw StoreError(.io, "inspector: \(error)")
        }
        // Once it listens: a failure to start leaves the store as it was.
        if inspectorOptions.allowsRestore, inspectorOptions.keptVersions > 0 {
            _ = rdx_store_keep_history(store, inspectorOptions.keptVersions)
        }
        status?.pointee = RDX_OK
        return OpaquePointer(Unmanaged.passRetained(CInspectorHandle(inspector: inspector)).toOpaque())
    } catch {
        rdx_set_last_error(error.message)
        status?.pointee = error.kind.status
        return nil
    }
}

@c @implementation
public func rdx_inspector_url(_ inspector: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let inspector else { return nil }
    return UnsafePointer(Unmanaged<CInspectorHandle>.fromOpaque(UnsafeRawPointer(inspector)).takeUnretainedValue().url)
}

@c @implementation
public func rdx_inspector_stop(_ inspector: OpaquePointer?) {
    guard let inspector else { return }
    let handle = Unmanaged<CInspectorHandle>.fromOpaque(UnsafeRawPointer(inspector)).takeRetainedValue()
    _ = blockingWait { () async throws -> Void in await handle.inspector.stop() }
}

extension InspectorOptions {
    /// C's options (zeros: the defaults), and the identifiers the page may dispatch: nil for
    /// any (`dispatch_identifiers` NULL), none for an empty list.
    static func from(_ c: rdx_inspector_options?) throws(StoreError) -> (InspectorOptions, [String]?) {
        var options = InspectorOptions()
        guard let c else { return (options, nil) }
        if let host = c.host {
            options.host = String(cString: host)
            guard !options.host.isEmpty else { throw StoreError(.invalidArgument, "host is \"\": name an address, or NULL for 127.0.0.1") }
        }
        guard c.port <= 65_535 else { throw StoreError(.invalidArgument, "port \(c.port) is not 0–65535") }
        options.port = Int(c.port)
        options.allowsRestore = c.allows_restore != 0
        options.allowsDispatch = c.allows_dispatch != 0
        if c.maximum_clients > 0 { options.maximumClients = Int(c.maximum_clients) }
        guard var next = c.dispatch_identifiers else { return (options, nil) }
        var identifiers: [String] = []
        while let identifier = next.pointee {
            identifiers.append(String(cString: identifier))
            next += 1
        }
        return (options, identifiers)
    }
}
