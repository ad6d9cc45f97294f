/// What every ``Store`` can do whatever its state type: the face used where a block that runs
/// elsewhere must not capture the state's type.
protocol AnyStore: AnyObject, Sendable {
    var version: UInt64 { get }
    @discardableResult func removeObserver(_ token: ObserverToken) -> Bool
    func drainEnqueued(upTo target: UInt64?)
    func flush()
    func save(to path: String) throws(StoreError)
}

extension Store: AnyStore {}
