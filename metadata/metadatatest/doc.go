// Package metadatatest is the conformance suite every metadata.Store backend
// passes (metadata/embedded, metadata/zookeeper), in the manner of pebble's
// vfs/vfstest and testing/fstest.
//
//	func TestConformance(t *testing.T) {
//		metadatatest.Run(t, func(t *testing.T) metadata.Store { ... })
//	}
//
// open must return a new client (a session of its own) of a store that is
// empty for each distinct *testing.T it is given and shared between calls
// with the same *testing.T: the ephemeral and watch tests open two clients
// and check that each sees the other's writes. The suite closes the stores it
// opens; open may also register t.Cleanup to close them (Close must be
// idempotent).
//
// Ephemeraler and Watcher are optional capabilities: their tests run only if
// the store implements them, and are logged as not applicable otherwise.
//
// Every wait for a watch event is bounded (EventTimeout); no test sleeps.
package metadatatest
