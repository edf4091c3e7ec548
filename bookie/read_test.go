package bookie

import (
	"bytes"
	"errors"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// TestReadRunReadAhead reads two interleaved ledgers back from the entry
// logs after a restart: every entry is right, one entry-log read (a run)
// serves the entry and the next ReadAheadEntries of its ledger, a run never
// strays into the other ledger, AppendReadEntry appends to the caller's
// buffer and an empty entry reads back empty, not nil.
func TestReadRunReadAhead(t *testing.T) {
	fs := vfs.NewMem()
	opts := func() Options {
		o := faultOptions(fs)
		o.ReadAheadEntries = 9
		return o
	}
	b, err := Open(opts())
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	for e := int64(0); e < n; e++ {
		for _, l := range []int64{1, 2} {
			p := entryPayload(l, e)
			if l == 2 && e == 7 {
				p = nil
			}
			if err := addSync(b, l, e, mk, p, false); err != nil {
				t.Fatal(err)
			}
		}
		if e%50 == 49 {
			if err := b.Checkpoint(); err != nil { // several flushes: runs of 50 per ledger
				t.Fatal(err)
			}
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err = Open(opts()); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	buf := []byte("prefix")
	for e := int64(0); e < n; e++ {
		v, err := b.AppendReadEntry(buf, 1, e)
		if err != nil || !bytes.Equal(v[:6], []byte("prefix")) || !bytes.Equal(v[6:], entryPayload(1, e)) {
			t.Fatalf("AppendReadEntry(1, %d) = %d bytes, %v", e, len(v), err)
		}
		buf = v[:6]
	}
	st := b.Stats()
	// Runs of 10 (the entry and 9 more) within each 50-entry flush of the
	// ledger: 5 runs per flush, 4 flushes.
	if st.ReadCacheMisses != 20 || st.ReadCacheHits != n-20 || st.EntryLogReads != n {
		t.Fatalf("reads of ledger 1: %d misses, %d hits, %d entry-log reads; want 20, %d, %d",
			st.ReadCacheMisses, st.ReadCacheHits, st.EntryLogReads, n-20, n)
	}
	// Ledger 2 was not read ahead by ledger 1's runs.
	if b.rc.has(2, 0) {
		t.Fatal("a run of ledger 1 cached an entry of ledger 2")
	}
	for e := int64(0); e < n; e++ {
		v, err := b.ReadEntry(2, e)
		want := entryPayload(2, e)
		if e == 7 {
			want = []byte{}
		}
		if err != nil || v == nil || !bytes.Equal(v, want) {
			t.Fatalf("ReadEntry(2, %d) = %d bytes (nil %v), %v", e, len(v), v == nil, err)
		}
	}
	// Errors leave dst alone.
	if v, err := b.AppendReadEntry(buf, 1, n+5); !errors.Is(err, ErrNoEntry) || !bytes.Equal(v, buf) {
		t.Fatalf("AppendReadEntry of a missing entry = %q, %v", v, err)
	}
}

// TestReadRunSkipsReplacedEntries: a recovery add rewrites an entry after
// its ledger was flushed, so the old record still sits in the run of its
// neighbours; the run does not serve it (the index points at the new one)
// and ends there.
func TestReadRunSkipsReplacedEntries(t *testing.T) {
	fs := vfs.NewMem()
	b, err := Open(faultOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for e := int64(0); e < 20; e++ {
		if err := addSync(b, 1, e, mk, entryPayload(1, e), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	// Same id, other bytes (not what BookKeeper clients do, but it shows
	// which copy a read serves).
	if err := addSync(b, 1, 5, mk, []byte("rewritten"), true); err != nil {
		t.Fatal(err)
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	for e := int64(0); e < 20; e++ {
		v, err := b.ReadEntry(1, e)
		want := entryPayload(1, e)
		if e == 5 {
			want = []byte("rewritten")
		}
		if err != nil || !bytes.Equal(v, want) {
			t.Fatalf("ReadEntry(1, %d) = %q..., %v", e, head(v), err)
		}
	}
}
