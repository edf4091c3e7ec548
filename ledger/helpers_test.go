package ledger_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/bookie/server"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
)

func openStore(t testing.TB) metadata.Store {
	t.Helper()
	s, err := embedded.Open(filepath.Join(t.TempDir(), "meta.db"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// benchNoSync turns off the journal's fdatasync (BENCH_NOSYNC=1).
var benchNoSync bool

// benchZeroFill turns on the journal's zero fill (BENCH_ZEROFILL=1), as
// `magnetar bookie` and `magnetar standalone` run by default.
var benchZeroFill bool

// benchDirectIO writes the journals with O_DIRECT (BENCH_DIRECT=1).
var benchDirectIO bool

// benchWriteCache is the bookies' write cache size.
var benchWriteCache int64 = 4 << 20

func bookieOptions(fs vfs.FS, dir string) bookie.Options {
	return bookie.Options{
		JournalNoSync:       benchNoSync,
		JournalZeroFill:     benchZeroFill,
		JournalDirectIO:     benchDirectIO,
		FS:                  fs,
		JournalDir:          dir + "/journal",
		LedgerDirs:          []string{dir + "/ledgers"},
		WriteCacheSize:      benchWriteCache,
		DiskCheckInterval:   -1,
		GCInterval:          -1,
		JournalMaxGroupWait: -1,
	}
}

// crashBookieOptions: an in-memory bookie that checkpoints only on Close
// (a MemFS crash clone copies file by file, so it must not run while a
// checkpoint moves data between files; the journal carries every entry).
func crashBookieOptions(fs vfs.FS) bookie.Options {
	return bookie.Options{
		FS:                   fs,
		JournalDir:           "/bk/journal",
		LedgerDirs:           []string{"/bk/ledgers"},
		WriteCacheSize:       256 << 20,
		CheckpointInterval:   time.Hour,
		DiskCheckInterval:    -1,
		GCInterval:           -1,
		IndexSlotsPerPage:    64,
		IndexPagesPerSegment: 256,
	}
}

// memBookie opens a bookie in a temporary directory. (The OS file system:
// closing a bookie on vfs.MemFS takes seconds, its index segments being
// large in-memory files.)
func memBookie(t testing.TB) *bookie.Bookie {
	t.Helper()
	b, err := bookie.Open(bookieOptions(vfs.NewOS(), t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// localCluster is n in-process bookies named b0..bn-1 behind a static
// resolver, with a client placing ledgers on them.
type localCluster struct {
	store   metadata.Store
	bookies []*bookie.Bookie
	ids     []string
	res     *ledger.StaticResolver
	client  *ledger.Client
}

func newLocalCluster(t testing.TB, n int, opts ledger.Options) *localCluster {
	t.Helper()
	lc := &localCluster{store: openStore(t), res: ledger.NewStaticResolver(nil)}
	for i := range n {
		b := memBookie(t)
		id := fmt.Sprintf("b%d", i)
		lc.bookies = append(lc.bookies, b)
		lc.ids = append(lc.ids, id)
		lc.res.Set(id, server.NewLocal(b))
	}
	if opts.Bookies == nil {
		opts.Bookies = lc.ids
	}
	c, err := ledger.NewClient(lc.store, lc.res, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	lc.client = c
	return lc
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func payload(l, e int64, size int) []byte {
	p := []byte(fmt.Sprintf("ledger %d entry %d ", l, e))
	for len(p) < size {
		p = append(p, byte('a'+e%26))
	}
	return p
}

// addN adds n entries asynchronously and checks that callbacks run in
// order with consecutive ids; it returns once all completed.
func addN(t testing.TB, h *ledger.WriteHandle, from, n int) {
	t.Helper()
	done := make(chan error, 1)
	next := int64(from)
	left := n
	for i := range n {
		e := int64(from + i)
		h.AddAsync(payload(h.ID(), e, 100), func(id int64, err error) {
			if err == nil && id != next {
				err = fmt.Errorf("completion id %d, want %d", id, next)
			}
			next++
			left--
			if err != nil {
				select {
				case done <- err:
				default:
				}
				return
			}
			if left == 0 {
				done <- nil
			}
		})
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func checkEntries(t testing.TB, r interface {
	Read(context.Context, int64, int64) ([][]byte, error)
}, id int64, first, last int64) {
	t.Helper()
	got, err := r.Read(ctxT(t), first, last)
	if err != nil {
		t.Fatalf("Read(%d, %d): %v", first, last, err)
	}
	for i, p := range got {
		if want := payload(id, first+int64(i), 100); string(p) != string(want) {
			t.Fatalf("entry %d = %q, want %q", first+int64(i), p, want)
		}
	}
}

// benchConns is the net clusters' connections per bookie: 2 in tests
// (pooling is exercised); BenchmarkAdd sets BENCH_CONNS, else 1 (the
// client's default).
var benchConns = 2
