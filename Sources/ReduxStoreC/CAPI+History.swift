// The C functions of include/reduxstore.h's history part. Thin: checks, then the core.
internal import CJSONC
public import CReduxStoreAPI
@_spi(Bindings) import ReduxStore

@c @implementation
public func rdx_store_keep_history(_ store: OpaquePointer?, _ count: Int) -> rdx_status {
    status { () throws(StoreError) in
        try CStoreHandle.with(store) { (handle) throws(StoreError) in
            handle.core.keepHistory(count)
        }
    }
}

@c @implementation
public func rdx_store_history_versions(
    _ store: OpaquePointer?, _ versions: UnsafeMutablePointer<UInt64>?, _ capacity: Int
) -> Int {
    recording(0) { () throws(StoreError) -> Int in
        return try CStoreHandle.with(store) { (handle) throws(StoreError) -> Int in
            let kept = handle.core.historyVersions
            if capacity > 0 {
                let versions = try CInput.required(versions, "versions")
                for (index, version) in kept.prefix(capacity).enumerated() { versions[index] = version }
            }
            return kept.count
        }
    }
}

@c @implementation
public func rdx_store_state_at_version(_ store: OpaquePointer?, _ version: UInt64) -> OpaquePointer? {
    recording(nil) { () throws(StoreError) -> OpaquePointer? in
        return try CStoreHandle.with(store) { (handle) throws(StoreError) in
            try handle.core.state(at: version)
        }
    }
}

@c @implementation
public func rdx_store_restore_version(_ store: OpaquePointer?, _ version: UInt64) -> rdx_status {
    status { () throws(StoreError) in
        try CStoreHandle.with(store) { (handle) throws(StoreError) in
            try handle.core.restore(version: version)
        }
    }
}
