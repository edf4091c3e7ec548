package main

// magnetar bookie: one bookie serving the bookie protocol over TCP,
// registered in the metadata store, with its cookie checked before its
// directories are opened.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/bookie/server"
	"github.com/magnetar-mq/magnetar/internal/cliflags"
	"github.com/magnetar-mq/magnetar/internal/uring"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
	"github.com/magnetar-mq/magnetar/metadata/zookeeper"
)

type bookieFlags struct {
	metadataURL string
	listen      string
	advertised  string
	dataDir     string
	journalDir  string
	ledgerDirs  []string
	noSync      bool
	writeMode   string
	logLevel    string
	logFormat   string
	bookie      cliflags.BookieTuning
	sec         cliflags.Security
}

func newBookieCmd() *cobra.Command {
	cmd, _ := bookieCommand()
	return cmd
}

// bookieCommand returns the command and the flags it fills.
func bookieCommand() (*cobra.Command, *bookieFlags) {
	f := &bookieFlags{}
	cmd := &cobra.Command{
		Use:   "bookie",
		Short: "Run one bookie serving the bookie protocol (default :3181)",
		Long: `Runs one bookie: the journal in --journal-dir, entry logs and index in
--ledger-dirs, the bookie protocol on --listen. Its id is its advertised
address (--advertised-address, default 127.0.0.1:PORT). It registers as
/ledgers/available/<id> (or .../readonly/<id> while read-only) in the
metadata store given by --metadata-url (zk://host:port[,host:port]/chroot,
or embedded:PATH for an embedded store, single-process only).

A cookie binds the id to the directories (VERSION files and
/ledgers/cookies/<id>): started on other or wiped directories while a
cookie exists for its id, the bookie refuses to start.

When it is serving it prints one line to stdout:
  magnetar bookie ready id=ID`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyConfig(cmd, "bookie"); err != nil {
				return err
			}
			return runBookie(cmd.Context(), *f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.metadataURL, "metadata-url", "", "metadata store: zk://host:port[,host:port]/chroot, or an embedded store file (default DATA/metadata.db)")
	fl.StringVar(&f.listen, "listen", ":3181", "bookie protocol listen address")
	fl.StringVar(&f.advertised, "advertised-address", "", "host:port clients dial, also the bookie id (default 127.0.0.1:PORT)")
	fl.StringVar(&f.dataDir, "data-dir", "./bookie-data", "data directory (journal and ledgers inside it by default)")
	fl.StringVar(&f.journalDir, "journal-dir", "", "journal directory (default DATA/journal)")
	fl.StringSliceVar(&f.ledgerDirs, "ledger-dirs", nil, "ledger directories, comma-separated (default DATA/ledgers)")
	fl.BoolVar(&f.noSync, "journal-no-sync", false, "skip fdatasync in the journal (NOT DURABLE; benchmarks only)")
	fl.StringVar(&f.writeMode, "journal-write-mode", "auto", "journal write path: auto (io_uring for groups of 64 KiB and more, pwrite for smaller ones), uring or pwrite")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fl.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	f.bookie.Register(fl)
	f.sec.Register(fl)
	addConfigFlag(cmd)
	return cmd, f
}

// openBookieMetadata opens a ZooKeeper store for zk:// URLs, else an
// embedded store at the path (an "embedded:" prefix is optional).
func openBookieMetadata(url string, log *slog.Logger) (metadata.Store, error) {
	if strings.HasPrefix(url, "zk://") {
		return zookeeper.Open(url, zookeeper.Options{Logger: log})
	}
	return embedded.Open(strings.TrimPrefix(url, "embedded:"), embedded.Options{Logger: log})
}

func runBookie(ctx context.Context, f bookieFlags) (err error) {
	log, err := newLogger(f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	ctx, stop := signalContext(ctx)
	defer stop()
	if err := f.defaultDirs(); err != nil {
		return err
	}
	mode, err := uring.ParseMode(f.writeMode)
	if err != nil {
		return err
	}
	var closers closeStack
	defer closers.close(log)
	store, err := openBookieMetadata(f.metadataURL, log.With("component", "metadata"))
	if err != nil {
		return fmt.Errorf("metadata store: %w", err)
	}
	closers = append(closers, store.Close)
	id, port, err := f.bookieID()
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cookie, err := server.CheckCookie(cctx, store, vfs.Default, id, f.journalDir, f.ledgerDirs)
	if err != nil {
		if errors.Is(err, server.ErrCookieMismatch) {
			return fmt.Errorf("refusing to start: %w", err)
		}
		return err
	}
	bk, err := f.open(mode, log)
	if err != nil {
		return err
	}
	closers = append(closers, bk.Close)
	srv, err := f.serve(bk, port, log)
	if err != nil {
		return err
	}
	closers = append(closers, srv.Close)
	reg, err := server.Register(cctx, store, id, bk, server.RegisterOptions{Logger: log.With("component", "registration"), Token: cookie.Token()})
	if err != nil {
		return err
	}
	closers = append(closers, reg.Close)
	log.Info("bookie serving", "id", id, "listen", srv.Addr(), "journal", f.journalDir, "ledgers", f.ledgerDirs)
	fmt.Printf("magnetar bookie ready id=%s\n", id)
	<-ctx.Done()
	log.Info("bookie stopping")
	return nil
}

// defaultDirs puts the journal, ledger dirs and embedded metadata store
// that are not given under --data-dir.
func (f *bookieFlags) defaultDirs() error {
	if f.journalDir == "" {
		f.journalDir = filepath.Join(f.dataDir, "journal")
	}
	if len(f.ledgerDirs) == 0 {
		f.ledgerDirs = []string{filepath.Join(f.dataDir, "ledgers")}
	}
	if f.metadataURL == "" {
		f.metadataURL = filepath.Join(f.dataDir, "metadata.db")
		return vfs.Default.MkdirAll(f.dataDir, 0o755)
	}
	return nil
}

// bookieID is the bookie's id (--advertised-address, else
// 127.0.0.1:PORT) and the port of --listen: it listens first, so that
// the id holds the port actually bound.
func (f *bookieFlags) bookieID() (string, int, error) {
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return "", 0, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	if f.advertised != "" {
		return f.advertised, port, nil
	}
	return fmt.Sprintf("127.0.0.1:%d", port), port, nil
}

// serve starts the bookie protocol server on --listen's host and port.
func (f *bookieFlags) serve(bk *bookie.Bookie, port int, log *slog.Logger) (*server.Server, error) {
	host, _, _ := net.SplitHostPort(f.listen)
	tlsCfg, authHook, err := f.sec.BookieServer(log)
	if err != nil {
		return nil, err
	}
	return server.New(bk, server.Options{Addr: net.JoinHostPort(host, fmt.Sprint(port)), Logger: log.With("component", "server"),
		TLS: tlsCfg, Auth: authHook})
}

// open opens the bookie's storage (journal, entry logs, index).
func (f *bookieFlags) open(mode uring.Mode, log *slog.Logger) (*bookie.Bookie, error) {
	bo := bookie.Options{
		FS: vfs.Default, JournalDir: f.journalDir, LedgerDirs: f.ledgerDirs,
		JournalNoSync: f.noSync, JournalWriteMode: mode, Logger: log.With("component", "bookie"),
	}
	f.bookie.Apply(&bo)
	bk, err := bookie.Open(bo)
	if err != nil {
		return nil, fmt.Errorf("bookie: %w", err)
	}
	return bk, nil
}

// closeStack closes what a process opened, last opened first.
type closeStack []func() error

// close runs the closers (a pointer: deferred before any is added).
func (c *closeStack) close(log *slog.Logger) {
	for i := len(*c) - 1; i >= 0; i-- {
		if err := (*c)[i](); err != nil {
			log.Error("close", "err", err)
		}
	}
}
