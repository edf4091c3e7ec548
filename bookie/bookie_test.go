package bookie

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

var mk = []byte("master-key")

func mustRead(t *testing.T, b *Bookie, ledger, entry int64, want []byte) {
	t.Helper()
	got, err := b.ReadEntry(ledger, entry)
	if err != nil {
		t.Fatalf("ReadEntry(%d, %d) = %v", ledger, entry, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("ReadEntry(%d, %d) = %d bytes %x..., want %d bytes %x...", ledger, entry, len(got), head(got), len(want), head(want))
	}
}

func head(b []byte) []byte { return b[:min(len(b), 8)] }

func TestAddReadAcrossCheckpoint(t *testing.T) {
	d := newFakeDisk()
	b := openFake(t, d, nil)
	defer b.Close()
	for l := int64(1); l <= 3; l++ {
		for e := int64(0); e < 50; e++ {
			if err := addSync(b, l, e, mk, payloadFor(l, e, 100+int(e)), false); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func() {
		t.Helper()
		for l := int64(1); l <= 3; l++ {
			for e := int64(0); e < 50; e++ {
				mustRead(t, b, l, e, payloadFor(l, e, 100+int(e)))
			}
			mustRead(t, b, l, -1, payloadFor(l, 49, 149))
		}
	}
	check() // from the write cache
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if a, f := b.wc.size(); a != 0 || f != 0 {
		t.Fatalf("write cache after checkpoint: active %d frozen %d bytes", a, f)
	}
	// Entry-log records are sorted by (ledger, entry) even though adds were
	// interleaved per ledger only by chance here; check the order.
	for i := 1; i < len(d.logs); i++ {
		if compareKeys(d.logs[i-1].key, d.logs[i].key) >= 0 {
			t.Fatalf("entry log not sorted at %d: %v then %v", i, d.logs[i-1].key, d.logs[i].key)
		}
	}
	check() // from the entry log (and read-ahead cache)
	if !b.rc.has(2, 10) {
		t.Fatalf("read-ahead did not cache ledger 2 entry 10")
	}
	if _, err := b.ReadEntry(1, 50); !errors.Is(err, ErrNoEntry) {
		t.Fatalf("ReadEntry(1, 50) = %v, want ErrNoEntry", err)
	}
	if _, err := b.ReadEntry(9, 0); !errors.Is(err, ErrNoLedger) {
		t.Fatalf("ReadEntry(9, 0) = %v, want ErrNoLedger", err)
	}
	ls, err := b.ListLedgers()
	if err != nil || fmt.Sprint(ls) != "[1 2 3]" {
		t.Fatalf("ListLedgers() = %v, %v, want [1 2 3]", ls, err)
	}
}

func TestMasterKeyRefused(t *testing.T) {
	b := openFake(t, newFakeDisk(), nil)
	defer b.Close()
	if err := addSync(b, 1, 0, mk, []byte("a"), false); err != nil {
		t.Fatal(err)
	}
	if err := addSync(b, 1, 1, []byte("other"), []byte("b"), false); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("add with wrong key = %v, want ErrUnauthorized", err)
	}
	if err := addSync(b, 1, 1, []byte("other"), []byte("b"), true); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("recovery add with wrong key = %v, want ErrUnauthorized", err)
	}
	if err := b.Fence(1, []byte("other")); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("fence with wrong key = %v, want ErrUnauthorized", err)
	}
	if err := b.WriteLAC(1, 0, []byte("other"), nil); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("WriteLAC with wrong key = %v, want ErrUnauthorized", err)
	}
	if _, err := b.ReadEntry(1, 1); !errors.Is(err, ErrNoEntry) {
		t.Fatalf("refused entry reads back: %v", err)
	}
	if err := addSync(b, 1, 1, nil, []byte("b"), false); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("add without key = %v, want ErrBadRequest", err)
	}
}

