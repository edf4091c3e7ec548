package e2e

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/bookie/server"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/internal/zktest"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/zookeeper"
)

// Faults that need a handle on a bookie's internals (its disk usage, its
// ZooKeeper session) use a bookie run in the test process: the same
// bookie.Open, server.New and server.Register that `magnetar bookie` runs,
// on the network next to the bookie processes.

// fullableFS is the OS file system whose DiskUsage reports 99% used while
// full is set (50% otherwise): the bookie's own disk check then sees a
// full disk, as it would on a real one.
type fullableFS struct {
	vfs.FS
	full atomic.Bool
}

func (f *fullableFS) DiskUsage(string) (total, free uint64, err error) {
	if f.full.Load() {
		return 100 << 30, 1 << 30, nil
	}
	return 100 << 30, 50 << 30, nil
}

type inprocBookie struct {
	id    string
	bk    *bookie.Bookie
	reg   *server.Registration
	store *zookeeper.Store
	sess  *zktest.Sessions
}

func (c *testCluster) startInProcessBookie(fs vfs.FS) *inprocBookie {
	c.t.Helper()
	t := c.t
	b := &inprocBookie{sess: &zktest.Sessions{}}
	var err error
	b.store, err = zookeeper.Open(c.url, zookeeper.Options{SessionTimeout: 4 * time.Second, Dialer: b.sess.Dial})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.store.Close() })
	dir := t.TempDir()
	b.bk, err = bookie.Open(bookie.Options{FS: fs, JournalDir: dir + "/journal", LedgerDirs: []string{dir + "/ledgers"},
		WriteCacheSize: 8 << 20, DiskCheckInterval: -1, GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.bk.Close() })
	srv, err := server.New(b.bk, server.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	b.id = srv.Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b.reg, err = server.Register(ctx, b.store, b.id, b.bk, server.RegisterOptions{CheckInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.reg.Close() })
	return b
}

// createOn creates E=3/Qw=2/Qa=2 ledgers until one has bookie b in its
// ensemble (placement is random), closing the others.
func createOn(t *testing.T, lc *ledger.Client, b string) *ledger.WriteHandle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 50 {
		h, err := lc.Create(ctx, ledger.CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Password: []byte("pw")})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(h.Metadata().Ensembles[0].Bookies, b) {
			return h
		}
		if err := h.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("no ledger placed on %s in 50 tries", b)
	return nil
}

// addEntries adds n entries synchronously, checking the ids.
func addEntries(t *testing.T, h *ledger.WriteHandle, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range n {
		e := h.LastAddConfirmed() + 1
		got, err := h.Add(ctx, entryPayload(h.ID(), e))
		if err != nil || got != e {
			t.Fatalf("add %d: id %d, %v", e, got, err)
		}
	}
}

