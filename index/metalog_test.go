package index

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// TestMetaLogWritesChangesOnly: with 5,000 ledgers, a Flush after one
// ledger gained a page appends one small block to the log and leaves the
// snapshot alone; a Flush with nothing changed writes nothing; reopening
// applies the block.
func TestMetaLogWritesChangesOnly(t *testing.T) {
	fs := vfs.NewMem()
	o := Options{FS: fs, Dir: "/ix", SlotsPerPage: 8, PagesPerSegment: 1024}
	ix, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	for l := range int64(n) {
		if err := ix.Set(l, 0, loc(l, 0, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Flush(); err != nil {
		t.Fatal(err)
	}
	snap := readAll(t, fs, "/ix/"+MetaFile)
	logSize := len(readAll(t, fs, "/ix/"+MetaLogFile))
	if logSize != metaLogHeaderLen {
		t.Fatalf("log after the first flush: %d bytes, want the header only", logSize)
	}
	if err := ix.Set(77, 8, loc(77, 8, 2)); err != nil { // a second page
		t.Fatal(err)
	}
	if err := ix.Flush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readAll(t, fs, "/ix/"+MetaFile), snap) {
		t.Fatal("snapshot rewritten for one changed ledger")
	}
	grown := len(readAll(t, fs, "/ix/"+MetaLogFile)) - logSize
	if grown <= 0 || grown > 64 {
		t.Fatalf("log grew by %d bytes for one ledger (snapshot %d bytes)", grown, len(snap))
	}
	if err := ix.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := len(readAll(t, fs, "/ix/"+MetaLogFile)); got != logSize+grown {
		t.Fatalf("an idle flush wrote %d bytes", got-logSize-grown)
	}
	if err := ix.Delete(78); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix, err = Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if v, ok := ix.Get(77, 8); !ok || v != loc(77, 8, 2) {
		t.Fatalf("Get(77, 8) = %#x, %v after reopen", v, ok)
	}
	if ix.Exists(78) || len(ix.Ledgers()) != n-1 {
		t.Fatalf("after reopen: ledger 78 exists %v, %d ledgers", ix.Exists(78), len(ix.Ledgers()))
	}
}

// TestMetaLogCompacts: once the log passes MetaLogLimit, the next Flush
// writes a snapshot of the next generation and a fresh log.
func TestMetaLogCompacts(t *testing.T) {
	fs := vfs.NewMem()
	o := Options{FS: fs, Dir: "/ix", SlotsPerPage: 8, PagesPerSegment: 64, MetaLogLimit: 200}
	ix, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	gens := map[uint64]bool{}
	for i := range int64(40) {
		if err := ix.Set(i%5, i*8, loc(i%5, i*8, 1)); err != nil {
			t.Fatal(err)
		}
		if err := ix.Flush(); err != nil {
			t.Fatal(err)
		}
		h, _, err := decodeMeta(readAll(t, fs, "/ix/"+MetaFile))
		if err != nil {
			t.Fatal(err)
		}
		gens[h.Generation] = true
		lg, err := decodeLogHeader(readAll(t, fs, "/ix/"+MetaLogFile))
		if err != nil || lg != h.Generation {
			t.Fatalf("log generation %d, %v; snapshot %d", lg, err, h.Generation)
		}
		// At most one block (5 ledgers of up to 40 pages) past the limit.
		if size := len(readAll(t, fs, "/ix/"+MetaLogFile)); size > 200+logBlockHeaderLen+8+5*(24+4*40) {
			t.Fatalf("log of %d bytes past a limit of 200", size)
		}
	}
	if len(gens) < 3 {
		t.Fatalf("snapshot generations %v: want several compactions", gens)
	}
	ix.Close()
	ix, err = Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	for i := range int64(40) {
		if v, ok := ix.Get(i%5, i*8); !ok || v != loc(i%5, i*8, 1) {
			t.Fatalf("Get(%d, %d) = %#x, %v", i%5, i*8, v, ok)
		}
	}
}

// metaLogSetup writes an index with a snapshot and two log blocks and
// returns the log's bytes and the offset of the second block.
func metaLogSetup(t *testing.T, fs vfs.FS) ([]byte, int) {
	t.Helper()
	ix, err := Open(Options{FS: fs, Dir: "/ix", SlotsPerPage: 8, PagesPerSegment: 64})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []int64{1, 2, 3} { // a snapshot, then two blocks
		if err := ix.Set(l, 0, loc(l, 0, 1)); err != nil {
			t.Fatal(err)
		}
		if err := ix.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	b := readAll(t, fs, "/ix/"+MetaLogFile)
	n, _, _, err := decodeLogBlock(b[metaLogHeaderLen:])
	if err != nil {
		t.Fatal(err)
	}
	return b, metaLogHeaderLen + n
}

// TestMetaLogTornTail: a partly written last block (a Flush that never
// returned) is dropped and truncated at Open; the log keeps working.
func TestMetaLogTornTail(t *testing.T) {
	for _, cut := range []int{1, 5, 13, 20} {
		fs := vfs.NewMem()
		b, second := metaLogSetup(t, fs)
		writeAll(t, fs, "/ix/"+MetaLogFile, b[:min(second+cut, len(b)-1)])
		ix, err := Open(Options{FS: fs, Dir: "/ix"})
		if err != nil {
			t.Fatalf("cut %d: Open = %v", cut, err)
		}
		if !ix.Exists(2) || ix.Exists(3) {
			t.Fatalf("cut %d: ledgers %v, want the first block's", cut, ix.Ledgers())
		}
		if got := len(readAll(t, fs, "/ix/"+MetaLogFile)); got != second {
			t.Fatalf("cut %d: log is %d bytes after Open, want %d", cut, got, second)
		}
		if err := ix.Set(9, 0, loc(9, 0, 1)); err != nil {
			t.Fatal(err)
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
		ix, err = Open(Options{FS: fs, Dir: "/ix"})
		if err != nil || !ix.Exists(9) {
			t.Fatalf("cut %d: reopen = %v, ledgers %v", cut, err, ix.Ledgers())
		}
		ix.Close()
	}
}

// TestMetaLogCorrupt: a damaged block followed by a valid one is
// corruption (each block was synced before the next was written), named
// with the file and offset; a damaged header too.
func TestMetaLogCorrupt(t *testing.T) {
	fs := vfs.NewMem()
	b, _ := metaLogSetup(t, fs)
	bad := append([]byte(nil), b...)
	bad[metaLogHeaderLen+logBlockHeaderLen+2] ^= 0x40 // first block's body
	writeAll(t, fs, "/ix/"+MetaLogFile, bad)
	_, err := Open(Options{FS: fs, Dir: "/ix"})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), MetaLogFile) || !strings.Contains(err.Error(), "offset 24") {
		t.Fatalf("Open = %v, want ErrCorrupt naming %s offset 24", err, MetaLogFile)
	}
	bad = append([]byte(nil), b...)
	bad[9] ^= 1 // generation, under the header checksum
	writeAll(t, fs, "/ix/"+MetaLogFile, bad)
	if _, err := Open(Options{FS: fs, Dir: "/ix"}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open with a bad log header = %v, want ErrCorrupt", err)
	}
}

// TestMetaLogStaleGeneration: a log of an older snapshot (a crash between
// a snapshot's rename and the new log's) is ignored, and the next Flush
// writes a snapshot and a log of a new generation.
func TestMetaLogStaleGeneration(t *testing.T) {
	fs := vfs.NewMem()
	b, _ := metaLogSetup(t, fs)
	snap := readAll(t, fs, "/ix/"+MetaFile)
	h, recs, err := decodeMeta(snap)
	if err != nil {
		t.Fatal(err)
	}
	// Snapshot of the next generation holding only ledger 1; the log
	// (adding 2 and 3) belongs to the old one.
	h.Generation++
	writeAll(t, fs, "/ix/"+MetaFile, appendMeta(nil, h, recs[:1]))
	writeAll(t, fs, "/ix/"+MetaLogFile, b)
	ix, err := Open(Options{FS: fs, Dir: "/ix"})
	if err != nil {
		t.Fatal(err)
	}
	if ix.Exists(2) || !ix.Exists(1) {
		t.Fatalf("ledgers %v: the stale log was applied", ix.Ledgers())
	}
	if err := ix.Set(4, 0, loc(4, 0, 1)); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	nh, _, err := decodeMeta(readAll(t, fs, "/ix/"+MetaFile))
	lg, lerr := decodeLogHeader(readAll(t, fs, "/ix/"+MetaLogFile))
	if err != nil || lerr != nil || nh.Generation != h.Generation+1 || lg != nh.Generation {
		t.Fatalf("after a flush: snapshot generation %d (%v), log %d (%v)", nh.Generation, err, lg, lerr)
	}
}

// FuzzLogBlock: decoding arbitrary bytes never panics, and what decodes
// re-encodes to the same bytes.
func FuzzLogBlock(f *testing.F) {
	f.Add(appendLogBlock(nil, 3, []logChange{{rec: ledgerRecord{ID: 5, Meta: Meta{MasterKey: []byte("k")}, Pages: []uint32{1, 0, 2}}}, {rec: ledgerRecord{ID: 6}, deleted: true}}))
	f.Add([]byte("MGLB\x08\x00\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, segs, ch, err := decodeLogBlock(b)
		if err != nil {
			return
		}
		for i := range ch {
			if !ch[i].deleted && ch[i].rec.Pages == nil {
				ch[i].rec.Pages = []uint32{}
			}
		}
		if re := appendLogBlock(nil, segs, ch); !bytes.Equal(re, b[:n]) {
			t.Fatalf("re-encoded block differs")
		}
	})
}
