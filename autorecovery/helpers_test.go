package autorecovery_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/autorecovery"
	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/bookie/server"
	"github.com/magnetar-mq/magnetar/internal/testenv"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
	"github.com/magnetar-mq/magnetar/protocol/bkproto"
)

// switchable is a bookie client that can be taken down: every call then
// fails with bkproto.ErrIO, as a dead bookie's connection would.
type switchable struct {
	*server.Local
	down atomic.Bool
}

func (s *switchable) AddEntry(l, e int64, key, entry []byte, recovery bool, done func(error)) {
	if s.down.Load() {
		done(fmt.Errorf("%w: bookie down", bkproto.ErrIO))
		return
	}
	s.Local.AddEntry(l, e, key, entry, recovery, done)
}

func (s *switchable) ReadEntry(ctx context.Context, l, e int64, fence bool, key []byte) ([]byte, error) {
	if s.down.Load() {
		return nil, fmt.Errorf("%w: bookie down", bkproto.ErrIO)
	}
	return s.Local.ReadEntry(ctx, l, e, fence, key)
}

func (s *switchable) ReadLAC(ctx context.Context, l int64) (int64, []byte, error) {
	if s.down.Load() {
		return 0, nil, fmt.Errorf("%w: bookie down", bkproto.ErrIO)
	}
	return s.Local.ReadLAC(ctx, l)
}

// cluster is n in-process bookies, each registered under
// /ledgers/available by a store handle of its own (its session), and a
// ledger client placing ledgers on the registered ones.
type cluster struct {
	t       *testing.T
	dbPath  string
	store   metadata.Store // the clients' session
	bookies []*bookie.Bookie
	clients []*switchable
	regs    []*embedded.Store // the bookies' sessions; nil once killed
	ids     []string
	res     *ledger.StaticResolver
	lc      *ledger.Client
}

func newCluster(t *testing.T, n int) *cluster {
	t.Helper()
	c := &cluster{t: t, dbPath: filepath.Join(t.TempDir(), "meta.db"), res: ledger.NewStaticResolver(nil)}
	c.store = c.openStore()
	for range n {
		c.addBookie()
	}
	lc, err := ledger.NewClient(c.store, c.res, ledger.Options{SpeculativeReadTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lc.Close() })
	c.lc = lc
	return c
}

func (c *cluster) openStore() *embedded.Store {
	c.t.Helper()
	s, err := embedded.Open(c.dbPath, embedded.Options{})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { s.Close() })
	return s
}

func (c *cluster) addBookie() string {
	c.t.Helper()
	dir := c.t.TempDir()
	b, err := bookie.Open(bookie.Options{
		FS: vfs.NewOS(), JournalDir: dir + "/journal", LedgerDirs: []string{dir + "/ledgers"},
		WriteCacheSize: 4 << 20, DiskCheckInterval: -1, GCInterval: -1, JournalMaxGroupWait: -1,
	})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { b.Close() })
	id := fmt.Sprintf("127.0.0.1:%d", 3181+len(c.ids))
	sw := &switchable{Local: server.NewLocal(b)}
	c.res.Set(id, sw)
	reg := c.openStore()
	if err := reg.PutEphemeral(ctxT(c.t), ledger.AvailablePath+"/"+id, nil); err != nil {
		c.t.Fatal(err)
	}
	c.bookies = append(c.bookies, b)
	c.clients = append(c.clients, sw)
	c.regs = append(c.regs, reg)
	c.ids = append(c.ids, id)
	return id
}

// kill takes bookie id down: its registration goes (session closed) and
// its client fails every call.
func (c *cluster) kill(id string) {
	c.t.Helper()
	i := c.index(id)
	c.clients[i].down.Store(true)
	if err := c.regs[i].Close(); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) index(id string) int {
	for i, b := range c.ids {
		if b == id {
			return i
		}
	}
	c.t.Fatalf("no bookie %s", id)
	return -1
}

func (c *cluster) start(opts autorecovery.Options) *autorecovery.Service {
	c.t.Helper()
	if opts.PollInterval == 0 {
		opts.PollInterval = 50 * time.Millisecond
	}
	if opts.MinBackoff == 0 {
		opts.MinBackoff = 20 * time.Millisecond
	}
	if opts.OpenLedgerGrace == 0 {
		opts.OpenLedgerGrace = time.Hour
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(tWriter{c.t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	s, err := autorecovery.Start(c.openStore(), c.lc, c.res, opts)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { s.Close() })
	return s
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func payload(l, e int64) []byte { return fmt.Appendf(nil, "ledger %d entry %d payload", l, e) }

// write creates a ledger at E/Qw/Qa and adds n entries.
func (c *cluster) write(e, qw, qa, n int) *ledger.WriteHandle {
	c.t.Helper()
	h, err := c.lc.Create(ctxT(c.t), ledger.CreateOptions{Ensemble: e, WriteQuorum: qw, AckQuorum: qa, Password: []byte("pw")})
	if err != nil {
		c.t.Fatal(err)
	}
	c.add(h, n)
	return h
}

func (c *cluster) add(h *ledger.WriteHandle, n int) {
	c.t.Helper()
	for range n {
		e := h.LastAddConfirmed() + 1
		got, err := h.Add(ctxT(c.t), payload(h.ID(), e))
		if err != nil {
			c.t.Fatalf("add %d: %v", e, err)
		}
		if got != e {
			c.t.Fatalf("add got id %d, want %d", got, e)
		}
	}
}

// waitFor polls cond (cheap metadata reads) until it holds or 20 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, 20*time.Second, what, cond)
}

// checkCopies verifies that every entry 0..last of ledger id is stored,
// intact, on every bookie of its write set in the current metadata, and
// that no lost bookie is left in the ensembles.
func (c *cluster) checkCopies(id, last int64, lost string) {
	c.t.Helper()
	m, _, err := c.lc.Metadata(ctxT(c.t), id)
	if err != nil {
		c.t.Fatal(err)
	}
	for e := int64(0); e <= last; e++ {
		seg := m.EnsembleAt(e)
		for k := 0; k < m.WriteQuorum; k++ {
			b := seg.Bookies[(e+int64(k))%int64(m.EnsembleSize)]
			if b == lost {
				c.c(id, e, "still on lost bookie %s (ensembles %+v)", b, m.Ensembles)
			}
			frame, err := c.bookies[c.index(b)].ReadEntry(id, e)
			if err != nil {
				c.c(id, e, "bookie %s: %v", b, err)
			}
			h, p, err := bkproto.DecodeEntry(frame)
			if err != nil || h.EntryID != e || string(p) != string(payload(id, e)) {
				c.c(id, e, "bookie %s: header %+v err %v payload %q", b, h, err, p)
			}
		}
	}
}

func (c *cluster) c(id, e int64, f string, args ...any) {
	c.t.Helper()
	c.t.Fatalf("ledger %d entry %d: %s", id, e, fmt.Sprintf(f, args...))
}

func marks(t *testing.T, s metadata.Store) map[int64]autorecovery.Mark {
	t.Helper()
	m, err := autorecovery.UnderReplicated(ctxT(t), s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func contains(m ledger.Metadata, b string) bool {
	for _, s := range m.Ensembles {
		for _, x := range s.Bookies {
			if x == b {
				return true
			}
		}
	}
	return false
}

// tWriter sends log lines to t.Log.
type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
