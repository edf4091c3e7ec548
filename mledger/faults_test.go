package mledger_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/magnetar-mq/magnetar/metadata/memmeta"
	"github.com/magnetar-mq/magnetar/mledger"
)

// TestCrashBetweenCursorLedgerAndNodeUpdate: a snapshot is written to a new
// cursor ledger but the node update fails (as if the broker died between
// the two); the node still names the old cursor ledger, whose state is
// what a restart recovers.
func TestCrashBetweenCursorLedgerAndNodeUpdate(t *testing.T) {
	meta := memmeta.New()
	e := newEnvWith(t, meta)
	ml := e.open("t/node", testConfig())
	ctx := ctxT(t)
	c, _ := ml.OpenCursor(ctx, "s", mledger.InitialEarliest)
	pos := addMany(t, ml, "m", 60)
	randomAcks(rand.New(rand.NewPCG(7, 8)), c, pos, 25)
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want := captureCursor(t, c, pos)
	_ = c.Reset(pos[0]) // forces a snapshot into a new cursor ledger
	meta.FailPuts.Store(1)
	if err := c.Flush(ctx); err == nil {
		t.Fatal("Flush succeeded with a failing node update")
	}
	e.crash(ml)
	ml = e.open("t/node", testConfig())
	compareSnapshots(t, captureCursor(t, ml.Cursor("s"), pos), want)
}

// TestMetadataFailureDuringRollover: the info update of a rollover fails;
// the adds waiting for it fail with ErrWriteFailed, nothing acknowledged is
// lost, and the next add rolls over successfully.
func TestMetadataFailureDuringRollover(t *testing.T) {
	meta := memmeta.New()
	e := newEnvWith(t, meta)
	cfg := mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 3}
	ml := e.open("t/metafail", cfg)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	e.store.SetCreateHook(func() error {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
		return nil
	})
	addMany(t, ml, "a", 3) // fills the ledger: rollover starts
	<-entered              // rollover is creating the next ledger
	ch := make(chan error, 1)
	ml.AddEntry([]byte("b"), 1, func(_ mledger.Position, err error) { ch <- err })
	meta.FailPuts.Store(1) // the info update fails
	e.store.SetCreateHook(nil)
	close(release)
	if err := <-ch; !errors.Is(err, mledger.ErrWriteFailed) {
		t.Fatalf("add queued during the failed rollover: err = %v, want ErrWriteFailed", err)
	}
	add(t, ml, "c", 1)
	e.restart()
	ml = e.open("t/metafail", cfg)
	r, _ := ml.NewNonDurableCursor("r", mledger.Earliest)
	got := datas(readAll(t, r))
	want := []string{"a-0", "a-1", "a-2", "c"}
	if !slices.Equal(got, want) {
		t.Fatalf("after restart read %v, want %v", got, want)
	}
}
