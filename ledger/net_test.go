package ledger_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/bookie/server"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/protocol/bkproto"
)

// netCluster is n bookies (in-memory storage) each served over loopback.
type netCluster struct {
	t       testing.TB
	store   metadata.Store
	bookies []*bookie.Bookie
	servers []*server.Server
	addrs   []string
	fs      []*vfs.ErrorFS // per bookie, with faultFS: fake disk usage
}

func newNetCluster(t testing.TB, n int) *netCluster { return newNetClusterFS(t, n, false) }

// newNetClusterFS is newNetCluster with, if faultFS, bookie 0 on a
// vfs.ErrorFS (fake disk usage; slower to open and close, so only one).
func newNetClusterFS(t testing.TB, n int, faultFS bool) *netCluster {
	t.Helper()
	nc := &netCluster{t: t, store: openStore(t)}
	for i := range n {
		var efs *vfs.ErrorFS
		var fs vfs.FS = vfs.NewOS()
		if faultFS && i == 0 {
			efs = vfs.NewErrorFS(fs, vfs.Never)
			fs = efs
		}
		b, err := bookie.Open(bookieOptions(fs, t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		nc.fs = append(nc.fs, efs)
		s, err := server.New(b, server.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		nc.bookies = append(nc.bookies, b)
		nc.servers = append(nc.servers, s)
		nc.addrs = append(nc.addrs, s.Addr())
	}
	return nc
}

// client returns a new ledger client with its own connections.
func (nc *netCluster) client(opts ledger.Options) (*ledger.Client, *ledger.NetResolver) {
	nc.t.Helper()
	res := ledger.NewNetResolver(ledger.NetOptions{RequestTimeout: 15 * time.Second, ConnsPerBookie: benchConns})
	nc.t.Cleanup(func() { res.Close() })
	if opts.Bookies == nil {
		opts.Bookies = nc.addrs
	}
	c, err := ledger.NewClient(nc.store, res, opts)
	if err != nil {
		nc.t.Fatal(err)
	}
	nc.t.Cleanup(func() { c.Close() })
	return c, res
}

// kill stops the server of the bookie at addr.
func (nc *netCluster) kill(addr string) {
	i := slices.Index(nc.addrs, addr)
	if i < 0 {
		nc.t.Fatalf("no bookie %s", addr)
	}
	nc.servers[i].Close()
}

// restart serves bookie at addr again on the same address.
func (nc *netCluster) restart(addr string) {
	i := slices.Index(nc.addrs, addr)
	s, err := server.New(nc.bookies[i], server.Options{Addr: addr})
	if err != nil {
		nc.t.Fatal(err)
	}
	nc.t.Cleanup(func() { s.Close() })
	nc.servers[i] = s
}

var e3 = ledger.CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Password: []byte("secret")}

// createE3 creates an e3 ledger through a new client of nc.
func (nc *netCluster) createE3(t testing.TB) (*ledger.Client, *ledger.WriteHandle) {
	t.Helper()
	c, _ := nc.client(ledger.Options{})
	h, err := c.Create(ctxT(t), e3)
	if err != nil {
		t.Fatal(err)
	}
	return c, h
}

// closeAndReopen closes h and opens its ledger through a second client of
// nc, checking that the reopened ledger's LAC is last.
func (nc *netCluster) closeAndReopen(t testing.TB, h *ledger.WriteHandle, last int64) *ledger.ReadHandle {
	t.Helper()
	ctx := ctxT(t)
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	c2, _ := nc.client(ledger.Options{})
	r, err := c2.Open(ctx, h.ID())
	if err != nil || r.LastAddConfirmed() != last {
		t.Fatalf("Open = %v, %v; want LAC %d", r, err, last)
	}
	return r
}

func TestNetAddReadStriping(t *testing.T) {
	nc := newNetCluster(t, 3)
	_, h := nc.createE3(t)
	addN(t, h, 0, 120)
	checkEntries(t, h, h.ID(), 0, 119)
	ens := h.Metadata().Ensembles[0].Bookies
	// Entry e is on positions e%3 and (e+1)%3 only.
	for pos, addr := range ens {
		b := nc.bookies[slices.Index(nc.addrs, addr)]
		for e := int64(0); e < 120; e++ {
			want := e%3 == int64(pos) || (e+1)%3 == int64(pos)
			_, err := b.ReadEntry(h.ID(), e)
			if got := err == nil; got != want {
				t.Fatalf("bookie at position %d holds entry %d: %v (err %v), want %v", pos, e, got, err, want)
			}
		}
	}
	r := nc.closeAndReopen(t, h, 119)
	checkEntries(t, r, h.ID(), 0, 119)
}

// asyncWriter adds entries and records the acked ids in completion order.
type asyncWriter struct {
	mu    sync.Mutex
	acked []int64
	err   error
	cond  chan struct{}
}

func (w *asyncWriter) add(h *ledger.WriteHandle, e int64) {
	h.AddAsync(payload(h.ID(), e, 100), func(id int64, err error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if err != nil {
			if w.err == nil {
				w.err = err
			}
		} else {
			w.acked = append(w.acked, id)
		}
		select {
		case w.cond <- struct{}{}:
		default:
		}
	})
}

func (w *asyncWriter) waitAcked(t testing.TB, n int) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		w.mu.Lock()
		got, err := len(w.acked), w.err
		w.mu.Unlock()
		if got >= n || err != nil {
			return
		}
		select {
		case <-w.cond:
		case <-timeout:
			t.Fatalf("only %d of %d adds acked", got, n)
		}
	}
}

