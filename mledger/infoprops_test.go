package mledger_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/magnetar-mq/magnetar/mledger"
)

// TestInfoPropertiesSurviveTrimAndRestart: what the hook sets is written
// with every info update (rollovers, trimming), survives a restart and a
// crash, and outlives the ledgers it was about.
func TestInfoPropertiesSurviveTrimAndRestart(t *testing.T) {
	e := newEnv(t)
	cfg := mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 2}
	ml := e.open("props", cfg)
	var n atomic.Int64 // the hook runs on the ledger's goroutines
	ml.SetInfoPropertiesHook(func(p map[string]string) { p["n"] = fmt.Sprint(n.Load()) })
	c, err := ml.OpenCursor(ctxT(t), "c", mledger.InitialEarliest)
	if err != nil {
		t.Fatal(err)
	}
	var last mledger.Position
	for i := 0; i < 5; i++ {
		n.Add(1)
		last = add(t, ml, fmt.Sprint(i), 1)
	}
	if err := c.MarkDelete(last); err != nil {
		t.Fatal(err)
	}
	if err := ml.Trim(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if got := ml.InfoProperties()["n"]; got == "" || got == "0" {
		t.Fatalf("property after rollovers and trim: %q", got)
	}
	e.restart()
	ml = e.open("props", cfg)
	if got := ml.InfoProperties()["n"]; got != "5" {
		t.Fatalf("after restart (clean close rolls the ledger): n = %q, want 5", got)
	}
	// Everything consumed and trimmed: no entry is left, the property is.
	c = ml.Cursor("c")
	if err := ml.Trim(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if _, ok := ml.LastConfirmed(); ok {
		t.Fatal("entries left after trimming everything consumed")
	}
	_ = c
	e.crash(ml)
	ml = e.open("props", cfg)
	if got := ml.InfoProperties()["n"]; got != "5" {
		t.Fatalf("after trim and crash: n = %q, want 5", got)
	}
	// Without a hook, later info writes keep the stored properties.
	add(t, ml, "x", 1)
	if got := ml.InfoProperties()["n"]; got != "5" {
		t.Fatalf("without a hook: n = %q, want 5", got)
	}
}
