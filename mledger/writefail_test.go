package mledger_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
)

// TestRolloverFailureBackoff: while no ledger can be created, adds fail
// with ErrWriteFailed, and after the second failed rollover in a row they
// fail at once without another creation attempt until the back-off has
// passed (doubling); once creation works again adds succeed by themselves.
func TestRolloverFailureBackoff(t *testing.T) {
	e := newEnv(t)
	ml := e.open("t/backoff", mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 2})
	var creates atomic.Int64
	noBookies := errors.New("not enough bookies")
	addErr := func(data string) error {
		ch := make(chan error, 1)
		ml.AddEntry([]byte(data), 1, func(_ mledger.Position, err error) { ch <- err })
		select {
		case err := <-ch:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("add not completed")
			return nil
		}
	}
	for i := range 2 {
		if err := addErr("ok"); err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
	}
	e.store.SetCreateHook(func() error {
		creates.Add(1)
		return noBookies
	})
	// The ledger is full: the next add waits for a rollover that fails.
	if err := addErr("a"); !errors.Is(err, mledger.ErrWriteFailed) || !errors.Is(err, noBookies) {
		t.Fatalf("add during a failed rollover = %v", err)
	}
	// One failure: the next add tries again at once.
	if err := addErr("b"); !errors.Is(err, mledger.ErrWriteFailed) {
		t.Fatalf("second add = %v", err)
	}
	if n := creates.Load(); n != 2 {
		t.Fatalf("%d creation attempts after two adds, want 2", n)
	}
	// Within the back-off: no attempt, the same error.
	for range 20 {
		if err := addErr("c"); !errors.Is(err, noBookies) {
			t.Fatalf("add within the back-off = %v", err)
		}
	}
	if n := creates.Load(); n != 2 {
		t.Fatalf("%d creation attempts after adds within the back-off, want 2", n)
	}
	e.clock.Advance(600 * time.Millisecond)
	if err := addErr("d"); !errors.Is(err, noBookies) {
		t.Fatalf("add after the back-off = %v", err)
	}
	if n := creates.Load(); n != 3 {
		t.Fatalf("%d creation attempts after the back-off, want 3", n)
	}
	e.clock.Advance(600 * time.Millisecond) // the back-off doubled to 1 s
	if err := addErr("e"); !errors.Is(err, noBookies) || creates.Load() != 3 {
		t.Fatalf("add within the doubled back-off = %v, %d attempts", err, creates.Load())
	}
	e.store.SetCreateHook(nil)
	e.clock.Advance(time.Second)
	for i := range 5 {
		if err := addErr("f"); err != nil {
			t.Fatalf("add %d after ledgers can be created again: %v", i, err)
		}
	}
}
