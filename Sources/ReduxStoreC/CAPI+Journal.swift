// The C functions of include/reduxstore.h's journal part. Thin: checks, then the core.
internal import CJSONC
public import CReduxStoreAPI
@_spi(Bindings) import ReduxStore

@c @implementation
public func rdx_store_start_journal(
    _ store: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ recordPatches: Bool
) -> rdx_status {
    status { () throws(StoreError) in
        try CStoreHandle.with(store) { (handle) throws(StoreError) in
            let path = String(cString: try CInput.required(path, "path"))
            try handle.core.startJournal(at: path, recordPatches: recordPatches)
        }
    }
}

@c @implementation
public func rdx_store_stop_journal(_ store: OpaquePointer?) -> rdx_status {
    status { () throws(StoreError) in
        try CStoreHandle.with(store) { (handle) throws(StoreError) in
            try handle.core.stopJournal()
        }
    }
}

@c @implementation
public func rdx_store_flush_journal(_ store: OpaquePointer?) -> rdx_status {
    status { () throws(StoreError) in
        try CStoreHandle.with(store) { (handle) throws(StoreError) in
            try handle.core.flushJournal()
        }
    }
}