func exists(t *testing.T, s metadata.Store, p string) bool {
	t.Helper()
	ok, err := s.Exists(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// A bookie whose disk fills turns read-only: it re-registers under
// /ledgers/available/readonly, the writer of a ledger on it changes
// ensemble away from it without losing an entry, new ledgers avoid it,
// and it still serves reads. Freeing space makes it writable again.
// (The fill is simulated by the file system's DiskUsage, the input of the
// bookie's own disk check; `magnetar bookie` has no flag for it.)
func TestClusterDiskFullBookie(t *testing.T) {
	c := newTestCluster(t)
	for range 3 {
		c.startBookie("")
	}
	fs := &fullableFS{FS: vfs.NewOS()}
	x := c.startInProcessBookie(fs)
	n := c.clusterClient()
	h := createOn(t, n.lc, x.id)
	addEntries(t, h, 50)

	fs.full.Store(true)
	if err := x.bk.CheckDisks(); err != nil {
		t.Fatal(err)
	}
	if !x.bk.IsReadOnly() {
		t.Fatal("bookie not read-only with a full disk")
	}
	ctx := context.Background()
	if err := x.reg.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if !exists(t, n.store, ledger.ReadOnlyPath+"/"+x.id) || exists(t, n.store, ledger.AvailablePath+"/"+x.id) {
		t.Fatalf("registration %s, want under %s", x.reg.Path(), ledger.ReadOnlyPath)
	}
	addEntries(t, h, 50) // the adds to x fail with EREADONLY: ensemble change
	m := h.Metadata()
	if slices.Contains(m.Last().Bookies, x.id) || len(m.Ensembles) < 2 {
		t.Fatalf("writer still on the read-only bookie: %+v", m.Ensembles)
	}
	for range 5 {
		h2, err := n.lc.Create(ctx, ledger.CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(h2.Metadata().Ensembles[0].Bookies, x.id) {
			t.Fatalf("new ledger placed on the read-only bookie: %v", h2.Metadata().Ensembles[0].Bookies)
		}
		h2.Close(ctx)
	}
	// Reads still work: every entry of the first segment x holds.
	bc, _ := n.resolver.Client(x.id)
	idx := slices.Index(m.Ensembles[0].Bookies, x.id)
	read := 0
	for e := int64(0); e < m.Ensembles[1].FirstEntry; e++ {
		if (idx-int(e%3)+3)%3 >= 2 {
			continue
		}
		if _, err := bc.ReadEntry(ctx, h.ID(), e, false, nil); err != nil {
			t.Fatalf("read of entry %d from the read-only bookie: %v", e, err)
		}
		read++
	}
	if read == 0 {
		t.Fatal("no entry to read from the read-only bookie")
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := n.lc.Open(ctx, h.ID())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Read(ctx, 0, 99); err != nil || len(got) != 100 {
		t.Fatalf("read back: %d entries, %v", len(got), err)
	}

	fs.full.Store(false)
	if err := x.bk.CheckDisks(); err != nil {
		t.Fatal(err)
	}
	if err := x.reg.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	avail, err := n.lc.WritableBookies(ctx)
	if err != nil || !slices.Contains(avail, x.id) {
		t.Fatalf("writable bookies %v (%v), want %s back", avail, err, x.id)
	}
}

// A bookie's ZooKeeper session expires: its registration vanishes and is
// re-created on the new session, the bookie keeps serving, a writer with
// it in its ensemble loses nothing, and the auditor (with a lost-bookie
// delay longer than the gap) marks nothing.
func TestClusterBookieSessionExpiry(t *testing.T) {
	c := newTestCluster(t)
	for range 3 {
		c.startBookie("")
	}
	c.startBroker("--lost-bookie-recovery-delay", "1m")
	x := c.startInProcessBookie(vfs.NewOS())
	n := c.clusterClient()
	h := createOn(t, n.lc, x.id)
	addEntries(t, h, 50)
	ensembles := h.Metadata().Ensembles

	regPath := ledger.AvailablePath + "/" + x.id
	gone := make(chan struct{})
	back := make(chan struct{})
	var sawGone atomic.Bool
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := n.store.(metadata.Watcher).Watch(wctx, regPath, func(ev metadata.Event) {
		switch ev.Type {
		case metadata.EventDeleted:
			if !sawGone.Swap(true) {
				close(gone)
			}
		case metadata.EventCreated:
			if sawGone.Load() {
				select {
				case <-back:
				default:
					close(back)
				}
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	sess := x.sess.Last()
	c.zk.ExpireSession(t, sess)
	for _, ch := range []chan struct{}{gone, back} {
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("registration did not go and come back (gone: %v)", sawGone.Load())
		}
	}
	if x.sess.Last().ID == sess.ID {
		t.Fatal("the bookie kept its expired session")
	}
	addEntries(t, h, 50)
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := h.Metadata()
	if !slices.EqualFunc(m.Ensembles, ensembles, func(a, b ledger.Segment) bool { return slices.Equal(a.Bookies, b.Bookies) }) {
		t.Fatalf("ensembles changed across the expiry: %+v -> %+v", ensembles, m.Ensembles)
	}
	checkReplicas(t, n, h.ID(), &m, 99, entryPayload)
	marks, err := autorecoveryMarks(n)
	if err != nil || len(marks) != 0 {
		t.Fatalf("marks after the expiry: %v (%v)", marks, err)
	}
}