func (w *asyncWriter) check(t testing.TB, n int) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		t.Fatalf("add failed: %v", w.err)
	}
	if len(w.acked) != n {
		t.Fatalf("%d adds acked, want %d", len(w.acked), n)
	}
	for i, id := range w.acked {
		if id != int64(i) {
			t.Fatalf("ack %d is entry %d: reordered or lost", i, id)
		}
	}
}

func TestNetEnsembleChange(t *testing.T) {
	nc := newNetCluster(t, 5)
	c, h := nc.createE3(t)
	ctx := ctxT(t)
	w := &asyncWriter{cond: make(chan struct{}, 1)}
	ens := h.Metadata().Ensembles[0].Bookies
	var repl string
	const n = 600
	for e := range int64(n) {
		w.add(h, e)
		switch e {
		case 150:
			w.waitAcked(t, 100)
			nc.kill(ens[1]) // first failure, adds in flight
		case 400:
			w.waitAcked(t, 300)
			// Second failure: the replacement (the original ensemble's
			// other members stay up, so every entry keeps a copy).
			for _, b := range h.Metadata().Last().Bookies {
				if !slices.Contains(ens, b) {
					repl = b
				}
			}
			nc.kill(repl)
		}
	}
	w.waitAcked(t, n)
	w.check(t, n)
	m := h.Metadata()
	if len(m.Ensembles) < 2 {
		t.Fatalf("ensembles %+v, want at least two after two failures", m.Ensembles)
	}
	last := m.Last().Bookies
	if slices.Contains(last, ens[1]) || slices.Contains(last, repl) || !slices.Contains(last, ens[0]) {
		t.Fatalf("last ensemble %v still holds a killed bookie (killed %s %s)", last, ens[1], repl)
	}
	stored, _, err := c.Metadata(ctx, h.ID())
	if err != nil || len(stored.Ensembles) != len(m.Ensembles) {
		t.Fatalf("stored metadata ensembles %+v (err %v), handle has %+v", stored.Ensembles, err, m.Ensembles)
	}
	checkEntries(t, h, h.ID(), 0, n-1)
	r := nc.closeAndReopen(t, h, n-1)
	checkEntries(t, r, h.ID(), 0, n-1)
}

