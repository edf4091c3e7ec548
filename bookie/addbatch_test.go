package bookie

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/magnetar-mq/magnetar/journal"
)

// batchCase is one add of TestAddEntriesLikeAddEntry and the error it
// must get (nil: acknowledged).
type batchCase struct {
	a    Add
	want error
}

// batchCases mixes, in one sequence, what AddEntries must treat exactly
// as AddEntry does: runs on a new ledger (its master key set by the first
// add), a wrong and a missing key and a negative entry inside a run, a
// fenced ledger with normal adds refused and recovery adds accepted, a
// large entry (written from the write cache by reference) between small
// ones, a negative ledger, and runs longer than batchMax.
func batchCases() []batchCase {
	var cs []batchCase
	add := func(l, e int64, key []byte, size int, recovery bool, want error) {
		cs = append(cs, batchCase{Add{Ledger: l, Entry: e, MasterKey: key, Payload: payloadFor(l, e, size), Recovery: recovery}, want})
	}
	for e := int64(0); e < 150; e++ {
		add(1, e, mk, 1+int(e*37%500), false, nil)
	}
	add(1, 150, []byte("other"), 10, false, ErrUnauthorized)
	add(1, 151, nil, 10, false, ErrBadRequest)
	add(1, -2, mk, 10, false, ErrBadRequest)
	add(1, 152, mk, 10, false, nil)
	add(1, 153, mk, journal.RefMinPayload+100, false, nil)
	add(1, 154, mk, 20, false, nil)
	for e := int64(5); e < 20; e++ {
		add(2, e, mk, 30, false, ErrFenced)
	}
	add(2, 20, []byte("other"), 30, true, ErrUnauthorized)
	for e := int64(5); e < 20; e++ {
		add(2, e, mk, 30, true, nil)
	}
	add(-1, 0, mk, 10, false, ErrBadRequest)
	for e := int64(0); e < 10; e++ {
		add(3, e, mk, 50, false, nil)
		add(4, e, mk, 50, false, nil)
	}
	return cs
}

// TestAddEntriesLikeAddEntry runs the same adds through AddEntry one at a
// time and through AddEntries in batches of several sizes, on bookies
// with ledger 2 fenced after 5 entries: every add gets the same outcome,
// successful completions run in add order, every acknowledged entry reads
// back byte for byte, also after a restart that replays the journal.
func TestAddEntriesLikeAddEntry(t *testing.T) {
	for _, batch := range []int{1, 7, 64, 1000} {
		t.Run(fmt.Sprint("batch=", batch), func(t *testing.T) {
			d := newFakeDisk()
			b := openFake(t, d, nil)
			for e := int64(0); e < 5; e++ {
				if err := addSync(b, 2, e, mk, payloadFor(2, e, 30), false); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.Fence(2, mk); err != nil {
				t.Fatal(err)
			}
			cs := batchCases()
			var (
				mu    sync.Mutex
				got   = make([]error, len(cs))
				order []int
				wg    sync.WaitGroup
			)
			adds := make([]Add, len(cs))
			for i := range cs {
				adds[i] = cs[i].a
				wg.Add(1)
				adds[i].Done = func(err error) {
					mu.Lock()
					got[i] = err
					if err == nil {
						order = append(order, i)
					}
					mu.Unlock()
					wg.Done()
				}
			}
			for i := 0; i < len(adds); i += batch {
				if batch == 1 {
					a := adds[i]
					b.AddEntry(a.Ledger, a.Entry, a.MasterKey, a.Payload, a.Recovery, a.Done)
					continue
				}
				b.AddEntries(adds[i:min(i+batch, len(adds))])
			}
			wg.Wait()
			for i, c := range cs {
				if (c.want == nil) != (got[i] == nil) || (c.want != nil && !errors.Is(got[i], c.want)) {
					t.Fatalf("add %d (ledger %d entry %d): %v, want %v", i, c.a.Ledger, c.a.Entry, got[i], c.want)
				}
			}
			for k := 1; k < len(order); k++ {
				if order[k] < order[k-1] {
					t.Fatalf("add %d completed before add %d", order[k], order[k-1])
				}
			}
			check := func(b *Bookie) {
				t.Helper()
				for _, c := range cs {
					if c.want == nil {
						mustRead(t, b, c.a.Ledger, c.a.Entry, c.a.Payload)
					}
				}
				// Refused entries do not read back.
				if _, err := b.ReadEntry(1, 150); !errors.Is(err, ErrNoEntry) {
					t.Fatalf("refused entry 1/150 reads back: %v", err)
				}
			}
			check(b)
			// Restart without Close or checkpoint: the journal replays.
			b.closed.Store(true)
			close(b.closing)
			b.wg.Wait()
			b2 := openFake(t, d, nil)
			defer b2.Close()
			check(b2)
			if last, err := b2.LastEntry(1); err != nil || last != 154 {
				t.Fatalf("LastEntry(1) after restart = %d, %v, want 154", last, err)
			}
		})
	}
}

// TestAddEntriesWaitsForCacheRoom: a run larger than the write cache's
// active half fills it, and the rest of the run waits for the checkpoint
// to free room, as single adds do; every add is acknowledged and reads
// back.
func TestAddEntriesWaitsForCacheRoom(t *testing.T) {
	d := newFakeDisk()
	b := openFake(t, d, func(o *Options) { o.WriteCacheSize = 64 << 10 })
	defer b.Close()
	var wg sync.WaitGroup
	errs := make([]error, 2000)
	adds := make([]Add, 0, batchMax)
	for e := int64(0); e < int64(len(errs)); e++ {
		wg.Add(1)
		adds = append(adds, Add{Ledger: 9, Entry: e, MasterKey: mk, Payload: payloadFor(9, e, 200), Done: func(err error) {
			errs[e] = err
			wg.Done()
		}})
		if len(adds) == cap(adds) {
			b.AddEntries(adds)
			adds = adds[:0]
		}
	}
	b.AddEntries(adds)
	wg.Wait()
	for e, err := range errs {
		if err != nil {
			t.Fatalf("add %d: %v", e, err)
		}
	}
	for e := int64(0); e < int64(len(errs)); e++ {
		mustRead(t, b, 9, e, payloadFor(9, e, 200))
	}
	if n := b.Stats().Checkpoints; n == 0 {
		t.Fatal("no checkpoint ran: the cache never filled")
	}
}

// TestAddEntriesClosed: after Close every add of a run is refused with
// ErrClosed, except a malformed one, which is ErrBadRequest as for
// AddEntry.
func TestAddEntriesClosed(t *testing.T) {
	b := openFake(t, newFakeDisk(), nil)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	errs := make([]error, 5)
	var adds []Add
	for i := range errs {
		key := mk
		if i == 2 {
			key = nil
		}
		adds = append(adds, Add{Ledger: 1, Entry: int64(i), MasterKey: key, Payload: []byte("x"), Done: func(err error) { errs[i] = err }})
	}
	b.AddEntries(adds)
	for i, err := range errs {
		want := ErrClosed
		if i == 2 {
			want = ErrBadRequest
		}
		if !errors.Is(err, want) {
			t.Fatalf("add %d after Close: %v, want %v", i, err, want)
		}
	}
}
