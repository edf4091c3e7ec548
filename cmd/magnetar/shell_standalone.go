package main

// The cluster tools on a stopped standalone's data directory
// (--data-dir): the standalone keeps its metadata in DATA/metadata.db and
// its one bookie ("standalone-bookie", which never registers and has no
// network address) in DATA/journal and DATA/ledgers. With --data-dir the
// tools open both in-process, so listbookies, listledgers,
// ledgermetadata, readledger, bookiesanity and simpletest work on it as
// on a cluster. The directory must not be in use: the metadata file is
// locked by a running standalone, and the tool says so. With
// --metadata-url on a standalone's metadata file, a tool that needs the
// bookie says to use --data-dir instead of failing to dial it.

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/bookie/server"
	"github.com/magnetar-mq/magnetar/internal/stack"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
	"github.com/magnetar-mq/magnetar/tools"
)

// standaloneNode is a stopped standalone opened by a shell tool.
type standaloneNode struct {
	store metadata.Store
	bk    *bookie.Bookie
	lc    *ledger.Client
	dir   string
}

func openStandaloneNode(dir string, log *slog.Logger) (*standaloneNode, error) {
	n := &standaloneNode{dir: dir}
	var err error
	n.store, err = embedded.Open(filepath.Join(dir, "metadata.db"), embedded.Options{LockTimeout: time.Second, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("%s: %w (is a standalone running on it? the shell tools open a standalone's data directory only while it is stopped)", dir, err)
	}
	n.bk, err = bookie.Open(bookie.Options{
		FS: vfs.Default, JournalDir: filepath.Join(dir, "journal"), LedgerDirs: []string{filepath.Join(dir, "ledgers")},
		Logger: log, DiskCheckInterval: -1, GCInterval: -1,
	})
	if err != nil {
		n.close()
		return nil, fmt.Errorf("open the standalone's bookie in %s: %w", dir, err)
	}
	res := ledger.NewStaticResolver(map[string]ledger.BookieClient{stack.StandaloneBookieID: server.NewLocal(n.bk)})
	n.lc, err = ledger.NewClient(n.store, res, ledger.Options{
		Bookies: []string{stack.StandaloneBookieID}, ReadOnly: func(string) bool { return n.bk.IsReadOnly() }, Logger: log,
	})
	if err != nil {
		n.close()
		return nil, err
	}
	return n, nil
}

func (n *standaloneNode) cluster() tools.Cluster {
	st := "writable"
	if n.bk.IsReadOnly() {
		st = "readonly"
	}
	res := ledger.NewStaticResolver(map[string]ledger.BookieClient{stack.StandaloneBookieID: server.NewLocal(n.bk)})
	return tools.Cluster{Store: n.store, Ledgers: n.lc, Resolver: res,
		Fixed: tools.BookieStates{{ID: stack.StandaloneBookieID, State: st + ",local"}}}
}

func (n *standaloneNode) close() error {
	var errs []error
	if n.lc != nil {
		errs = append(errs, n.lc.Close())
	}
	if n.bk != nil {
		errs = append(errs, n.bk.Close())
	}
	if n.store != nil {
		errs = append(errs, n.store.Close())
	}
	return errors.Join(errs...)
}

// standaloneHint is a BookieResolver that explains, instead of dialling,
// that the standalone's bookie is reached through --data-dir.
type standaloneHint struct{ ledger.BookieResolver }

func (r standaloneHint) Client(id string) (ledger.BookieClient, error) {
	if id == stack.StandaloneBookieID {
		return nil, fmt.Errorf("bookie %q is a standalone's in-process bookie, not reachable over the network: stop the standalone and run the tool with --data-dir DATA instead of --metadata-url", id)
	}
	return r.BookieResolver.Client(id)
}

// shellCluster is the binary's shell.Opener: the cluster named by
// --metadata-url (bookies over the network) or a stopped standalone's
// --data-dir.
type shellCluster struct {
	meta    metadataFlags
	dataDir string
}

func (s *shellCluster) Register(c *cobra.Command) {
	s.meta.register(c)
	c.Flags().StringVar(&s.dataDir, "data-dir", "", "a stopped standalone's data directory (instead of --metadata-url: opens its metadata and its bookie in-process; the standalone must be stopped)")
	c.MarkFlagsMutuallyExclusive("metadata-url", "data-dir")
}

func (s *shellCluster) Open() (tools.Cluster, func() error, error) {
	log := slog.New(slog.DiscardHandler)
	if s.dataDir != "" {
		n, err := openStandaloneNode(s.dataDir, log)
		if err != nil {
			return tools.Cluster{}, nil, err
		}
		return n.cluster(), n.close, nil
	}
	n, err := openClusterNode(s.meta, log)
	if err != nil {
		return tools.Cluster{}, nil, err
	}
	return tools.Cluster{Store: n.store, Ledgers: n.lc, Resolver: standaloneHint{n.resolver}}, n.close, nil
}