func TestFencing(t *testing.T) {
	for _, viaCheckpoint := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpointed=%v", viaCheckpoint), func(t *testing.T) {
			d := newFakeDisk()
			b := openFake(t, d, nil)
			for e := int64(0); e < 5; e++ {
				if err := addSync(b, 7, e, mk, payloadFor(7, e, 10), false); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.Fence(7, mk); err != nil {
				t.Fatal(err)
			}
			if err := addSync(b, 7, 5, mk, payloadFor(7, 5, 10), false); !errors.Is(err, ErrFenced) {
				t.Fatalf("add after fence = %v, want ErrFenced", err)
			}
			if err := addSync(b, 7, 5, mk, payloadFor(7, 5, 10), true); err != nil {
				t.Fatalf("recovery add after fence = %v", err)
			}
			// A ledger never seen is created fenced.
			if err := b.Fence(8, mk); err != nil {
				t.Fatal(err)
			}
			if _, err := b.ReadEntry(8, -1); !errors.Is(err, ErrNoEntry) {
				t.Fatalf("ReadEntry(8, -1) on fenced empty ledger = %v, want ErrNoEntry", err)
			}
			if viaCheckpoint {
				if err := b.Checkpoint(); err != nil {
					t.Fatal(err)
				}
			}
			// Restart without Close: replay from the last checkpoint.
			b.closed.Store(true)
			close(b.closing)
			b.wg.Wait()
			b2 := openFake(t, d, nil)
			defer b2.Close()
			for _, l := range []int64{7, 8} {
				if f, err := b2.IsFenced(l); err != nil || !f {
					t.Fatalf("after restart IsFenced(%d) = %v, %v, want true", l, f, err)
				}
			}
			if err := addSync(b2, 7, 6, mk, payloadFor(7, 6, 10), false); !errors.Is(err, ErrFenced) {
				t.Fatalf("add after restart = %v, want ErrFenced", err)
			}
			mustRead(t, b2, 7, -1, payloadFor(7, 5, 10))
			if err := addSync(b2, 8, 0, []byte("bad"), nil, true); !errors.Is(err, ErrUnauthorized) {
				t.Fatalf("recovery add with wrong key after restart = %v, want ErrUnauthorized", err)
			}
		})
	}
}

func TestLAC(t *testing.T) {
	d := newFakeDisk()
	b := openFake(t, d, nil)
	if _, _, err := b.ReadLAC(3); !errors.Is(err, ErrNoLedger) {
		t.Fatalf("ReadLAC of unknown ledger = %v", err)
	}
	if err := addSync(b, 3, 0, mk, []byte("x"), false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.ReadLAC(3); !errors.Is(err, ErrNoEntry) {
		t.Fatalf("ReadLAC before WriteLAC = %v, want ErrNoEntry", err)
	}
	if err := b.WriteLAC(3, 5, mk, []byte("body5")); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteLAC(3, 4, mk, []byte("body4")); err != nil {
		t.Fatal(err)
	}
	if lac, body, err := b.ReadLAC(3); err != nil || lac != 5 || string(body) != "body5" {
		t.Fatalf("ReadLAC = %d, %q, %v, want 5, body5", lac, body, err)
	}
	b.Close()
	b = openFake(t, d, nil)
	defer b.Close()
	if lac, body, err := b.ReadLAC(3); err != nil || lac != 5 || string(body) != "body5" {
		t.Fatalf("after restart ReadLAC = %d, %q, %v, want 5, body5", lac, body, err)
	}
}

func TestDeleteLedger(t *testing.T) {
	d := newFakeDisk()
	b := openFake(t, d, nil)
	for _, l := range []int64{1, 2} {
		for e := int64(0); e < 10; e++ {
			if err := addSync(b, l, e, mk, payloadFor(l, e, 64), false); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	mustRead(t, b, 1, 3, payloadFor(1, 3, 64)) // fills the read cache
	// More entries in the write cache only.
	if err := addSync(b, 1, 10, mk, payloadFor(1, 10, 64), false); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteLedger(1); err != nil {
		t.Fatal(err)
	}
	for _, e := range []int64{3, 10, -1} {
		if _, err := b.ReadEntry(1, e); !errors.Is(err, ErrNoLedger) {
			t.Fatalf("ReadEntry(1, %d) after delete = %v, want ErrNoLedger", e, err)
		}
	}
	if err := b.DeleteLedger(1); !errors.Is(err, ErrNoLedger) {
		t.Fatalf("second delete = %v, want ErrNoLedger", err)
	}
	if err := b.GC(); err != nil {
		t.Fatal(err)
	}
	live := 0
	for _, r := range d.logs {
		if r.live {
			if r.ledger == 1 {
				t.Fatalf("GC kept an entry of deleted ledger 1: %v", r.key)
			}
			live++
		}
	}
	if live != 10 {
		t.Fatalf("after GC %d live entries, want 10 of ledger 2", live)
	}
	for e := int64(0); e < 10; e++ {
		mustRead(t, b, 2, e, payloadFor(2, e, 64))
	}
	b.Close()
	b = openFake(t, d, nil)
	defer b.Close()
	if ls, _ := b.ListLedgers(); fmt.Sprint(ls) != "[2]" {
		t.Fatalf("after restart ListLedgers = %v, want [2] (no resurrection by replay)", ls)
	}
	for e := int64(0); e < 10; e++ {
		mustRead(t, b, 2, e, payloadFor(2, e, 64))
	}
}

func TestReadOnlyDiskFull(t *testing.T) {
	d := newFakeDisk()
	b := openFake(t, d, nil)
	defer b.Close()
	fs := b.opts.FS.(*vfs.MemFS)
	if err := addSync(b, 1, 0, mk, []byte("before"), false); err != nil {
		t.Fatal(err)
	}
	const total = 1000 << 20
	fs.SetDiskUsage(total, total*4/100) // 96% used
	if err := b.CheckDisks(); err != nil {
		t.Fatal(err)
	}
	if !b.IsReadOnly() {
		t.Fatal("bookie not read-only at 96% usage")
	}
	err := addSync(b, 1, 1, mk, []byte("refused"), false)
	if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "disk usage 96.0%") {
		t.Fatalf("add while full = %v, want ErrReadOnly naming the usage", err)
	}
	mustRead(t, b, 1, 0, []byte("before"))
	// Recovery adds pass while enough space remains (40 MiB < 64 MiB
	// reserve: refused; then 96% of a bigger disk leaves enough).
	if err := addSync(b, 1, 1, mk, []byte("recovery"), true); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("recovery add below the reserve = %v, want ErrReadOnly", err)
	}
	fs.SetDiskUsage(100*total, 100*total*4/100)
	b.CheckDisks()
	if err := addSync(b, 1, 1, mk, []byte("recovery"), true); err != nil {
		t.Fatalf("recovery add above the reserve = %v", err)
	}
	// Between LWM and threshold: still read-only (hysteresis).
	fs.SetDiskUsage(total, total*8/100)
	b.CheckDisks()
	if err := addSync(b, 1, 2, mk, []byte("x"), false); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("add at 92%% after full = %v, want ErrReadOnly", err)
	}
	fs.SetDiskUsage(total, total*20/100)
	b.CheckDisks()
	if b.IsReadOnly() {
		t.Fatalf("still read-only at 80%%: %v", b.ReadOnlyReason())
	}
	if err := addSync(b, 1, 2, mk, []byte("after"), false); err != nil {
		t.Fatal(err)
	}
}

