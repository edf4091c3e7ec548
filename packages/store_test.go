package packages

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/bookie/server"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
)

// env is one bookie and a metadata store in a directory, reopenable.
type env struct {
	t     *testing.T
	dir   string
	md    *embedded.Store
	bk    *bookie.Bookie
	lc    *ledger.Client
	store *Store
}

func openEnv(t *testing.T, dir string) *env {
	t.Helper()
	e := &env{t: t, dir: dir}
	var err error
	if e.md, err = embedded.Open(filepath.Join(dir, "metadata.db"), embedded.Options{}); err != nil {
		t.Fatal(err)
	}
	if e.bk, err = bookie.Open(bookie.Options{FS: vfs.Default, JournalDir: filepath.Join(dir, "journal"), LedgerDirs: []string{filepath.Join(dir, "ledgers")}}); err != nil {
		t.Fatal(err)
	}
	res := ledger.NewStaticResolver(map[string]ledger.BookieClient{"b1": server.NewLocal(e.bk)})
	if e.lc, err = ledger.NewClient(e.md, res, ledger.Options{Bookies: []string{"b1"}}); err != nil {
		t.Fatal(err)
	}
	if e.store, err = New(Options{Metadata: e.md, Ledgers: e.lc}); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) close() {
	e.lc.Close()
	e.bk.Close()
	e.md.Close()
}

func mustName(t *testing.T, s string) Name {
	t.Helper()
	n, err := ParseName(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + i>>13)
	}
	return b
}

// TestStoreInLedgers: contents go to one ledger of EntrySize entries
// (the last shorter), come back byte for byte, after a reopen of the
// store and bookie too; delete removes record, ledger and empty parents.
func TestStoreInLedgers(t *testing.T) {
	dir := t.TempDir()
	e := openEnv(t, dir)
	ctx := context.Background()
	sizes := map[string]int{"empty": 0, "one": 10, "exact": 2 * EntrySize, "multi": 3*EntrySize + 4321}
	for name, size := range sizes {
		n := mustName(t, "function://t/ns/"+name+"@v1")
		if err := e.store.Upload(ctx, n, Metadata{Description: name}, bytes.NewReader(pattern(size))); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r, _, err := e.store.get(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if want := int64((size + EntrySize - 1) / EntrySize); r.Entries != want || r.Size != int64(size) {
			t.Fatalf("%s: record %+v, want %d entries", name, r, want)
		}
		m, _, err := e.lc.Metadata(ctx, r.Ledger)
		if err != nil || m.State != ledger.StateClosed || m.LastEntryID != r.Entries-1 || string(m.Custom["package"]) != n.String() {
			t.Fatalf("%s: ledger %d: %+v %v", name, r.Ledger, m, err)
		}
	}
	e.close()
	e = openEnv(t, dir)
	defer e.close()
	for name, size := range sizes {
		var buf bytes.Buffer
		if err := e.store.Download(ctx, mustName(t, "function://t/ns/"+name+"@v1"), &buf); err != nil {
			t.Fatalf("%s after reopen: %v", name, err)
		}
		if !bytes.Equal(buf.Bytes(), pattern(size)) {
			t.Fatalf("%s after reopen: %d bytes differ from the %d uploaded", name, buf.Len(), size)
		}
	}
	names, err := e.store.List(ctx, TypeFunction, "t", "ns")
	if err != nil || strings.Join(names, ",") != "empty,exact,multi,one" {
		t.Fatalf("list: %v %v", names, err)
	}
	n := mustName(t, "function://t/ns/multi@v1")
	r, _, _ := e.store.get(ctx, n)
	if err := e.store.Delete(ctx, n); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.lc.Metadata(ctx, r.Ledger); !errors.Is(err, ledger.ErrNoSuchLedger) {
		t.Fatalf("the deleted package's ledger: %v", err)
	}
	if ok, _ := e.md.Exists(ctx, namePath(n)); ok {
		t.Fatal("the name's node outlived its last version")
	}
	if err := e.store.Download(ctx, n, &bytes.Buffer{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("download of a deleted package: %v", err)
	}
}

// TestUploadRace: of concurrent uploads of one version exactly one
// wins, and the losers leave no ledger behind.
func TestUploadRace(t *testing.T) {
	e := openEnv(t, t.TempDir())
	defer e.close()
	ctx := context.Background()
	n := mustName(t, "sink://t/ns/race@1.0")
	before, err := e.lc.Ledgers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = e.store.Upload(ctx, n, Metadata{}, bytes.NewReader(pattern(EntrySize+i)))
		}()
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, ErrExists):
			t.Fatalf("a losing upload: %v", err)
		}
	}
	after, err := e.lc.Ledgers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if wins != 1 || len(after) != len(before)+1 {
		t.Fatalf("%d uploads won; ledgers %v → %v", wins, before, after)
	}
}

// TestPendingAbort: an upload whose metadata never comes (Abort) leaves
// neither record nor ledger.
func TestPendingAbort(t *testing.T) {
	e := openEnv(t, t.TempDir())
	defer e.close()
	ctx := context.Background()
	n := mustName(t, "source://t/ns/p@v1")
	pu, err := e.store.WriteContents(ctx, n, bytes.NewReader(pattern(100)))
	if err != nil {
		t.Fatal(err)
	}
	pu.Abort(ctx)
	if _, _, err := e.lc.Metadata(ctx, pu.rec.Ledger); !errors.Is(err, ledger.ErrNoSuchLedger) {
		t.Fatalf("aborted upload's ledger: %v", err)
	}
	if _, err := e.store.GetMetadata(ctx, n); !errors.Is(err, ErrNotFound) {
		t.Fatalf("aborted upload's record: %v", err)
	}
	if err := pu.Commit(ctx, Metadata{}); err == nil {
		t.Fatal("commit after abort succeeded")
	}
}

func TestParseName(t *testing.T) {
	for in, want := range map[string]string{
		"function://t/ns/n@v1":  "function://t/ns/n@v1",
		"sink://t/ns/n":         "sink://t/ns/n@latest",
		"source://t/ns/n@":      "source://t/ns/n@latest",
		"function://t/ns/n@1.0": "function://t/ns/n@1.0",
	} {
		n, err := ParseName(in)
		if err != nil || n.String() != want {
			t.Errorf("%q: %v %v, want %s", in, n, err, want)
		}
	}
	for _, in := range []string{"t/ns/n@v1", "jar://t/ns/n@v1", "function://t/n@v1", "function://t/ns/n/x@v1",
		"function://t/ns/n@v1@v2", "function://t/../n@v1", "function://t/ns/.@v1", "function://t/ns/n@..",
		"function://t/ns/a\\b@v1", "function://t/ns/n@v\x00", "function:///ns/n@v1", "Function://t/ns/n@v1"} {
		if _, err := ParseName(in); !errors.Is(err, ErrBadName) {
			t.Errorf("%q: %v, want ErrBadName", in, err)
		}
	}
	if _, err := New(Options{}); err == nil {
		t.Error("a store without metadata and ledgers")
	}
}
