// Command magnetar is the one Magnetar binary: standalone, broker, bookie,
// admin, shell and perf subcommands. Each subcommand is built by its own
// constructor; newRootCmd puts them together.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/admincli"
	benchbookie "github.com/magnetar-mq/magnetar/bench/bookie"
	"github.com/magnetar-mq/magnetar/bench/perf"
	"github.com/magnetar-mq/magnetar/clientcli"
	"github.com/magnetar-mq/magnetar/internal/version"
	"github.com/magnetar-mq/magnetar/tokencli"
	"github.com/magnetar-mq/magnetar/tools/shell"
)

// newRootCmd builds the magnetar command with all its subcommands.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "magnetar",
		Short:         "Magnetar: a Pulsar-compatible messaging platform with its own BookKeeper-style storage",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get().String(),
	}
	root.SetVersionTemplate("magnetar {{.Version}}\n")
	root.AddCommand(
		newStandaloneCmd(), newBrokerCmd(), newBookieCmd(), newProxyCmd(), newClusterCmd(),
		newAutorecoveryCmd(), newFunctionsWorkerCmd(), newFunctionsInstanceCmd(),
		admincli.NewCommand(), clientcli.NewCommand(), perf.NewCommand(), tokencli.NewCommand(), newConfigCmd(),
		shell.NewCommand(func() shell.Opener { return &shellCluster{} }), newBenchCmd(), newVersionCmd())
	return root
}

// newBenchCmd groups the storage benchmarks.
func newBenchCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "bench",
		Short: "Storage benchmarks (bookie write path)",
	}
	c.AddCommand(benchbookie.NewCommand())
	return c
}

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "magnetar:", err)
		os.Exit(1)
	}
}
