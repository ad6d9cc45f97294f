internal import CReduxStoreAPI
import ReduxStore
import Synchronization

/// What the C functions need of a store, whatever kind it is: a store C created around a json-c
/// tree, or a Swift `Store<State>` handed to C.
protocol CStoreBackend: AnyObject, Sendable {
    /// Applies (`enqueue` false) or enqueues an action. `identifier` and `payload` are borrowed
    /// and already checked; what is kept past the call is copied.
    func dispatch(
        identifier: UnsafePointer<CChar>, payload: OpaquePointer?, enqueue: Bool
    ) throws(StoreError)
    /// A NEW json-c tree of the state.
    func currentState() throws(StoreError) -> OpaquePointer?
    var version: UInt64 { get }
    func flush()
    func addObserver(
        name: StoreNotification.Name?, using block: @escaping @Sendable (StoreNotification) -> Void
    ) -> ObserverToken
    func removeObserver(_ token: ObserverToken) -> Bool
    func save(to path: String) throws(StoreError)
}

/// The object behind an `rdx_store *`: reference-counted by `rdx_store_retain` and
/// `rdx_store_release` through `Unmanaged`.
final class CStoreHandle: Sendable {
    let backend: any CStoreBackend
    /// The observers C registered through this handle. They are removed when the handle goes, so
    /// a Swift store that outlives its C handle never calls C with a freed `rdx_store *`.
    private let tokens = Mutex<Set<ObserverToken>>([])

    init(_ backend: any CStoreBackend) { self.backend = backend }

    deinit {
        // The last release waits for what C enqueued, so no reducer or observer of C's runs
        // after rdx_store_release() returned.
        backend.flush()
        for token in tokens.withLock({ $0 }) { _ = backend.removeObserver(token) }
    }

    /// A NEW reference as an `rdx_store *`.
    func retainedPointer() -> OpaquePointer {
        OpaquePointer(Unmanaged.passRetained(self).toOpaque())
    }

    /// The handle behind a pointer C passed in, borrowed for the call; `RDX_EINVAL` for NULL.
    static func from(_ pointer: OpaquePointer?) throws(StoreError) -> CStoreHandle {
        guard let pointer else { throw StoreError(.invalidArgument, "store is NULL") }
        return Unmanaged<CStoreHandle>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue()
    }

    /// Registers a C observer; it is called with this handle as its `rdx_store *`.
    func addObserver(
        name: UnsafePointer<CChar>?, observer: @escaping rdx_observer_fn,
        context: UnsafeMutableRawPointer?
    ) -> ObserverToken {
        let call = CObserverCall(
            function: observer, context: context,
            store: OpaquePointer(Unmanaged.passUnretained(self).toOpaque()))
        let name = name.map { StoreNotification.Name(String(cString: $0)) }
        let token = backend.addObserver(name: name) { notification in call(notification) }
        tokens.withLock { _ = $0.insert(token) }
        return token
    }

    /// Removes an observer registered through this handle; `false` for any other token.
    func removeObserver(_ token: ObserverToken) -> Bool {
        guard tokens.withLock({ $0.remove(token) }) != nil else { return false }
        return backend.removeObserver(token)
    }
}

/// A C observer and what it is called with.
struct CObserverCall: @unchecked Sendable {
    // @unchecked: C promised the function may be called from any thread with this context; the
    // store pointer is the handle, which outlives its observers.
    let function: rdx_observer_fn
    let context: UnsafeMutableRawPointer?
    let store: OpaquePointer

    func callAsFunction(_ notification: StoreNotification) {
        if notification.name == .stateDidChange {
            function(store, StaticText.stateDidChange, notification.version, context)
        } else {
            notification.name.rawValue.withCString {
                function(store, $0, notification.version, context)
            }
        }
    }
}
