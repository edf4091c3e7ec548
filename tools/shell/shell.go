package shell

import (
	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/tools"
)

// Opener opens the cluster a cluster tool works on. The binary provides
// it: it knows the metadata store's flags and a standalone's layout.
type Opener interface {
	// Register adds the flags that name the cluster (--metadata-url, ...).
	Register(c *cobra.Command)
	// Open opens the cluster they name; closeCluster releases it.
	Open() (c tools.Cluster, closeCluster func() error, err error)
}

// NewCommand builds `magnetar shell` with its bookie directory tools and
// cluster tools; each cluster tool gets an Opener of its own from
// newOpener.
func NewCommand(newOpener func() Opener) *cobra.Command {
	c := &cobra.Command{
		Use:   "shell",
		Short: "Ops tools on bookie directories and ledgers",
	}
	o := newOpener
	c.AddCommand(readJournalCmd(), readEntryLogCmd(), rebuildIndexCmd(), ledgerStatsCmd(),
		listBookiesCmd(o), listLedgersCmd(o), ledgerMetadataCmd(o), readLedgerCmd(o),
		listUnderReplicatedCmd(o), recoverCmd(o), decommissionCmd(o), bookieSanityCmd(o), simpleTestCmd(o))
	return c
}
