package mledger_test

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
)

// TestRolloverFailureBackoff: while no ledger can be created, adds fail
// with ErrWriteFailed; after the second failed rollover in a row, adds
// wait for the back-off and one creation attempt serves them all (no
// attempt per add); once creation works again, waiting adds succeed by
// themselves.
func TestRolloverFailureBackoff(t *testing.T) {
	e := newEnv(t)
	ml := e.open("t/backoff", mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 2})
	var creates atomic.Int64
	noBookies := errors.New("not enough bookies")
	addAsync := func(data string) chan error {
		ch := make(chan error, 1)
		ml.AddEntry([]byte(data), 1, func(_ mledger.Position, err error) { ch <- err })
		return ch
	}
	wait := func(ch chan error) error {
		select {
		case err := <-ch:
			return err
		case <-time.After(20 * time.Second):
			t.Fatal("add not completed")
			return nil
		}
	}
	e.store.SetCreateHook(func() error {
		creates.Add(1)
		return noBookies
	})
	// The second add fills the ledger: the rollover after it fails.
	for i := range 2 {
		if err := wait(addAsync("ok")); err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
	}
	// After one failure the next add tries again at once (and fails);
	// "a" may also have joined the first rollover.
	for creates.Load() < 2 {
		if err := wait(addAsync("a")); !errors.Is(err, mledger.ErrWriteFailed) || !errors.Is(err, noBookies) {
			t.Fatalf("add after a failed rollover = %v", err)
		}
	}
	if n := creates.Load(); n != 2 {
		t.Fatalf("%d creation attempts, want 2", n)
	}
	// Within the back-off: the adds wait; one attempt fails them all.
	start := time.Now()
	var chs []chan error
	for range 20 {
		chs = append(chs, addAsync("c"))
	}
	for _, ch := range chs {
		if err := wait(ch); !errors.Is(err, noBookies) {
			t.Fatalf("add within the back-off = %v", err)
		}
	}
	if took := time.Since(start); took < 400*time.Millisecond {
		t.Fatalf("adds failed after %v, before the 500 ms back-off", took)
	}
	if n := creates.Load(); n != 3 {
		t.Fatalf("%d creation attempts for 20 adds within the back-off, want 3", n)
	}
	// Ledgers can be created again: a waiting add succeeds by itself.
	e.store.SetCreateHook(nil)
	ch := addAsync("d")
	if err := wait(ch); err != nil {
		t.Fatalf("add after ledgers can be created again: %v", err)
	}
	for i := range 5 {
		if err := wait(addAsync("e")); err != nil {
			t.Fatalf("add %d after recovery: %v", i, err)
		}
	}
}

// TestFactoryDeleteWithoutWritableStore: a managed ledger that is not
// open is deleted (info node, cursors, every ledger) without creating a
// ledger, so deleting a topic works while no bookie is writable; deleting
// one that does not exist is not an error.
func TestFactoryDeleteWithoutWritableStore(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	ml := e.open("t/gone", mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 5})
	if _, err := ml.OpenCursor(ctx, "s", mledger.InitialEarliest); err != nil {
		t.Fatal(err)
	}
	addMany(t, ml, "m", 12)
	if err := ml.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if len(e.store.Ledgers()) == 0 {
		t.Fatal("no ledgers to delete")
	}
	e.store.SetCreateHook(func() error { return errors.New("no writable bookies") })
	creates := e.store.Creates()
	if err := e.f.Delete(ctx, "t/gone"); err != nil {
		t.Fatalf("Delete with no writable store = %v", err)
	}
	if got := e.store.Ledgers(); len(got) != 0 {
		t.Fatalf("ledgers left after Delete: %v", got)
	}
	if e.store.Creates() != creates {
		t.Fatal("Delete created a ledger")
	}
	names, err := e.f.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if n == "t/gone" {
			t.Fatalf("managed ledger still listed: %v", names)
		}
	}
	if err := e.f.Delete(ctx, "t/never"); err != nil {
		t.Fatalf("Delete of an absent managed ledger = %v", err)
	}
}

// TestOpenWithoutWritableStore: a managed ledger reopened while no ledger
// can be created (every bookie full) opens for reads: the acknowledged
// entries read back, adds fail with ErrWriteFailed, and once a ledger can
// be created adds succeed without reopening.
func TestOpenWithoutWritableStore(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	ml := e.open("t/full", mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 5})
	if _, err := ml.OpenCursor(ctx, "s", mledger.InitialEarliest); err != nil {
		t.Fatal(err)
	}
	addMany(t, ml, "m", 12)
	if err := ml.Close(ctx); err != nil {
		t.Fatal(err)
	}
	noBookies := errors.New("not enough writable bookies")
	e.store.SetCreateHook(func() error { return noBookies })
	e.restart()
	ml = e.open("t/full", mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 5})
	c, err := ml.OpenCursor(ctx, "s", mledger.InitialEarliest)
	if err != nil {
		t.Fatal(err)
	}
	if got := datas(readAll(t, c)); len(got) != 12 || got[0] != "m-0" || got[11] != "m-11" {
		t.Fatalf("read after opening on a full store: %v", got)
	}
	ch := make(chan error, 1)
	ml.AddEntry([]byte("x"), 1, func(_ mledger.Position, err error) { ch <- err })
	if err := <-ch; !errors.Is(err, mledger.ErrWriteFailed) || !errors.Is(err, noBookies) {
		t.Fatalf("add with no ledger to write = %v, want ErrWriteFailed", err)
	}
	e.store.SetCreateHook(nil)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ml.AddEntry([]byte("y"), 1, func(_ mledger.Position, err error) { ch <- err })
		if err := <-ch; err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("adds did not resume once ledgers could be created")
		}
	}
	if got := datas(readAll(t, c)); len(got) != 1 || got[0] != "y" {
		t.Fatalf("read after adds resumed: %v", got)
	}
}

// TestFailedAddsLoggedOncePerRollover: every add in flight on a ledger
// that breaks fails; the managed ledger logs one line for the rollover
// with their count (it logged one per add), and re-sends them all on the
// next ledger.
func TestFailedAddsLoggedOncePerRollover(t *testing.T) {
	e := newEnv(t)
	var logs strings.Builder
	var mu sync.Mutex
	e.opts.Logger = slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))
	e.f = e.newFactory()
	ml := e.open("t/broken", mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 1000})
	first := add(t, ml, "before", 1).LedgerID
	e.store.SetAddHook(func(ledgerID, _ int64) error {
		if ledgerID == first {
			return errors.New("bookie gone")
		}
		return nil
	})
	pos := addMany(t, ml, "m", 50)
	if pos[0].LedgerID == first {
		t.Fatalf("adds acknowledged on the broken ledger: %v", pos[0])
	}
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if n := strings.Count(out, "rolling over"); n != 1 || !strings.Contains(out, "failedAdds=") {
		t.Fatalf("%d rollover lines for 50 failed adds, want 1 with the count:\n%s", n, out)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
