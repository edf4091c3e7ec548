// Package zookeeper is the metadata.Store of clustered Magnetar, on Apache
// ZooKeeper through github.com/go-zookeeper/zk. It implements
// metadata.Store, metadata.Ephemeraler and metadata.Watcher.
//
//	s, err := zookeeper.Open("zk://zk1:2181,zk2:2181/magnetar/cluster-a", zookeeper.Options{})
//
// # Mapping
//
//   - Paths are relative to the chroot in the URL, created at Open if
//     missing. go-zookeeper has no chroot support; the Store prefixes paths
//     itself and strips the prefix from CreateSequential's result.
//   - metadata.Version is the node's ZooKeeper data version (0 on create,
//     +1 per setData). AnyVersion is -1 on the wire.
//   - Put(AnyVersion) is setData(-1), falling back to create (with missing
//     parents) on NoNode and back to setData on NodeExists. Put(NotExists)
//     is create with missing parents. Put(v) is setData(v): it never
//     creates.
//   - CreateSequential is a PERSISTENT_SEQUENTIAL create: ZooKeeper appends
//     the parent's cversion as 10 digits.
//   - PutEphemeral is an EPHEMERAL create. The Store remembers the path and
//     value until Delete or Close.
//   - Children are sorted on the client (ZooKeeper returns them unordered).
//     Without a chroot, Children("/") includes ZooKeeper's own "zookeeper"
//     node: deployments should always use a chroot.
//   - Errors: NoNode -> ErrNotFound, NodeExists -> ErrExists, BadVersion ->
//     ErrBadVersion, NotEmpty -> ErrNotEmpty, NoChildrenForEphemerals ->
//     ErrEphemeralParent, connection loss / no server / session expired ->
//     ErrUnavailable, anything after Close -> ErrClosed. The go-zookeeper
//     error stays in the chain.
//
// Requests are synchronous; go-zookeeper takes no context, so a context is
// checked before a request is sent, not while it is in flight. While the
// client is disconnected, requests fail with ErrUnavailable within about a
// second.
//
// # Sessions
//
// One Store is one session (Options.SessionTimeout, default 10 s). After a
// connection loss shorter than the timeout the client resumes the session:
// ephemeral nodes and watches survive. If the session expires, the client
// library opens a new one at once; the Store then re-creates its ephemeral
// nodes on it (a node meanwhile created by another session is left alone
// and forgotten) and only then tells every watch EventSessionExpired. Other
// clients see such a node deleted and created again, as BookKeeper's bookie
// re-registration looks.
//
// The Store uses its own host provider: go-zookeeper's default pauses a
// second before every reconnect to a single-server ensemble, which would
// also fail the requests queued meanwhile. It also caps every socket
// deadline the library sets at max(SessionTimeout / number of servers, 1 s),
// and the connect handshake at a third of that: go-zookeeper would
// otherwise wait ten times the session timeout for a connect response, and
// a ZooKeeper server that is starting up was seen to accept a connection
// and never answer it. A quick retry keeps the session.
//
// # Watches
//
// ZooKeeper watches fire once. Each Watch keeps an exists/data watch on its
// path and, while the node exists, a children watch, re-arming each after
// it fires and before calling fn. Changes between the firing and the
// re-arming are coalesced; a change of existence in that window is reported
// as its own EventCreated or EventDeleted, so fn always learns the final
// existence. After an expiry the watch re-arms on the new session and
// reports EventSessionExpired instead of the changes it may have missed;
// it does so whichever it handles first, the old session's
// EventNotWatching or the Store's new generation. A watch remembers the
// generation its oldest armed channel was armed in: if the session was
// replaced since, it drops all its channels and re-arms them on the current
// session, so a late EventNotWatching of the old session is never taken for
// the loss of the new one. A children watch whose
// node was deleted is re-armed when the exists watch saw the node
// re-created, even if the child watch's own NodeDeleted arrives later.
// TestWatchNoLostChildren and TestWatchSessionExpiryWhileBusy check that a
// callback re-listing on every event always ends on the final state.
//
// # Goroutines
//
// Besides go-zookeeper's own, a Store runs one session monitor and one
// goroutine per Watch; Close ends the session and waits for all of them.
package zookeeper