func TestNetNotEnoughBookies(t *testing.T) {
	nc := newNetCluster(t, 3)
	c, h := nc.createE3(t)
	ctx := ctxT(t)
	addN(t, h, 0, 10)
	nc.kill(h.Metadata().Ensembles[0].Bookies[10%3]) // in entry 10's write set
	if _, err := h.Add(ctx, []byte("x")); !errors.Is(err, ledger.ErrNotEnoughBookies) {
		t.Fatalf("add with no replacement: %v, want ErrNotEnoughBookies", err)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	m, _, _ := c.Metadata(ctx, h.ID())
	if m.State != ledger.StateClosed || m.LastEntryID != 9 {
		t.Fatalf("metadata %s at %d, want CLOSED at 9", m.State, m.LastEntryID)
	}
}

// TestNetTwoWriters: a second client takes the ledger over by opening it
// with recovery; the first writer is fenced for good, and both agree on
// one sequence.
func TestNetTwoWriters(t *testing.T) {
	nc := newNetCluster(t, 3)
	a, _ := nc.client(ledger.Options{})
	b, _ := nc.client(ledger.Options{})
	ctx := ctxT(t)
	h, err := a.Create(ctx, e3)
	if err != nil {
		t.Fatal(err)
	}
	w := &asyncWriter{cond: make(chan struct{}, 1)}
	for e := range int64(100) {
		w.add(h, e)
	}
	w.waitAcked(t, 100)
	r, err := b.Open(ctx, h.ID())
	if err != nil {
		t.Fatal(err)
	}
	// Writer A keeps going: every add now fails with ErrFenced.
	for e := int64(100); e < 110; e++ {
		w.add(h, e)
	}
	if _, err := h.Add(ctx, []byte("after")); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("writer A after takeover: %v, want ErrFenced", err)
	}
	w.mu.Lock()
	acked, aerr := len(w.acked), w.err
	w.mu.Unlock()
	if acked != 100 || !errors.Is(aerr, ledger.ErrFenced) {
		t.Fatalf("writer A: %d acked, err %v; want 100 and ErrFenced", acked, aerr)
	}
	if err := h.Close(ctx); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("writer A Close: %v, want ErrFenced", err)
	}
	if r.LastAddConfirmed() != 99 {
		t.Fatalf("recovered LAC %d, want 99", r.LastAddConfirmed())
	}
	checkEntries(t, r, h.ID(), 0, 99)
	r2, err := a.Open(ctx, h.ID())
	if err != nil || r2.LastAddConfirmed() != 99 {
		t.Fatalf("A's view after takeover: %v, %v", r2, err)
	}
}

// TestNetWriterDroppedMidStream abandons a writer with adds in flight (its
// connections cut): the next opener recovers every acked entry.
func TestNetWriterDroppedMidStream(t *testing.T) {
	nc := newNetCluster(t, 3)
	a, ares := nc.client(ledger.Options{})
	ctx := ctxT(t)
	h, err := a.Create(ctx, e3)
	if err != nil {
		t.Fatal(err)
	}
	w := &asyncWriter{cond: make(chan struct{}, 1)}
	for e := range int64(400) {
		w.add(h, e)
		if e == 300 {
			w.waitAcked(t, 200)
			ares.Close() // the writer's process "dies": connections cut
		}
	}
	w.mu.Lock()
	acked := slices.Clone(w.acked)
	w.mu.Unlock()
	b, _ := nc.client(ledger.Options{})
	r, err := b.Open(ctx, h.ID())
	if err != nil {
		t.Fatal(err)
	}
	if last := acked[len(acked)-1]; r.LastAddConfirmed() < last {
		t.Fatalf("recovered up to %d, but %d was acked", r.LastAddConfirmed(), last)
	}
	checkEntries(t, r, h.ID(), 0, r.LastAddConfirmed())
	t.Logf("acked %d, recovered %d entries", len(acked), r.LastAddConfirmed()+1)
}

