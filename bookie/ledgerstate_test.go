package bookie

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/internal/testenv"
)

func noSweep(o *Options) { o.LedgerStateIdle = -1 }

func countStates(b *Bookie) int {
	n := 0
	b.ledgers.Range(func(any, any) bool { n++; return true })
	return n
}

// An evicted ledger state loads again from the index and the write cache
// with everything it held: entries checkpointed and still cached, the
// master key, the fence, the explicit LAC.
func TestLedgerStateEvictReloads(t *testing.T) {
	b := openFake(t, newFakeDisk(), noSweep)
	defer b.Close()
	for e := int64(0); e < 10; e++ {
		for _, l := range []int64{1, 3, 4} {
			if err := addSync(b, l, e, mk, payloadFor(l, e, 100), false); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	for e := int64(0); e < 10; e++ { // ledger 2: in the write cache only
		if err := addSync(b, 2, e, mk, payloadFor(2, e, 100), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Fence(3, mk); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteLAC(4, 7, mk, []byte("lac-body")); err != nil {
		t.Fatal(err)
	}
	if n := b.evictIdleLedgers(); n != 0 {
		t.Fatalf("first sweep evicted %d states; it only clears the marks", n)
	}
	mustRead(t, b, 1, 5, payloadFor(1, 5, 100)) // used since: kept
	if n := b.evictIdleLedgers(); n != 3 {
		t.Fatalf("second sweep evicted %d states, want 3 (all but ledger 1)", n)
	}
	if n := b.evictIdleLedgers(); n != 1 {
		t.Fatalf("third sweep evicted %d states, want 1", n)
	}
	if n := countStates(b); n != 0 {
		t.Fatalf("%d ledger states left", n)
	}
	for _, l := range []int64{1, 2, 3, 4} {
		if last, err := b.LastEntry(l); err != nil || last != 9 {
			t.Fatalf("LastEntry(%d) = %d, %v after eviction, want 9", l, last, err)
		}
		mustRead(t, b, l, -1, payloadFor(l, 9, 100))
	}
	if f, err := b.IsFenced(3); err != nil || !f {
		t.Fatalf("IsFenced(3) = %v, %v after eviction", f, err)
	}
	if err := addSync(b, 3, 10, mk, []byte("x"), false); !errors.Is(err, ErrFenced) {
		t.Fatalf("add to the fenced ledger after eviction: %v, want ErrFenced", err)
	}
	if lac, body, err := b.ReadLAC(4); err != nil || lac != 7 || string(body) != "lac-body" {
		t.Fatalf("ReadLAC(4) = %d, %q, %v after eviction", lac, body, err)
	}
	if err := addSync(b, 1, 10, []byte("other-key"), []byte("x"), false); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("add with another key after eviction: %v, want ErrUnauthorized", err)
	}
	if err := addSync(b, 2, 10, mk, payloadFor(2, 10, 100), false); err != nil {
		t.Fatal(err)
	}
	mustRead(t, b, 2, -1, payloadFor(2, 10, 100))
	// A state looked up before its eviction is not locked after it: the
	// caller looks the ledger up again (lockLedger).
	st, err := b.ledgerFor(1, false)
	if err != nil || st == nil {
		t.Fatalf("ledgerFor(1) = %v, %v", st, err)
	}
	b.evictIdleLedgers()
	b.evictIdleLedgers()
	if st.lock() {
		t.Fatal("an evicted state was locked")
	}
	if err := b.Fence(1, mk); err != nil {
		t.Fatal(err)
	}
	if st.meta.fenced {
		t.Fatal("the fence changed the evicted state")
	}
	if err := addSync(b, 1, 11, mk, []byte("x"), false); !errors.Is(err, ErrFenced) {
		t.Fatalf("add after a fence on a reloaded state: %v, want ErrFenced", err)
	}
	// A deleted ledger does not come back from an evicted state.
	b.evictIdleLedgers()
	b.evictIdleLedgers()
	if err := b.DeleteLedger(4); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ReadEntry(4, 0); !errors.Is(err, ErrNoLedger) {
		t.Fatalf("ReadEntry of the deleted ledger: %v, want ErrNoLedger", err)
	}
}

// A checkpoint that moves a ledger's entries from the write cache to the
// index while its state loads does not hide them from the state.
func TestLedgerStateLoadDuringCheckpoint(t *testing.T) {
	b := openFake(t, newFakeDisk(), noSweep)
	defer b.Close()
	for e := int64(0); e < 5; e++ {
		if err := addSync(b, 1, e, mk, payloadFor(1, e, 100), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	for e := int64(5); e < 10; e++ { // in the write cache only
		if err := addSync(b, 1, e, mk, payloadFor(1, e, 100), false); err != nil {
			t.Fatal(err)
		}
	}
	b.evictIdleLedgers()
	if n := b.evictIdleLedgers(); n != 1 {
		t.Fatalf("evicted %d states, want 1", n)
	}
	b.hooks.ledgerLoad = func() {
		b.hooks.ledgerLoad = nil
		if err := b.Checkpoint(); err != nil {
			t.Error(err)
		}
	}
	if last, err := b.LastEntry(1); err != nil || last != 9 {
		t.Fatalf("LastEntry(1) = %d, %v loaded across a checkpoint, want 9", last, err)
	}
	if a, f := b.wc.size(); a != 0 || f != 0 {
		t.Fatalf("the checkpoint in the load left the write cache with %d+%d bytes", a, f)
	}
}

// A load that read the index before a fence does not store what it read
// after the fence's state was evicted: the fence holds.
func TestLedgerStateStaleLoad(t *testing.T) {
	b := openFake(t, newFakeDisk(), noSweep)
	defer b.Close()
	for e := int64(0); e < 5; e++ {
		if err := addSync(b, 1, e, mk, payloadFor(1, e, 100), false); err != nil {
			t.Fatal(err)
		}
	}
	b.evictIdleLedgers()
	if n := b.evictIdleLedgers(); n != 1 {
		t.Fatalf("evicted %d states, want 1", n)
	}
	fenced := make(chan error, 1)
	b.hooks.ledgerLoaded = func() {
		b.hooks.ledgerLoaded = nil
		// Fence the ledger and evict the fence's state while this load
		// holds what it read before. The fence waits for the load to
		// store its state, so it cannot finish here; the wait is only
		// bounded so that a load that lets it through is caught.
		done := make(chan struct{})
		go func() {
			defer close(done)
			err := b.Fence(1, mk)
			if err == nil {
				b.evictIdleLedgers()
				b.evictIdleLedgers()
			}
			fenced <- err
		}()
		select {
		case <-done:
		case <-time.After(200 * time.Millisecond):
		}
	}
	if last, err := b.LastEntry(1); err != nil || last != 4 {
		t.Fatalf("LastEntry(1) = %d, %v", last, err)
	}
	if err := <-fenced; err != nil {
		t.Fatal(err)
	}
	if err := addSync(b, 1, 5, mk, []byte("x"), false); !errors.Is(err, ErrFenced) {
		t.Fatalf("add after the fence returned: %v, want ErrFenced", err)
	}
	if f, err := b.IsFenced(1); err != nil || !f {
		t.Fatalf("IsFenced(1) = %v, %v", f, err)
	}
}

// Adds (one at a time and in runs), fencing, reads of the last entry and
// checkpoints race the eviction sweep: no acknowledged entry is lost or
// unseen, LastEntry never falls below an acknowledged entry, and no add
// succeeds on a ledger after its fence returned.
func TestLedgerStateEvictRace(t *testing.T) {
	b := openFake(t, newFakeDisk(), func(o *Options) {
		noSweep(o)
		o.WriteCacheSize = 256 << 10 // checkpoints (and frozen halves) often
	})
	defer b.Close()
	const ledgers, perLedger = 6, 1500
	var acked [ledgers + 1]atomic.Int64 // highest acknowledged entry (-1: none)
	for i := range acked {
		acked[i].Store(-1)
	}
	var fenced atomic.Bool
	var lateAdds atomic.Int64 // adds to ledger 1 that succeeded after its fence
	stop := make(chan struct{})
	var bg sync.WaitGroup
	// background runs fn until stop is closed or fn reports false.
	background := func(fn func() bool) {
		bg.Add(1)
		go func() {
			defer bg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if !fn() {
					return
				}
			}
		}()
	}
	var evicted atomic.Int64
	background(func() bool { // the sweep, as fast as it goes
		evicted.Add(int64(b.evictIdleLedgers()))
		return true
	})
	background(func() bool { // checkpoints
		if err := b.Checkpoint(); err != nil {
			t.Error(err)
			return false
		}
		return true
	})
	background(func() bool { // LastEntry never below an acknowledged entry
		for l := int64(2); l <= ledgers; l++ {
			want := acked[l].Load()
			if want < 0 {
				continue
			}
			got, err := b.LastEntry(l)
			if err != nil || got < want {
				t.Errorf("LastEntry(%d) = %d, %v with entry %d acknowledged", l, got, err, want)
				return false
			}
		}
		return true
	})
	var writers sync.WaitGroup
	for l := int64(1); l <= ledgers; l++ {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for e := int64(0); e < perLedger; {
				if l == 1 && e == perLedger/2 && !fenced.Load() {
					if err := b.Fence(1, mk); err != nil {
						t.Error(err)
						return
					}
					fenced.Store(true)
				}
				if e%5 == 0 && e+4 < perLedger { // a run of four
					errs := make([]error, 4)
					var wg sync.WaitGroup
					adds := make([]Add, 4)
					for i := range adds {
						wg.Add(1)
						adds[i] = Add{Ledger: l, Entry: e + int64(i), MasterKey: mk, Payload: payloadFor(l, e+int64(i), 50),
							Done: func(err error) { errs[i] = err; wg.Done() }}
					}
					wasFenced := fenced.Load()
					b.AddEntries(adds)
					wg.Wait()
					for i, err := range errs {
						if !ackedOrFenced(t, l, e+int64(i), err, wasFenced, &lateAdds) {
							return
						}
						if err == nil {
							acked[l].Store(e + int64(i))
						}
					}
					e += 4
					continue
				}
				wasFenced := fenced.Load()
				err := addSync(b, l, e, mk, payloadFor(l, e, 50), false)
				if !ackedOrFenced(t, l, e, err, wasFenced, &lateAdds) {
					return
				}
				if err == nil {
					acked[l].Store(e)
				}
				e++
			}
		}()
	}
	writers.Wait()
	close(stop)
	bg.Wait()
	if n := lateAdds.Load(); n != 0 {
		t.Fatalf("%d adds succeeded on ledger 1 after its fence returned", n)
	}
	if evicted.Load() == 0 {
		t.Fatal("the sweep never evicted a state: the race was not run")
	}
	t.Logf("%d states evicted during the run", evicted.Load())
	for l := int64(1); l <= ledgers; l++ {
		last := acked[l].Load()
		for e := int64(0); e <= last; e++ {
			got, err := b.ReadEntry(l, e)
			if err != nil || !bytes.Equal(got, payloadFor(l, e, 50)) {
				t.Fatalf("ledger %d entry %d (acknowledged up to %d): %v", l, e, last, err)
			}
		}
	}
	if f, err := b.IsFenced(1); err != nil || !f {
		t.Fatalf("IsFenced(1) = %v, %v", f, err)
	}
}

// ackedOrFenced checks one add's outcome: success, or ErrFenced on ledger
// 1 once fenced; a success started after the fence returned is counted.
func ackedOrFenced(t *testing.T, l, e int64, err error, wasFenced bool, late *atomic.Int64) bool {
	t.Helper()
	switch {
	case err == nil:
		if l == 1 && wasFenced {
			late.Add(1)
		}
		return true
	case l == 1 && errors.Is(err, ErrFenced):
		return true
	default:
		t.Error(fmt.Errorf("add %d/%d: %w", l, e, err))
		return false
	}
}

// Evicting the states of idle ledgers gives their memory back: what a
// bookie keeps per idle ledger is then the index's part alone.
func TestLedgerStateEvictFrees(t *testing.T) {
	b := openFake(t, newFakeDisk(), noSweep)
	defer b.Close()
	const n = 50_000
	adds := make([]Add, 0, 1)
	for l := int64(0); l < n; l++ {
		var done sync.WaitGroup
		done.Add(1)
		adds = append(adds[:0], Add{Ledger: l, Entry: 0, MasterKey: mk, Payload: []byte("p"), Done: func(err error) {
			if err != nil {
				t.Error(err)
			}
			done.Done()
		}})
		b.AddEntries(adds)
		done.Wait()
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	b.evictIdleLedgers()
	before := testenv.LiveHeap()
	if got := b.evictIdleLedgers(); got != n {
		t.Fatalf("evicted %d of %d idle ledgers", got, n)
	}
	after := testenv.LiveHeap()
	freed := (float64(before) - float64(after)) / n
	t.Logf("evicting %d idle ledger states freed %.0f B each", n, freed)
	if freed < 100 {
		t.Fatalf("evicting an idle ledger's state freed %.0f B, want at least 100", freed)
	}
	if last, err := b.LastEntry(n - 1); err != nil || last != 0 {
		t.Fatalf("LastEntry(%d) = %d, %v after eviction", n-1, last, err)
	}
}
