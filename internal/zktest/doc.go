// Package zktest runs a real Apache ZooKeeper server for tests
// (internal/zkserver's Launch: Debian's zookeeper package on Java,
// ZooKeeperServerMain with a zoo.cfg of our own bound to 127.0.0.1, no
// systemd), in t.TempDir().
//
//	addr := zktest.Start(t)            // "127.0.0.1:port"; stopped by t.Cleanup
//
//	srv := zktest.StartServer(t)       // to stop, restart or expire sessions
//	srv.Stop(); srv.Restart()
//	srv.ExpireSession(t, id, passwd)   // ends a client's session now
//
// If java or the jar is missing the test fails (never skips): scripts/test
// installs both (apt-get install zookeeper default-jre-headless).
//
// Server settings and readiness: see internal/zkserver.
//
// # Session expiry
//
// ExpireSession uses the classic trick: it connects a raw client with the
// victim's session id and password (the server moves the session to it),
// and sends closeSession on the same connection. The server then deletes
// the session's ephemeral nodes at once and the victim, on its next
// reconnect, is told its session expired. No sleep past a timeout is
// needed. Clients do not expose their password, so record it with a
// Sessions dialer (go-zookeeper's zk.WithDialer), which reads it from the
// server's connect response.
package zktest
