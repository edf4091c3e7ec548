// Package zkserver runs a real Apache ZooKeeper server: Debian's
// zookeeper package (3.8, /usr/share/java/zookeeper.jar) on Java, as
// ZooKeeperServerMain with a zoo.cfg of our own bound to 127.0.0.1, no
// systemd. `magnetar cluster` starts its ZooKeeper from WriteConfig and
// JavaArgs; internal/zktest wraps Launch for tests. This package does not
// import testing, so the magnetar binary may link it.
//
//	s, err := zkserver.Launch(dir)   // free port, test settings; s.Addr()
//	s.Stop(); s.Restart()            // same port, same data
//
// Settings (WriteConfig): tickTime 500 ms, session timeouts allowed from
// 1 s to 60 s, 4-letter words ruok/srvr/stat/mntr/conf, admin server off;
// extra zoo.cfg lines are appended (Launch adds forceSync=no: tests do not
// survive power loss; the cluster keeps ZooKeeper's default, durable
// sync). Readiness is polled (bounded by StartTimeout) with srvr, which,
// unlike ruok -> imok, also waits for the database to be loaded. On Linux
// the JVM gets SIGKILL when the thread that started it exits
// (Pdeathsig), so a killed parent leaves no server behind.
package zkserver
