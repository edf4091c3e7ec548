package mledger_test

import (
	"context"
	"errors"
	"testing"

	"github.com/magnetar-mq/magnetar/mledger"
)

func writeSync(t *testing.T, w mledger.WriteLedger, data string) {
	t.Helper()
	ch := make(chan error, 1)
	w.AddAsync([]byte(data), func(_ int64, err error) { ch <- err })
	if err := <-ch; err != nil {
		t.Fatal(err)
	}
}

// TestCompactionCommitAndCrash: a committed compaction survives a
// restart; a crash between begin and commit leaves the previous compacted
// ledger in place, and the next begin deletes the interrupted one.
func TestCompactionCommitAndCrash(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ml := e.open("c", testConfig())
	if _, ok := ml.CompactionState(); ok {
		t.Fatal("fresh ledger has a compaction state")
	}
	h1 := add(t, ml, "a", 1)
	w, err := ml.BeginCompaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	writeSync(t, w, "compacted-1")
	prev, err := ml.CommitCompaction(ctx, w, h1)
	if err != nil || prev != -1 {
		t.Fatalf("commit: prev %d, %v", prev, err)
	}
	first := w.ID()
	e.restart()
	ml = e.open("c", testConfig())
	c, ok := ml.CompactionState()
	if !ok || c.Ledger != first || c.Horizon != h1 || c.Pending != -1 {
		t.Fatalf("after restart: %+v %v", c, ok)
	}
	// Begin a second compaction, write half of it, crash.
	add(t, ml, "b", 1)
	w2, err := ml.BeginCompaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	writeSync(t, w2, "half")
	e.crash(ml)
	ml = e.open("c", testConfig())
	c, _ = ml.CompactionState()
	if c.Ledger != first || c.Horizon != h1 || c.Pending != w2.ID() {
		t.Fatalf("after crash: %+v, want ledger %d pending %d", c, first, w2.ID())
	}
	r, _, err := ml.OpenCompactedLedger(ctx)
	if err != nil {
		t.Fatal(err)
	}
	es, err := r.Read(ctx, 0, r.LastAddConfirmed())
	if err != nil || len(es) != 1 || string(es[0]) != "compacted-1" {
		t.Fatalf("compacted view after crash: %q %v", es, err)
	}
	r.Close()
	// The interrupted compaction's ledger is deleted by the next begin.
	w3, err := ml.BeginCompaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e.store.Exists(w2.ID()) {
		t.Fatalf("ledger %d of the interrupted compaction still exists", w2.ID())
	}
	h2, _ := ml.LastConfirmed()
	writeSync(t, w3, "compacted-2")
	prev, err = ml.CommitCompaction(ctx, w3, h2)
	if err != nil || prev != first {
		t.Fatalf("second commit: prev %d, %v", prev, err)
	}
	if err := ml.DeleteCompactedLedger(ctx, w3.ID()); err == nil {
		t.Fatal("deleting the current compacted ledger was allowed")
	}
	if err := ml.DeleteCompactedLedger(ctx, prev); err != nil || e.store.Exists(prev) {
		t.Fatalf("delete previous: %v", err)
	}
	// A stale compaction (its pending ledger replaced) cannot commit.
	w4, _ := ml.BeginCompaction(ctx)
	w5, _ := ml.BeginCompaction(ctx) // deletes w4's ledger, as after a crash
	if _, err := ml.CommitCompaction(ctx, w4, h2); !errors.Is(err, mledger.ErrCompactionConflict) && err == nil {
		t.Fatalf("stale commit: %v", err)
	}
	if err := ml.AbortCompaction(ctx, w5); err != nil || e.store.Exists(w5.ID()) {
		t.Fatalf("abort: %v", err)
	}
	// Deleting the managed ledger deletes its compacted ledger.
	if err := ml.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if e.store.Exists(w3.ID()) {
		t.Fatal("compacted ledger survived Delete")
	}
}
