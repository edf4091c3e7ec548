// Package localcluster is `magnetar cluster`: a local cluster for trying
// things out — Apache ZooKeeper (Debian's zookeeper package on Java,
// launched by internal/zkserver), N bookies and M brokers, each a child
// process running this binary's bookie or broker subcommand, with their
// data and logs under one directory.
//
// Run starts them in that order, waiting for each one's ready line, and
// prints its own ("magnetar cluster ready service=... http=...
// metadata=..."). A supervisor then follows the children: a death is
// reported and, with Config.Restart, the child is started again on the
// same ports and directory (after a second, backing off to 30 s while
// it keeps dying). Children get a parent-death signal, so none outlives
// the cluster; when the context ends they are stopped last started
// first (SIGTERM, then SIGKILL after 30 s).
package localcluster
