package mledger_test

import (
	"maps"
	"testing"

	"github.com/magnetar-mq/magnetar/mledger"
)

// TestCursorPropertiesSurviveRestartAndCrash: properties set on a cursor
// are durable when SetProperties returns (a crash right after keeps
// them), survive later persists of acks (snapshots and deltas), and can
// be replaced and cleared.
func TestCursorPropertiesSurviveRestartAndCrash(t *testing.T) {
	e := newEnv(t)
	cfg := testConfig()
	cfg.CursorSnapshotMinBytes = 1 << 20 // acks go out as deltas
	ml := e.open("t/props", cfg)
	ctx := ctxT(t)
	c, err := ml.OpenCursor(ctx, "s", mledger.InitialEarliest)
	if err != nil {
		t.Fatal(err)
	}
	if c.Properties() != nil {
		t.Fatalf("new cursor has properties %v", c.Properties())
	}
	want := map[string]string{"pulsar.replicated.subscription": "1", "k": "", "": "empty key", "unicode ✓": "v\x00w"}
	if err := c.SetProperties(ctx, want); err != nil {
		t.Fatal(err)
	}
	e.crash(ml)
	ml = e.open("t/props", cfg)
	if got := ml.Cursor("s").Properties(); !maps.Equal(got, want) {
		t.Fatalf("after crash: %v, want %v", got, want)
	}
	// Acks persisted after the properties keep them.
	pos := addMany(t, ml, "m", 20)
	c = ml.Cursor("s")
	if err := c.Delete(pos[3], pos[7]); err != nil {
		t.Fatal(err)
	}
	if err := c.MarkDelete(pos[1]); err != nil {
		t.Fatal(err)
	}
	if err := ml.PersistAllForTest(ctx); err != nil {
		t.Fatal(err)
	}
	e.restart()
	ml = e.open("t/props", cfg)
	c = ml.Cursor("s")
	if got := c.Properties(); !maps.Equal(got, want) {
		t.Fatalf("after acks and restart: %v, want %v", got, want)
	}
	if md := c.MarkDeletePosition(); md != pos[1] {
		t.Fatalf("mark-delete %v, want %v", md, pos[1])
	}
	if !c.IsAcked(pos[7]) || c.IsAcked(pos[5]) {
		t.Fatal("individual acks lost next to the properties")
	}
	// Cleared properties stay cleared.
	if err := c.SetProperties(ctx, nil); err != nil {
		t.Fatal(err)
	}
	e.restart()
	ml = e.open("t/props", cfg)
	if got := ml.Cursor("s").Properties(); len(got) != 0 {
		t.Fatalf("cleared properties came back: %v", got)
	}
}