func TestJournalFailureReadOnly(t *testing.T) {
	d := newFakeDisk()
	b := openFake(t, d, nil)
	defer b.Close()
	if err := addSync(b, 1, 0, mk, []byte("ok"), false); err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	d.syncErr = errors.New("fdatasync: input/output error")
	d.mu.Unlock()
	if err := addSync(b, 1, 1, mk, []byte("lost"), false); err == nil {
		t.Fatal("add acked after the journal failed")
	}
	if !b.IsReadOnly() {
		t.Fatal("bookie not read-only after the journal failed")
	}
	err := addSync(b, 1, 2, mk, []byte("x"), false)
	if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "journal failed") {
		t.Fatalf("add after journal failure = %v, want ErrReadOnly naming the journal", err)
	}
	if err := b.Fence(1, mk); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("fence after journal failure = %v, want ErrReadOnly", err)
	}
	mustRead(t, b, 1, 0, []byte("ok"))
}

func TestCorruptionReadOnly(t *testing.T) {
	d := newFakeDisk()
	b := openFake(t, d, nil)
	defer b.Close()
	for e := int64(0); e < 3; e++ {
		if err := addSync(b, 1, e, mk, []byte("ok"), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	d.logs[1].key.entry = 99 // entry 1's record now names another entry
	d.mu.Unlock()
	if _, err := b.ReadEntry(1, 1); !isCorrupt(err) {
		t.Fatalf("ReadEntry of a corrupt record = %v, want corruption", err)
	}
	if err := b.ReadOnlyReason(); !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "corruption") {
		t.Fatalf("ReadOnlyReason = %v, want corruption", err)
	}
}

func TestCheckpointFailureKeepsData(t *testing.T) {
	d := newFakeDisk()
	b := openFake(t, d, nil)
	defer b.Close()
	if err := addSync(b, 1, 0, mk, []byte("kept"), false); err != nil {
		t.Fatal(err)
	}
	el := b.el.(*fakeEntryLog)
	el.addErr = errors.New("no space left on device")
	if err := b.Checkpoint(); err == nil {
		t.Fatal("checkpoint succeeded with a failing entry log")
	}
	if !b.IsReadOnly() {
		t.Fatal("not read-only after a failed checkpoint")
	}
	mustRead(t, b, 1, 0, []byte("kept")) // still in the frozen half
	el.addErr = nil
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if b.IsReadOnly() {
		t.Fatalf("still read-only after a good checkpoint: %v", b.ReadOnlyReason())
	}
	mustRead(t, b, 1, 0, []byte("kept"))
}

func TestClosedErrors(t *testing.T) {
	b := openFake(t, newFakeDisk(), nil)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := addSync(b, 1, 0, mk, nil, false); !errors.Is(err, ErrClosed) {
		t.Fatalf("add after Close = %v", err)
	}
	if _, err := b.ReadEntry(1, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after Close = %v", err)
	}
	if err := b.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close = %v", err)
	}
}
