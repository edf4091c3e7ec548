// Command magnetar is the one Magnetar binary: standalone, broker, bookie,
// admin, shell and perf subcommands. Each subcommand lives in its own file
// and registers itself on rootCmd from an init function.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

var rootCmd = &cobra.Command{
	Use:           "magnetar",
	Short:         "Magnetar: a Pulsar-compatible messaging platform with its own BookKeeper-style storage",
	SilenceUsage:  true,
	SilenceErrors: true,
}

// shellCmd groups the ops tools on bookies and ledgers.
var shellCmd = &cobra.Command{
	Use:   "shell",
	Short: "Ops tools on bookie directories and ledgers",
}

// benchCmd groups the storage benchmarks.
var benchCmd = &cobra.Command{
	Use:   "bench",
	Short: "Storage benchmarks (bookie write path)",
}

func init() {
	rootCmd.AddCommand(shellCmd, benchCmd)
}

func main() {
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "magnetar:", err)
		os.Exit(1)
	}
}
