package main

// `magnetar cluster`: the flags of the local cluster (package
// localcluster runs it).

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/internal/zkserver"
	"github.com/magnetar-mq/magnetar/localcluster"
)

// newClusterCmd builds `magnetar cluster` (package localcluster).
func newClusterCmd() *cobra.Command {
	var cfg localcluster.Config
	var quorum quorumFlags
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Start a local cluster: ZooKeeper, bookies and brokers (Ctrl-C stops all)",
		Long: `Starts ZooKeeper on 127.0.0.1:--zk-port (Debian's zookeeper package and
java are needed: apt-get install zookeeper default-jre-headless), --bookies
bookie processes on ports --bookie-base-port, +1, ... and --brokers broker
processes on the ports of --listen and --http, +1, ..., each a child of this
process with its data and log under --data-dir. A bookie's id is its
address, bound to its directory by a cookie: restart the cluster on the same
--data-dir with the same ports (0 picks free ports, for a one-off run).

When everything serves it prints (service lists every broker, a URL Pulsar
clients accept as is):
  magnetar cluster ready service=pulsar://HOST:PORT[,HOST:PORT...] http=http://HOST:PORT metadata=zk://127.0.0.1:PORT/magnetar
A child that dies is reported on stderr and the others keep serving (that
is what a local cluster is for: watch failover); with --restart it is
started again on the same ports and directory. SIGINT or SIGTERM stops the
brokers, then the bookies, then ZooKeeper.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			cfg.Ensemble, cfg.WriteQuorum, cfg.AckQuorum = quorum.ensemble, quorum.writeQuorum, quorum.ackQuorum
			return localcluster.Run(ctx, cfg)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfg.DataDir, "data-dir", "./magnetar-cluster", "directory for ZooKeeper, bookie data and logs")
	fl.IntVar(&cfg.ZKPort, "zk-port", 2181, "ZooKeeper client port on 127.0.0.1 (0: a free port)")
	fl.StringVar(&cfg.ZKJar, "zk-jar", zkserver.Jar, "ZooKeeper server jar")
	fl.IntVar(&cfg.Bookies, "bookies", 3, "number of bookies")
	fl.IntVar(&cfg.BookieBasePort, "bookie-base-port", 3181, "port of the first bookie, the next ones follow (0: free ports)")
	fl.StringVar(&cfg.Listen, "listen", ":6650", "broker Pulsar protocol listen address")
	fl.StringVar(&cfg.HTTP, "http", ":8080", "broker admin/lookup HTTP listen address")
	fl.StringVar(&cfg.AdvertisedHost, "advertised-host", "localhost", "host name the broker gives clients in lookups")
	fl.BoolVar(&cfg.NoSync, "journal-no-sync", false, "bookies skip fdatasync (NOT DURABLE; for quick experiments)")
	fl.IntVar(&cfg.Brokers, "brokers", 1, "number of brokers")
	fl.BoolVar(&cfg.Restart, "restart", false, "start a child that died again (same ports, same directory)")
	fl.DurationVar(&cfg.SessionTimeout, "zk-session-timeout", 6*time.Second, "brokers' ZooKeeper session timeout: how long a dead broker's bundles stay assigned to it")
	quorum.register(cmd)
	return cmd
}
