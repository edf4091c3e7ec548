package index

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// mappedRSS sums the Rss of this process's mappings of files under dir
// (/proc/self/smaps), in bytes.
func mappedRSS(t *testing.T, dir string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var total int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		switch {
		case len(fs) >= 5 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":"):
			in = len(fs) >= 6 && strings.HasPrefix(fs[5], dir) // a mapping's first line
		case len(fs) == 3 && fs[0] == "Rss:" && in:
			kb, _ := strconv.ParseInt(fs[1], 10, 64)
			total += kb << 10
		}
	}
	return total
}

// TestIdlePagesNotResident: a page per ledger is written (or, at Open,
// scanned, or read), but after a flush and after Open the segments' pages
// are not in the process's resident set; every location still reads back.
func TestIdlePagesNotResident(t *testing.T) {
	dir := t.TempDir() + "/ix"
	const n = 4000 // 4000 pages of 4 KiB: 16 MiB if resident
	ix, err := Open(Options{FS: vfs.NewOS(), Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for l := range int64(n) {
		if err := ix.Set(l, 0, loc(l, 0, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if r := mappedRSS(t, dir); r < n*4096/2 {
		t.Fatalf("only %d bytes resident before the flush: the test measures nothing", r)
	}
	if err := ix.Flush(); err != nil {
		t.Fatal(err)
	}
	if r := mappedRSS(t, dir); r > 1<<20 {
		t.Errorf("%d bytes of index pages resident after the flush", r)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix, err = Open(Options{FS: vfs.NewOS(), Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if r := mappedRSS(t, dir); r > 1<<20 {
		t.Errorf("%d bytes of index pages resident after Open", r)
	}
	for l := range int64(n) {
		if got, ok := ix.Get(l, 0); !ok || got != loc(l, 0, 1) {
			t.Fatalf("Get(%d, 0) = %#x, %v", l, got, ok)
		}
	}
	// The reads mapped the pages again; the next flush (nothing dirty)
	// drops them.
	if err := ix.Flush(); err != nil {
		t.Fatal(err)
	}
	if r := mappedRSS(t, dir); r > 1<<20 {
		t.Errorf("%d bytes of index pages resident after reads and a flush", r)
	}
}
