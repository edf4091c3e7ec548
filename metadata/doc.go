// Package metadata defines the coordination store Magnetar keeps its
// metadata in (ledger records, bookie registration, managed-ledger and
// cursor records, topic ownership): the Store interface and its optional
// capabilities Ephemeraler and Watcher (store.go), path helpers (path.go)
// and the errors every backend returns (store.go, errors.go).
//
// # Model
//
// The store is a tree of nodes named by slash-separated absolute paths, as in
// ZooKeeper. Valid paths are "/" or "/" followed by non-empty components
// other than "." and "..", with no trailing slash and no NUL byte
// (ValidatePath); anything else gives ErrInvalidPath. "/" always exists and
// cannot be deleted. Each node has a value and a Version: 0 when created,
// +1 on every write of its value. Deleting and re-creating a node starts
// again at 0.
//
// Writes are compare-and-set on the version (see Store.Put): callers read,
// decide, and write with the version they read; on ErrBadVersion they
// re-read, re-validate and retry (docs/replication.md section 3). Put with
// AnyVersion or NotExists and CreateSequential create missing parents as
// empty persistent nodes; a CAS Put never creates anything. Delete refuses a
// node with children (ErrNotEmpty). Nodes may not be created under an
// ephemeral node (ErrEphemeralParent).
//
// CreateSequential appends to the name prefix a 10-digit, zero-padded number
// from a per-parent counter: unique and increasing under that parent, never
// reused.
//
// # Sessions, ephemeral nodes, watches
//
// A store object is one client session. An ephemeral node
// (Ephemeraler.PutEphemeral) belongs to the session that created it and
// disappears when that session ends: Close, death of the process, or, with
// ZooKeeper, session expiry, after which the backend re-creates the node on
// its new session and delivers EventSessionExpired to every watch. A session
// may update its own ephemeral node by calling PutEphemeral again; another
// session's node, or a persistent node, gives ErrExists. Delete removes an
// ephemeral node for good (it is not re-created). A process restarted
// quickly may find the node of its previous ZooKeeper session still there
// until that session times out: PutEphemeral gives ErrExists; watch the
// path for EventDeleted and try again, as a restarted bookie does.
//
// Watcher.Watch reports changes to one path's value or existence and to its
// list of children (not to the values of its children). Callbacks run on a
// goroutine of the watch, one at a time, in order. A callback must treat an
// event as "something changed, re-read": ZooKeeper's one-shot watches may
// coalesce several changes into one event, and EventSessionExpired means
// any number of changes may have been missed.
//
// # Backends
//
//   - metadata/embedded: a bbolt file in the data directory; the standalone
//     default. One process; handles opened by the same process share it,
//     each with its own session.
//   - metadata/zookeeper: Apache ZooKeeper, for clusters.
//
// Both pass the conformance suite in metadata/metadatatest. Only cmd and
// tests choose a backend; everything else takes a metadata.Store.
//
// # Errors and retries
//
// Values are at most MaxValueSize bytes (ErrTooLarge), whatever the
// backend.
//
// ErrNotFound, ErrExists, ErrBadVersion, ErrNotEmpty, ErrInvalidPath,
// ErrEphemeralParent and ErrTooLarge describe the tree or the request and are final for the request as
// made. ErrUnavailable (connection loss) is retryable, with the caveat in
// its doc comment that a write may already have been applied. ErrClosed is
// final. A context that is already done makes an operation fail with the
// context's error before anything is sent; the ZooKeeper backend does not
// abandon a request once it is on the wire.
package metadata
