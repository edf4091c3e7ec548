package metadata

import "errors"

// Errors added to the ones declared with the Store contract in store.go.
// Callers use errors.Is.
var (
	// ErrInvalidPath: a path that is not absolute, has an empty, "." or ".."
	// component, a trailing slash or a NUL byte, or an operation the path
	// does not allow (deleting "/"). Retrying is pointless.
	ErrInvalidPath = errors.New("metadata: invalid path")
	// ErrUnavailable: the backend could not be reached (connection loss, no
	// server). Reads may be retried. A write that fails with it may or may
	// not have been applied: re-read before retrying a create or a
	// compare-and-set, which would otherwise report ErrExists or
	// ErrBadVersion because of its own earlier write.
	ErrUnavailable = errors.New("metadata: store unavailable")
	// ErrEphemeralParent: a node cannot be created under an ephemeral node
	// (ZooKeeper's rule, kept by every backend). Final.
	ErrEphemeralParent = errors.New("metadata: ephemeral nodes cannot have children")
	// ErrTooLarge: a value longer than MaxValueSize. Final.
	ErrTooLarge = errors.New("metadata: value too large")
)

// MaxValueSize is the largest value every backend accepts: ZooKeeper's
// default jute.maxbuffer (1 MiB) less room for the rest of the request. A
// larger one makes a ZooKeeper server drop the connection, so all backends
// refuse it with ErrTooLarge before sending anything.
const MaxValueSize = 1000 << 10
