// The one mapping between the core's kinds of failure and the statuses of include/reduxstore.h,
// shared by every C face (libreduxstore.so and the libraries layered over it).
public import CReduxStoreAPI
public import ReduxStore

extension StoreError.Kind {
    /// The C status of this kind of failure.
    @inlinable package var status: rdx_status {
        switch self {
        case .invalidArgument: RDX_EINVAL
        case .parse: RDX_EPARSE
        case .decode, .encode: RDX_EDECODE
        case .limit: RDX_ELIMIT
        case .io: RDX_EIO
        case .corrupt: RDX_ECORRUPT
        case .outOfMemory: RDX_ENOMEM
        }
    }

    /// The kind of failure a C status other than `RDX_OK` stands for (`.invalidArgument` for a
    /// value the header does not name).
    @inlinable package init(_ status: rdx_status) {
        switch status {
        case RDX_EPARSE: self = .parse
        case RDX_EDECODE: self = .decode
        case RDX_ELIMIT: self = .limit
        case RDX_EIO: self = .io
        case RDX_ECORRUPT: self = .corrupt
        case RDX_ENOMEM: self = .outOfMemory
        default: self = .invalidArgument
        }
    }
}
