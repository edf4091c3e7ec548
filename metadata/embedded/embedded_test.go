package embedded

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/metadatatest"
)

// opener returns a metadatatest opener: one database file per *testing.T,
// one handle (session) per call.
func opener() func(t *testing.T) metadata.Store {
	var mu sync.Mutex
	files := map[*testing.T]string{}
	return func(t *testing.T) metadata.Store {
		mu.Lock()
		f, ok := files[t]
		if !ok {
			f = filepath.Join(t.TempDir(), "meta.db")
			files[t] = f
		}
		mu.Unlock()
		s, err := Open(f, Options{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

func TestConformance(t *testing.T) {
	metadatatest.Run(t, opener())
}

func TestReopenKeepsDataDropsEphemerals(t *testing.T) {
	ctx := context.Background()
	f := filepath.Join(t.TempDir(), "meta.db")
	s, err := Open(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "/ledgers/00/L1", []byte("meta"), metadata.NotExists); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "/ledgers/00/L1", []byte("meta2"), 0); err != nil {
		t.Fatal(err)
	}
	seq, err := s.CreateSequential(ctx, "/ids/id-", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutEphemeral(ctx, "/available/b1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	// Simulate process death: close the bolt file without ending the
	// session, so the ephemeral node is still on disk.
	registry.mu.Lock()
	delete(registry.dbs, s.db.path)
	registry.mu.Unlock()
	close(s.db.quit)
	<-s.db.done
	if err := s.db.bolt.Close(); err != nil {
		t.Fatal(err)
	}

	s2, err := Open(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	v, ver, err := s2.Get(ctx, "/ledgers/00/L1")
	if err != nil || string(v) != "meta2" || ver != 1 {
		t.Fatalf("Get after reopen = %q v%d %v, want meta2 v1", v, ver, err)
	}
	if ok, _ := s2.Exists(ctx, "/available/b1"); ok {
		t.Fatalf("ephemeral node of the dead process survived Open")
	}
	if kids, _ := s2.Children(ctx, "/available"); len(kids) != 0 {
		t.Fatalf("Children(/available) = %q, want none", kids)
	}
	seq2, err := s2.CreateSequential(ctx, "/ids/id-", nil)
	if err != nil || seq2 <= seq {
		t.Fatalf("CreateSequential after reopen = %s, %v; want after %s", seq2, err, seq)
	}
}

func TestSharedHandles(t *testing.T) {
	f := filepath.Join(t.TempDir(), "meta.db")
	a, err := Open(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a.db != b.db || a.session == b.session {
		t.Fatalf("two handles of one file: shared db %v, sessions %d %d", a.db == b.db, a.session, b.session)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// b still works after a closed.
	if _, err := b.Put(context.Background(), "/x", nil, metadata.NotExists); err != nil {
		t.Fatalf("Put on the remaining handle: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	registry.mu.Lock()
	n := len(registry.dbs)
	registry.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d databases still registered after the last Close", n)
	}
}

func TestCorruptRecord(t *testing.T) {
	if _, err := decodeRecord([]byte{1, 0, 0}); err == nil {
		t.Fatal("decodeRecord(short) succeeded")
	}
	r := record{flags: flagEphemeral, version: 7, nextSeq: 9, owner: 3, value: []byte("v")}
	got, err := decodeRecord(appendRecord(nil, &r))
	if err != nil || got.flags != r.flags || got.version != 7 || got.nextSeq != 9 || got.owner != 3 || string(got.value) != "v" {
		t.Fatalf("decodeRecord(appendRecord(r)) = %+v, %v", got, err)
	}
}

// TestBatchFailureIsolated: an op that fails the whole bbolt transaction (a
// key over bbolt's 32 KiB limit) must not fail the ops batched with it.
func TestBatchFailureIsolated(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "meta.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	long := "/" + strings.Repeat("k", 40<<10)
	for round := range 5 {
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() {
				p := fmt.Sprintf("/ok/r%d-%d", round, i)
				if i == 0 {
					p = long
				}
				_, errs[i] = s.Put(ctx, p, []byte("v"), metadata.NotExists)
			})
		}
		wg.Wait()
		if errs[0] == nil {
			t.Fatalf("Put of a 40 KiB path succeeded")
		}
		for i, err := range errs[1:] {
			if err != nil {
				t.Fatalf("round %d: Put /ok/r%d-%d batched with a failing op: %v", round, round, i+1, err)
			}
		}
	}
	kids, err := s.Children(ctx, "/ok")
	if err != nil || len(kids) != 5*7 {
		t.Fatalf("Children(/ok) = %d names, %v; want 35", len(kids), err)
	}
}
