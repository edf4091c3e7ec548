package index

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/testenv"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// storedKey is the master key slice ledger's state holds.
func storedKey(t *testing.T, ix *Index, ledger int64) []byte {
	t.Helper()
	ls := ix.lookup(ledger)
	if ls == nil {
		t.Fatalf("ledger %d not in the index", ledger)
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.meta.MasterKey
}

// Ledgers with the same master key share one copy of it, set or reopened;
// neither the caller's buffer nor a GetMeta result changes what is stored.
func TestMasterKeysShared(t *testing.T) {
	fs := vfs.NewMem()
	ix := open(t, fs, "/ix")
	buf := []byte("a-twenty-byte-key...")
	want := bytes.Clone(buf)
	for l := int64(0); l < 100; l++ {
		if err := ix.SetMeta(l, Meta{MasterKey: buf, Fenced: l%2 == 0}); err != nil {
			t.Fatal(err)
		}
	}
	buf[0] = 'X' // the caller reuses its buffer
	m, _ := ix.GetMeta(7)
	m.MasterKey[1] = 'Y' // and writes into what it was given
	check := func(ix *Index, when string) {
		t.Helper()
		first := storedKey(t, ix, 0)
		for l := int64(0); l < 100; l++ {
			m, ok := ix.GetMeta(l)
			if !ok || !bytes.Equal(m.MasterKey, want) || m.Fenced != (l%2 == 0) {
				t.Fatalf("%s: ledger %d meta %q fenced %v, want key %q", when, l, m.MasterKey, m.Fenced, want)
			}
			if k := storedKey(t, ix, l); &k[0] != &first[0] || cap(k) != len(k) {
				t.Fatalf("%s: ledger %d keeps its own copy of the key (or an unclipped one)", when, l)
			}
		}
	}
	check(ix, "set")
	ix = flushReopen(t, ix, fs, "/ix")
	defer ix.Close()
	check(ix, "reopened")
}

// Past maxSharedKeys distinct keys every ledger still gets its own key.
func TestMasterKeysPastTheTable(t *testing.T) {
	ix := open(t, vfs.NewMem(), "/ix")
	defer ix.Close()
	const n = maxSharedKeys + 100
	for l := int64(0); l < n; l++ {
		if err := ix.SetMeta(l, Meta{MasterKey: []byte(fmt.Sprintf("key-%d", l))}); err != nil {
			t.Fatal(err)
		}
	}
	for l := int64(0); l < n; l++ {
		if m, _ := ix.GetMeta(l); string(m.MasterKey) != fmt.Sprintf("key-%d", l) {
			t.Fatalf("ledger %d key %q", l, m.MasterKey)
		}
	}
	if err := ix.SetMeta(n, Meta{}); err != nil {
		t.Fatal(err)
	}
	if m, _ := ix.GetMeta(n); m.MasterKey != nil {
		t.Fatalf("a ledger without a key got %q", m.MasterKey)
	}
}

// A ledger's first page table holds just its pages; it grows with room
// after that, and every location set stays readable.
func TestFirstPageTableExact(t *testing.T) {
	ix := open(t, vfs.NewMem(), "/ix") // 8 slots a page
	defer ix.Close()
	if err := ix.Set(1, 3, loc(1, 3, 1)); err != nil {
		t.Fatal(err)
	}
	if pt := *ix.lookup(1).pages.Load(); len(pt) != 1 || cap(pt) != 1 {
		t.Fatalf("first page table len %d cap %d, want 1 and 1", len(pt), cap(pt))
	}
	for e := int64(0); e < 100; e++ {
		if err := ix.Set(1, e, loc(1, e, 2)); err != nil {
			t.Fatal(err)
		}
	}
	if pt := *ix.lookup(1).pages.Load(); len(pt) != 13 || cap(pt) < 13 {
		t.Fatalf("page table len %d cap %d after 100 entries", len(pt), cap(pt))
	}
	for e := int64(0); e < 100; e++ {
		if got, ok := ix.Get(1, e); !ok || got != loc(1, e, 2) {
			t.Fatalf("Get(1, %d) = %#x, %v", e, got, ok)
		}
	}
}

// A ledger with a master key and one page costs the index at most
// recordGuard bytes of heap (224 B before keys were shared and the first
// page table was exact; 172 B after, 184 B under the race detector), so a bookie holding a million idle
// ledgers keeps ~170 MB for them.
func TestLedgerRecordMemory(t *testing.T) {
	const recordGuard = 200
	ix, err := Open(Options{FS: vfs.NewOS(), Dir: t.TempDir() + "/ix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	const n = 100_000
	before := testenv.LiveHeap()
	key := []byte("twenty-byte-key.....")
	for l := int64(0); l < n; l++ {
		if err := ix.SetMeta(l, Meta{MasterKey: key}); err != nil {
			t.Fatal(err)
		}
		if err := ix.Set(l, 0, 1); err != nil {
			t.Fatal(err)
		}
	}
	per := (float64(testenv.LiveHeap()) - float64(before)) / n
	t.Logf("%d ledgers with a key and a page: %.0f B of heap each", n, per)
	if per > recordGuard {
		t.Fatalf("a ledger's record costs %.0f B of heap, guard %d B", per, recordGuard)
	}
}
