package ledger_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/bookie/server"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/protocol/bkproto"
)

// The managed ledger finds AddWithHeadroom by this interface.
var _ mledger.HeadroomWriter = (*ledger.WriteHandle)(nil)

// recordingBookie acks every add at once and keeps the frames it was
// given, by entry id, without copying them.
type recordingBookie struct {
	mu     sync.Mutex
	frames map[int64][]byte
}

func (r *recordingBookie) AddEntry(_, entryID int64, _, entry []byte, _ bool, done func(error)) {
	r.mu.Lock()
	r.frames[entryID] = entry
	r.mu.Unlock()
	done(nil)
}

func (r *recordingBookie) ReadEntry(context.Context, int64, int64, bool, []byte) ([]byte, error) {
	return nil, bkproto.ErrNoEntry
}

func (r *recordingBookie) ReadLAC(context.Context, int64) (int64, []byte, error) {
	return -1, nil, nil
}

func (r *recordingBookie) WriteLAC(context.Context, int64, int64, []byte, []byte) error { return nil }

// oneBookieClient is a client over store placing its ledgers on bc alone
// (as bookie "b0"), closed when the test ends.
func oneBookieClient(t testing.TB, store metadata.Store, bc ledger.BookieClient) *ledger.Client {
	t.Helper()
	c, err := ledger.NewClient(store, ledger.NewStaticResolver(map[string]ledger.BookieClient{"b0": bc}), ledger.Options{Bookies: []string{"b0"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// headroomBuf returns a buffer holding data after off bytes of 0xee.
func headroomBuf(data []byte, off int) []byte {
	buf := bytes.Repeat([]byte{0xee}, off)
	return append(buf, data...)
}

// TestAddWithHeadroomFrameIdentical checks that the frame a bookie gets
// from AddWithHeadroom is byte for byte bkproto.AppendEntry's output (same
// header fields, same digest over the same bytes), built in place in the
// caller's buffer; that a headroom below EntryHeadroom falls back to a
// copy without touching the buffer; and that AddAsync is unchanged.
func TestAddWithHeadroomFrameIdentical(t *testing.T) {
	rec := &recordingBookie{frames: map[int64][]byte{}}
	c := oneBookieClient(t, openStore(t), rec)
	ctx := ctxT(t)
	h, err := c.Create(ctx, ledger.CreateOptions{Password: []byte("pw")})
	if err != nil {
		t.Fatal(err)
	}
	type added struct {
		data     []byte
		buf      []byte
		off      int
		headroom bool // AddWithHeadroom (else AddAsync)
	}
	var adds []added
	for i, off := range []int{ledger.EntryHeadroom, ledger.EntryHeadroom + 1, 64 + 8 + 20, -1, 0, ledger.EntryHeadroom - 1, 200, -1} {
		data := payload(h.ID(), int64(i), 10+i*1000)
		a := added{data: data, off: off, headroom: off >= 0}
		ch := make(chan error, 1)
		cb := func(id int64, err error) {
			if err == nil && id != int64(i) {
				err = fmt.Errorf("entry id %d, want %d", id, i)
			}
			ch <- err
		}
		if a.headroom {
			a.buf = headroomBuf(data, off)
			h.AddWithHeadroom(a.buf, off, cb)
		} else {
			h.AddAsync(data, cb)
		}
		if err := <-ch; err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
		adds = append(adds, a)
	}
	var length int64
	for i, a := range adds {
		length += int64(len(a.data))
		want := bkproto.AppendEntry(nil, bkproto.EntryHeader{LedgerID: h.ID(), EntryID: int64(i), LAC: int64(i) - 1, Length: length}, a.data)
		got := rec.frames[int64(i)]
		if !bytes.Equal(got, want) {
			t.Fatalf("add %d (offset %d): frame\n%x\nwant\n%x", i, a.off, got[:bkproto.EntryHeaderSize], want[:bkproto.EntryHeaderSize])
		}
		if _, _, err := bkproto.DecodeEntry(got); err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
		switch {
		case a.headroom && a.off >= ledger.EntryHeadroom:
			if &got[bkproto.EntryHeaderSize] != &a.buf[a.off] {
				t.Fatalf("add %d: frame not built in the caller's buffer", i)
			}
			if !bytes.Equal(a.buf[:a.off-ledger.EntryHeadroom], bytes.Repeat([]byte{0xee}, a.off-ledger.EntryHeadroom)) {
				t.Fatalf("add %d: bytes before the entry header were written", i)
			}
		case a.headroom:
			if !bytes.Equal(a.buf[:a.off], bytes.Repeat([]byte{0xee}, a.off)) {
				t.Fatalf("add %d: headroom of %d bytes written, want the copying fallback", i, a.off)
			}
		}
		if a.headroom && !bytes.Equal(a.buf[a.off:], a.data) {
			t.Fatalf("add %d: the entry's data changed", i)
		}
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	m, _, err := c.Metadata(ctx, h.ID())
	if err != nil || m.Length != length || m.LastEntryID != int64(len(adds)-1) {
		t.Fatalf("metadata %+v, %v; want length %d, last entry %d", m, err, length, len(adds)-1)
	}
}

// TestAddWithHeadroomTooLarge: the size limit applies to the data, as for
// AddAsync.
func TestAddWithHeadroomTooLarge(t *testing.T) {
	rec := &recordingBookie{frames: map[int64][]byte{}}
	c := oneBookieClient(t, openStore(t), rec)
	h, err := c.Create(ctxT(t), ledger.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan error, 1)
	h.AddWithHeadroom(make([]byte, ledger.EntryHeadroom+ledger.MaxEntrySize+1), ledger.EntryHeadroom, func(_ int64, err error) { ch <- err })
	if err := <-ch; !errors.Is(err, ledger.ErrEntryTooLarge) {
		t.Fatalf("oversize add: %v, want ErrEntryTooLarge", err)
	}
	if len(rec.frames) != 0 {
		t.Fatalf("oversize add reached the bookie")
	}
}

// headroomWriter pipelines AddWithHeadroom adds (32 in flight) of entries
// of varying size and records the acked ones.
type headroomWriter struct {
	mu    sync.Mutex
	acked map[int64][]byte
	err   error
	sem   chan struct{}
	wg    sync.WaitGroup
}

func newHeadroomWriter() *headroomWriter {
	return &headroomWriter{acked: map[int64][]byte{}, sem: make(chan struct{}, 32)}
}

func (w *headroomWriter) add(h *ledger.WriteHandle, e int64) {
	data := payload(h.ID(), e, 100+int(e%7)*3000)
	off := ledger.EntryHeadroom + int(e%3)*20
	w.sem <- struct{}{}
	w.wg.Add(1)
	h.AddWithHeadroom(headroomBuf(data, off), off, func(id int64, err error) {
		defer w.wg.Done()
		w.mu.Lock()
		switch {
		case err != nil && w.err == nil:
			w.err = err
		case err == nil && id != e:
			w.err = fmt.Errorf("entry %d acked as %d", e, id)
		case err == nil:
			w.acked[id] = data
		}
		w.mu.Unlock()
		<-w.sem
	})
}

func (w *headroomWriter) snapshot() map[int64][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[int64][]byte, len(w.acked))
	for k, v := range w.acked {
		out[k] = v
	}
	return out
}

// checkStored reads entries 0..last through r and checks every acked one
// byte for byte, and the raw frames of b (if not nil) against
// bkproto.AppendEntry's layout.
func checkStored(t *testing.T, r interface {
	Read(context.Context, int64, int64) ([][]byte, error)
}, b *bookie.Bookie, ledgerID, last int64, acked map[int64][]byte) {
	t.Helper()
	got, err := r.Read(ctxT(t), 0, last)
	if err != nil {
		t.Fatalf("Read(0, %d): %v", last, err)
	}
	for id, want := range acked {
		if id > last {
			t.Fatalf("acked entry %d beyond the recovered last entry %d", id, last)
		}
		if !bytes.Equal(got[id], want) {
			t.Fatalf("entry %d reads back %d bytes, want %d (acked)", id, len(got[id]), len(want))
		}
		if b == nil {
			continue
		}
		frame, err := b.ReadEntry(ledgerID, id)
		if err != nil {
			t.Fatalf("bookie entry %d: %v", id, err)
		}
		hdr, data, err := bkproto.DecodeEntry(frame)
		if err != nil || !bytes.Equal(data, want) || !bytes.Equal(frame, bkproto.AppendEntry(nil, hdr, want)) {
			t.Fatalf("bookie entry %d: frame differs from AppendEntry's (err %v)", id, err)
		}
	}
}

// TestNetAddWithHeadroomEnsembleChange adds through network bookies with
// AddWithHeadroom while a bookie of the ensemble dies: the pending frames
// (built in the callers' buffers) are re-sent to its replacement, and
// every entry reads back, also through a second client.
func TestNetAddWithHeadroomEnsembleChange(t *testing.T) {
	nc := newNetCluster(t, 5)
	_, h := nc.createE3(t)
	w := newHeadroomWriter()
	for e := int64(0); e < 150; e++ {
		if e == 60 {
			nc.kill(h.Metadata().Ensembles[0].Bookies[1])
		}
		w.add(h, e)
	}
	w.wg.Wait()
	if w.err != nil {
		t.Fatal(w.err)
	}
	if len(w.acked) != 150 || len(h.Metadata().Ensembles) < 2 {
		t.Fatalf("%d acked, %d ensembles; want 150 and an ensemble change", len(w.acked), len(h.Metadata().Ensembles))
	}
	checkStored(t, h, nil, h.ID(), 149, w.acked)
	r := nc.closeAndReopen(t, h, 149)
	checkStored(t, r, nil, h.ID(), 149, w.acked)
}

// TestAddWithHeadroomCrash writes with AddWithHeadroom to an in-process
// bookie on a MemFS and takes crash clones (only synced bytes survive)
// while adds are in flight. Each clone is reopened and the ledger
// recovered from it: every entry acked before the clone reads back byte
// for byte, and the stored frames are exactly bkproto.AppendEntry's.
func TestAddWithHeadroomCrash(t *testing.T) {
	fs := vfs.NewMem()
	b, err := bookie.Open(crashBookieOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	store := openStore(t)
	c := oneBookieClient(t, store, server.NewLocal(b))
	ctx := ctxT(t)
	h, err := c.Create(ctx, ledger.CreateOptions{Password: []byte("pw")})
	if err != nil {
		t.Fatal(err)
	}
	meta, _, err := store.Get(ctx, ledger.LedgerPath(h.ID()))
	if err != nil {
		t.Fatal(err)
	}
	w := newHeadroomWriter()
	type clone struct {
		fs    *vfs.MemFS
		acked map[int64][]byte
	}
	var clones []clone
	for e := int64(0); e < 400; e++ {
		w.add(h, e)
		if e%100 == 99 {
			snap := w.snapshot() // acked before the clone: must survive
			clones = append(clones, clone{fs.CrashClone(), snap})
		}
	}
	w.wg.Wait()
	if w.err != nil {
		t.Fatal(w.err)
	}
	for i, cl := range clones {
		if len(cl.acked) == 0 {
			continue
		}
		b2, err := bookie.Open(crashBookieOptions(cl.fs))
		if err != nil {
			t.Fatalf("clone %d: %v", i, err)
		}
		// A second client over the clone and a copy of the OPEN ledger's
		// metadata recovers the ledger: fences it and closes it at the
		// last entry the bookie holds.
		store2 := openStore(t)
		if _, err := store2.Put(ctx, ledger.LedgerPath(h.ID()), meta, metadata.NotExists); err != nil {
			t.Fatal(err)
		}
		c2 := oneBookieClient(t, store2, server.NewLocal(b2))
		r, err := c2.Open(ctx, h.ID())
		if err != nil {
			t.Fatalf("clone %d: recovery: %v", i, err)
		}
		checkStored(t, r, b2, h.ID(), r.LastAddConfirmed(), cl.acked)
		c2.Close()
		if err := b2.Close(); err != nil {
			t.Fatalf("clone %d: close: %v", i, err)
		}
	}
}
