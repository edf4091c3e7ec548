package cluster

import "errors"

// Errors. Callers use errors.Is.
var (
	// ErrNotOwned: this broker does not (or no longer) serve the bundle.
	// The client must look the topic up again (ServiceNotReady).
	ErrNotOwned = errors.New("cluster: namespace bundle not served by this broker")
	// ErrUnloading: the bundle is being unloaded here; a lookup retried
	// shortly finds the next owner (Pulsar answers MetadataError).
	ErrUnloading = errors.New("cluster: namespace bundle is being unloaded")
	// ErrNoBroker: no live broker can take the bundle (ServiceNotReady).
	ErrNoBroker = errors.New("cluster: no broker available")
	// ErrNoLeader: no leader is elected yet.
	ErrNoLeader = errors.New("cluster: no leader broker")
	// ErrClosed: the service was closed.
	ErrClosed = errors.New("cluster: closed")
)