// TestNetRecoveryTooManyDown: with two of three bookies of the ensemble
// down some write set has no fence answer: Open fails and leaves the
// ledger IN_RECOVERY. With one of them back, recovery succeeds, replacing
// the still-dead bookie for its recovery adds (docs/replication.md section 5 step 4), with every
// entry.
func TestNetRecoveryTooManyDown(t *testing.T) {
	nc := newNetCluster(t, 4)
	a, _ := nc.client(ledger.Options{Bookies: nil})
	ctx := ctxT(t)
	h, err := a.Create(ctx, e3)
	if err != nil {
		t.Fatal(err)
	}
	addN(t, h, 0, 60)
	ens := h.Metadata().Ensembles[0].Bookies
	// Entry 59 (write set positions 2 and 0) carries a LAC below 59, so
	// recovery rewrites it: killing position 2 forces a replacement.
	nc.kill(ens[0])
	nc.kill(ens[2])
	b, _ := nc.client(ledger.Options{ReadTimeout: 2 * time.Second})
	if _, err := b.Open(ctx, h.ID()); !errors.Is(err, ledger.ErrRecoveryFailed) {
		t.Fatalf("Open with 2 of 3 down: %v, want ErrRecoveryFailed", err)
	}
	m, _, _ := b.Metadata(ctx, h.ID())
	if m.State != ledger.StateInRecovery {
		t.Fatalf("state after failed recovery %s, want IN_RECOVERY", m.State)
	}
	nc.restart(ens[0])
	r, err := b.Open(ctx, h.ID())
	if err != nil {
		t.Fatal(err)
	}
	if r.LastAddConfirmed() != 59 {
		t.Fatalf("recovered LAC %d, want 59", r.LastAddConfirmed())
	}
	checkEntries(t, r, h.ID(), 0, 59)
	m, _, _ = b.Metadata(ctx, h.ID())
	// Recovery rewrote from LAC+1 (0 here: every entry was sent before the
	// first completed), so the replacement may replace ensemble 0 in place.
	if slices.Contains(m.Last().Bookies, ens[2]) {
		t.Fatalf("ensembles after recovery %+v: the last still holds the dead %s", m.Ensembles, ens[2])
	}
	if _, err := h.Add(ctx, []byte("x")); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("old writer after recovery: %v, want ErrFenced", err)
	}
	// The recovered entries are readable with the dead bookie still down
	// and from a fresh client.
	c, _ := nc.client(ledger.Options{})
	r2, err := c.Open(ctx, h.ID())
	if err != nil || r2.LastAddConfirmed() != 59 {
		t.Fatalf("reopen: %v, %v", r2, err)
	}
	checkEntries(t, r2, h.ID(), 0, 59)
}

// TestNetRecoveryNoReplacement: one bookie down and no spare: recovery
// adds cannot reach their write sets, so recovery fails (never closes
// short) until the bookie is back.
func TestNetRecoveryNoReplacement(t *testing.T) {
	nc := newNetCluster(t, 3)
	a, _ := nc.client(ledger.Options{})
	ctx := ctxT(t)
	h, err := a.Create(ctx, e3)
	if err != nil {
		t.Fatal(err)
	}
	addN(t, h, 0, 30)
	ens := h.Metadata().Ensembles[0].Bookies
	nc.kill(ens[2])
	b, _ := nc.client(ledger.Options{})
	if _, err := b.Open(ctx, h.ID()); !errors.Is(err, ledger.ErrRecoveryFailed) {
		t.Fatalf("Open with no replacement: %v, want ErrRecoveryFailed", err)
	}
	nc.restart(ens[2])
	r, err := b.Open(ctx, h.ID())
	if err != nil || r.LastAddConfirmed() != 29 {
		t.Fatalf("Open after restart: %v, %v", r, err)
	}
	checkEntries(t, r, h.ID(), 0, 29)
}

// slowClient delays reads of one bookie.
type slowClient struct {
	ledger.BookieClient
	delay time.Duration
}

func (s slowClient) ReadEntry(ctx context.Context, l, e int64, fence bool, key []byte) ([]byte, error) {
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.BookieClient.ReadEntry(ctx, l, e, fence, key)
}

func TestSpeculativeRead(t *testing.T) {
	nc := newNetCluster(t, 2)
	c, res := nc.client(ledger.Options{SpeculativeReadTimeout: 20 * time.Millisecond, ReadParallelism: 1})
	ctx := ctxT(t)
	h, err := c.Create(ctx, ledger.CreateOptions{Ensemble: 2, WriteQuorum: 2, AckQuorum: 2})
	if err != nil {
		t.Fatal(err)
	}
	addN(t, h, 0, 4)
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// A reader whose first replica of every entry answers after 2 s.
	ens := h.Metadata().Ensembles[0].Bookies
	slow := ledger.NewStaticResolver(nil)
	for _, a := range ens {
		bc, _ := res.Client(a)
		slow.Set(a, slowClient{bc, 2 * time.Second})
	}
	fast := ledger.NewStaticResolver(nil)
	for _, a := range ens {
		bc, _ := res.Client(a)
		fast.Set(a, bc)
	}
	// Entry 0's write set starts at position 0: make position 0 slow.
	mixed := ledger.NewStaticResolver(nil)
	bc0, _ := slow.Client(ens[0])
	bc1, _ := fast.Client(ens[1])
	mixed.Set(ens[0], bc0)
	mixed.Set(ens[1], bc1)
	rc, err := ledger.NewClient(nc.store, mixed, ledger.Options{SpeculativeReadTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	r, err := rc.OpenNoRecovery(ctx, h.ID())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	checkEntries(t, r, h.ID(), 0, 0)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("read with a slow first replica took %v; speculative read did not kick in", d)
	}
}

// TestNetReadErrorsMapped checks the wire status codes reach the client as
// the bkproto sentinels.
func TestNetReadErrorsMapped(t *testing.T) {
	nc := newNetCluster(t, 1)
	_, res := nc.client(ledger.Options{})
	ctx := ctxT(t)
	bc, _ := res.Client(nc.addrs[0])
	if _, err := bc.ReadEntry(ctx, 77, 0, false, nil); !errors.Is(err, bkproto.ErrNoLedger) {
		t.Fatalf("read of unknown ledger: %v, want ErrNoLedger", err)
	}
	key := []byte("k")
	done := make(chan error, 1)
	bc.AddEntry(77, 0, key, []byte("entry"), false, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := bc.ReadEntry(ctx, 77, 5, false, nil); !errors.Is(err, bkproto.ErrNoEntry) {
		t.Fatalf("read of missing entry: %v, want ErrNoEntry", err)
	}
	bc.AddEntry(77, 1, []byte("other"), []byte("entry"), false, func(err error) { done <- err })
	if err := <-done; !errors.Is(err, bkproto.ErrUnauthorized) {
		t.Fatalf("add with another key: %v, want ErrUnauthorized", err)
	}
	if _, err := bc.ReadEntry(ctx, 77, -1, true, key); err != nil {
		t.Fatalf("fence read: %v", err)
	}
	bc.AddEntry(77, 1, key, []byte("entry"), false, func(err error) { done <- err })
	if err := <-done; !errors.Is(err, bkproto.ErrFenced) {
		t.Fatalf("add after fence: %v, want ErrFenced", err)
	}
	bc.AddEntry(77, 1, key, []byte("entry"), true, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatalf("recovery add after fence: %v", err)
	}
	lac, last, err := bc.ReadLAC(ctx, 77)
	if err != nil || lac != -1 || string(last) != "entry" {
		t.Fatalf("ReadLAC = %d, %q, %v", lac, last, err)
	}
	if err := bc.WriteLAC(ctx, 77, 1, key, []byte("body")); err != nil {
		t.Fatal(err)
	}
	if lac, _, _ := bc.ReadLAC(ctx, 77); lac != 1 {
		t.Fatalf("ReadLAC after WriteLAC = %d, want 1", lac)
	}
}

// TestNetReadOnlyBookie: a bookie whose disk fills turns read-only and
// answers EREADONLY; the writer moves its position to another bookie
// without losing or reordering an acked entry, and reads still reach the
// read-only bookie's copies.
func TestNetReadOnlyBookie(t *testing.T) {
	nc := newNetClusterFS(t, 4, true)
	c, _ := nc.client(ledger.Options{})
	ctx := ctxT(t)
	var h *ledger.WriteHandle
	for h == nil || !slices.Contains(h.Metadata().Ensembles[0].Bookies, nc.addrs[0]) {
		var err error
		if h, err = c.Create(ctx, e3); err != nil { // random placement: retry until bookie 0 is in
			t.Fatal(err)
		}
	}
	addN(t, h, 0, 20)
	ens := h.Metadata().Ensembles[0].Bookies
	nc.fs[0].SetDiskUsage(100, 1)
	if err := nc.bookies[0].CheckDisks(); err != nil || !nc.bookies[0].IsReadOnly() {
		t.Fatalf("bookie not read-only: %v", err)
	}
	defer func() { nc.fs[0].ClearDiskUsage(); nc.bookies[0].CheckDisks() }() // a full bookie closes slowly
	addN(t, h, 20, 20)
	// The new ensemble starts at the last add confirmed + 1 when the
	// failure is handled: 20, or later if the entries before the first one
	// striped onto bookie 0 were confirmed first (E3/Qw2: entry e goes to
	// positions e%3 and (e+1)%3).
	pos := slices.Index(ens, nc.addrs[0])
	firstOnFull := int64(20)
	for firstOnFull%3 != int64(pos) && (firstOnFull+1)%3 != int64(pos) {
		firstOnFull++
	}
	m := h.Metadata()
	if f := m.Last().FirstEntry; len(m.Ensembles) != 2 || slices.Contains(m.Last().Bookies, nc.addrs[0]) || f < 20 || f > firstOnFull {
		t.Fatalf("ensembles %+v (first %v): want a second one from entry 20..%d without the read-only %s", m.Ensembles, ens, firstOnFull, nc.addrs[0])
	}
	checkEntries(t, h, h.ID(), 0, 39)
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestNetLargestEntry: an entry of MaxEntrySize bytes fits in a frame and
// reads back; one byte more fails the handle with ErrEntryTooLarge.
func TestNetLargestEntry(t *testing.T) {
	nc := newNetCluster(t, 1)
	c, _ := nc.client(ledger.Options{})
	ctx := ctxT(t)
	h, err := c.Create(ctx, ledger.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, ledger.MaxEntrySize)
	big[len(big)-1] = 7
	if _, err := h.Add(ctx, big); err != nil {
		t.Fatalf("add of MaxEntrySize bytes: %v", err)
	}
	got, err := h.Read(ctx, 0, 0)
	if err != nil || len(got[0]) != len(big) || got[0][len(big)-1] != 7 {
		t.Fatalf("read back: %d bytes, %v", len(got[0]), err)
	}
	if _, err := h.Add(ctx, make([]byte, ledger.MaxEntrySize+1)); !errors.Is(err, ledger.ErrEntryTooLarge) {
		t.Fatalf("add of MaxEntrySize+1 bytes: %v, want ErrEntryTooLarge", err)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if m, _, _ := c.Metadata(ctx, h.ID()); m.LastEntryID != 0 {
		t.Fatalf("closed at %d, want 0", m.LastEntryID)
	}
}

// TestNetRecoveryRestart: a recovering client died after marking the
// ledger IN_RECOVERY and fencing two of three bookies; the next opener
// completes recovery with every acked entry and the writer stays fenced.
func TestNetRecoveryRestart(t *testing.T) {
	nc := newNetCluster(t, 3)
	a, res := nc.client(ledger.Options{})
	ctx := ctxT(t)
	h, err := a.Create(ctx, e3)
	if err != nil {
		t.Fatal(err)
	}
	addN(t, h, 0, 40)
	m, v, _ := a.Metadata(ctx, h.ID())
	m.State = ledger.StateInRecovery
	if _, err := nc.store.Put(ctx, ledger.LedgerPath(h.ID()), mustJSON(t, m), v); err != nil {
		t.Fatal(err)
	}
	for _, b := range m.Ensembles[0].Bookies[:2] {
		bc, _ := res.Client(b)
		if _, err := bc.ReadEntry(ctx, h.ID(), -1, true, ledger.MasterKey(e3.Password)); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := nc.client(ledger.Options{})
	r, err := b.Open(ctx, h.ID())
	if err != nil {
		t.Fatal(err)
	}
	if r.LastAddConfirmed() != 39 {
		t.Fatalf("recovered LAC %d, want 39", r.LastAddConfirmed())
	}
	checkEntries(t, r, h.ID(), 0, 39)
	if _, err := h.Add(ctx, []byte("x")); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("writer after recovery: %v, want ErrFenced", err)
	}
}

// TestNetConcurrentAdders: several goroutines add to one handle at once;
// callbacks run one at a time in strictly increasing entry order, and every
// payload is stored exactly once under the id its callback reported.
func TestNetConcurrentAdders(t *testing.T) {
	nc := newNetCluster(t, 3)
	_, h := nc.createE3(t)
	ctx := ctxT(t)
	const writers, each = 4, 100
	var mu sync.Mutex
	var inCallback bool
	last := int64(-1)
	ids := map[string]int64{}
	var wg sync.WaitGroup
	var done sync.WaitGroup
	done.Add(writers * each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				p := fmt.Sprintf("writer %d add %d", w, i)
				h.AddAsync([]byte(p), func(id int64, err error) {
					defer done.Done()
					mu.Lock()
					if inCallback {
						t.Error("callbacks overlap")
					}
					inCallback = true
					if err != nil || id != last+1 {
						t.Errorf("callback id %d err %v after %d", id, err, last)
					}
					last = id
					ids[p] = id
					inCallback = false
					mu.Unlock()
				})
			}
		}()
	}
	wg.Wait()
	done.Wait()
	got, err := h.Read(ctx, 0, writers*each-1)
	if err != nil {
		t.Fatal(err)
	}
	for p, id := range ids {
		if string(got[id]) != p {
			t.Fatalf("entry %d = %q, want %q", id, got[id], p)
		}
	}
	if len(ids) != writers*each {
		t.Fatalf("%d distinct payloads acked, want %d", len(ids), writers*each)
	}
}

// TestNetRequestTimeout: an add to a bookie that accepts the connection
// and never answers fails with bkproto.ErrIO after about RequestTimeout
// (the deadline comes from the connection's coarse clock: give or take
// two ticks of a quarter of the timeout), and a read with a context
// deadline fails at that deadline.
func TestNetRequestTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go io.Copy(io.Discard, c) // reads every request, answers none
		}
	}()
	const timeout = 400 * time.Millisecond
	tick := timeout/4 + time.Millisecond
	res := ledger.NewNetResolver(ledger.NetOptions{RequestTimeout: timeout})
	defer res.Close()
	bc, err := res.Client(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 { // the later rounds take their deadline from a ticking clock
		start := time.Now()
		done := make(chan error, 1)
		bc.AddEntry(1, int64(round), []byte("k"), []byte("entry"), false, func(err error) { done <- err })
		select {
		case err := <-done:
			d := time.Since(start)
			if !errors.Is(err, bkproto.ErrIO) {
				t.Fatalf("round %d: add failed with %v, want ErrIO", round, err)
			}
			if d < timeout-2*tick || d > timeout+3*tick+time.Second {
				t.Fatalf("round %d: add timed out after %v, want about %v", round, d, timeout)
			}
		case <-time.After(10 * timeout):
			t.Fatalf("round %d: add never timed out", round)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := bc.ReadEntry(ctx, 1, 0, false, nil); err == nil {
		t.Fatal("read from a silent bookie succeeded")
	}
	if d := time.Since(start); d < 150*time.Millisecond || d > 150*time.Millisecond+3*tick+time.Second {
		t.Fatalf("read with a 150 ms context failed after %v", d)
	}
}

// TestNetExcludedBookieComesBack: a bookie that failed is excluded from
// the ledger's ensemble changes only until it answers again. Bookie A of
// the ensemble dies (replaced by the fourth, B), comes back; then B dies
// with no other bookie left: A is chosen again (it used to stay excluded
// for the ledger's life: "not enough bookies"). Each failure is logged
// once, not once per add in flight.
func TestNetExcludedBookieComesBack(t *testing.T) {
	nc := newNetCluster(t, 4)
	var logs lockedBuffer
	c, _ := nc.client(ledger.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	h, err := c.Create(ctxT(t), e3)
	if err != nil {
		t.Fatal(err)
	}
	w := &asyncWriter{cond: make(chan struct{}, 1)}
	ens := h.Metadata().Ensembles[0].Bookies
	a := ens[1]
	const n = 900
	for e := range int64(n) {
		w.add(h, e)
		switch e {
		case 200:
			w.waitAcked(t, 100)
			nc.kill(a) // adds in flight to it fail
		case 400:
			w.waitAcked(t, 300)
			nc.restart(a)
		case 600:
			w.waitAcked(t, 500)
			var b string
			for _, x := range h.Metadata().Last().Bookies {
				if !slices.Contains(ens, x) {
					b = x
				}
			}
			if b == "" {
				t.Fatalf("no replacement in %v", h.Metadata().Last().Bookies)
			}
			nc.kill(b)
		}
	}
	w.waitAcked(t, n)
	w.check(t, n)
	if last := h.Metadata().Last().Bookies; !slices.Contains(last, a) {
		t.Fatalf("last ensemble %v without %s, which came back", last, a)
	}
	if got := strings.Count(logs.String(), "add failed, replacing bookie"); got != 2 {
		t.Fatalf("%d add-failure warnings for two bookie failures, want 2:\n%s", got, logs.String())
	}
	checkEntries(t, h, h.ID(), 0, n-1)
}

// lockedBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
