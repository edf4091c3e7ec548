package offload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// memSource is a closed ledger in memory.
type memSource struct {
	id      int64
	entries [][]byte
	reads   atomic.Int64
}

func (s *memSource) ID() int64               { return s.id }
func (s *memSource) LastAddConfirmed() int64 { return int64(len(s.entries)) - 1 }
func (s *memSource) Length() int64 {
	var n int64
	for _, e := range s.entries {
		n += int64(len(e))
	}
	return n
}
func (s *memSource) Read(_ context.Context, first, last int64) ([][]byte, error) {
	s.reads.Add(1)
	return s.entries[first : last+1], nil
}

func randomSource(id int64, n, maxLen int, seed uint64) *memSource {
	r := rand.New(rand.NewPCG(seed, 1))
	s := &memSource{id: id}
	for i := 0; i < n; i++ {
		b := make([]byte, r.IntN(maxLen+1))
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		s.entries = append(s.entries, b)
	}
	return s
}

// fakeS3 is an S3-compatible server (gofakes3) on a real listener, with a
// switch that makes it answer 503 to everything.
type fakeS3 struct {
	srv  *httptest.Server
	down atomic.Bool
}

func startFakeS3(t testing.TB, bucket string) *fakeS3 {
	t.Helper()
	be := s3mem.New()
	if err := be.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	f := &fakeS3{}
	h := gofakes3.New(be).Server()
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func s3Config(f *fakeS3, bucket string) Config {
	return Config{Driver: DriverS3, Bucket: bucket, ServiceEndpoint: f.srv.URL, Region: "us-east-1",
		CredentialID: "id", CredentialSecret: "secret", MaxBlockSize: MinMaxBlockSize, ReadBufferSize: 64 << 10}
}

type backend struct {
	name string
	o    *Offloader
	down func(bool)
}

func backends(t *testing.T) []backend {
	f := startFakeS3(t, "offload-test")
	so, err := New(s3Config(f, "offload-test"), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "objects")
	do, err := New(Config{Driver: DriverFilesystem, Directory: dir, MaxBlockSize: MinMaxBlockSize, ReadBufferSize: 64 << 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return []backend{
		{"s3", so, func(d bool) { f.down.Store(d) }},
		{"dir", do, func(d bool) {
			if d {
				_ = os.Rename(dir, dir+".away")
			} else {
				_ = os.Rename(dir+".away", dir)
			}
		}},
	}
}

func TestOffloadReadBack(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			// ~12 MiB: three blocks of at most 5 MiB, entries up to 64 KiB.
			src := randomSource(7, 400, 64<<10, 1)
			uid := NewUID()
			if err := b.o.Offload(ctx, src, uid, "public/default/persistent/t"); err != nil {
				t.Fatal(err)
			}
			h, err := b.o.Open(ctx, 7, uid, b.o.DriverMetadata())
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			if h.LastAddConfirmed() != 399 || h.Length() != src.Length() {
				t.Fatalf("lac %d length %d, want 399 %d", h.LastAddConfirmed(), h.Length(), src.Length())
			}
			if len(h.ix.blocks) < 3 {
				t.Fatalf("%d blocks, want >= 3", len(h.ix.blocks))
			}
			// Sequential read of everything, in batches.
			for first := int64(0); first <= 399; first += 37 {
				last := min(first+36, 399)
				es, err := h.Read(ctx, first, last)
				if err != nil {
					t.Fatal(err)
				}
				for i, e := range es {
					if !bytes.Equal(e, src.entries[first+int64(i)]) {
						t.Fatalf("entry %d differs", first+int64(i))
					}
				}
			}
			// Random ranges, backwards and forwards.
			r := rand.New(rand.NewPCG(2, 2))
			for range 50 {
				a, c := r.Int64N(400), r.Int64N(400)
				if a > c {
					a, c = c, a
				}
				c = min(c, a+20)
				es, err := h.Read(ctx, a, c)
				if err != nil {
					t.Fatal(err)
				}
				for i, e := range es {
					if !bytes.Equal(e, src.entries[a+int64(i)]) {
						t.Fatalf("entry %d differs", a+int64(i))
					}
				}
			}
			for _, rg := range [][2]int64{{-1, 0}, {5, 4}, {0, 400}, {400, 400}} {
				if _, err := h.Read(ctx, rg[0], rg[1]); !errors.Is(err, ErrBadRange) {
					t.Fatalf("read %v: %v, want ErrBadRange", rg, err)
				}
			}
			keys, err := b.o.List(ctx, uid.String())
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) == 0 {
				t.Fatal("no objects listed")
			}
			if err := b.o.Delete(ctx, 7, uid, b.o.DriverMetadata()); err != nil {
				t.Fatal(err)
			}
			if keys, _ := b.o.List(ctx, uid.String()); len(keys) != 0 {
				t.Fatalf("objects left after delete: %v", keys)
			}
			if _, err := b.o.Open(ctx, 7, uid, nil); !errors.Is(err, ErrNotFound) {
				t.Fatalf("open deleted: %v", err)
			}
			if _, err := h.Read(ctx, 0, 0); err == nil {
				// The handle's buffer may still hold entry 0; a read far
				// away must fail.
				if _, err := h.Read(ctx, 399, 399); err == nil {
					t.Fatal("read of deleted objects succeeded")
				}
			}
			h.Close()
			if _, err := h.Read(ctx, 0, 0); !errors.Is(err, ErrClosed) {
				t.Fatalf("read on closed handle: %v", err)
			}
		})
	}
}

// TestOffloadStoreDown: a failed offload leaves no object; reads of an
// offloaded ledger fail clearly while the store is down and work again
// afterwards.
func TestOffloadStoreDown(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			src := randomSource(3, 50, 1000, 3)
			b.down(true)
			uid := NewUID()
			err := b.o.Offload(ctx, src, uid, "ml")
			if !errors.Is(err, ErrStoreUnavailable) {
				t.Fatalf("offload with store down: %v", err)
			}
			b.down(false)
			if keys, _ := b.o.List(ctx, uid.String()); len(keys) != 0 {
				t.Fatalf("failed offload left %v", keys)
			}
			if err := b.o.Offload(ctx, src, uid, "ml"); err != nil {
				t.Fatal(err)
			}
			b.down(true)
			if _, err := b.o.Open(ctx, 3, uid, nil); !errors.Is(err, ErrStoreUnavailable) {
				t.Fatalf("open with store down: %v", err)
			}
			b.down(false)
			h, err := b.o.Open(ctx, 3, uid, nil)
			if err != nil {
				t.Fatal(err)
			}
			b.down(true)
			if _, err := h.Read(ctx, 0, 49); !errors.Is(err, ErrStoreUnavailable) {
				t.Fatalf("read with store down: %v", err)
			}
			b.down(false)
			es, err := h.Read(ctx, 0, 49)
			if err != nil {
				t.Fatal(err)
			}
			for i := range es {
				if !bytes.Equal(es[i], src.entries[i]) {
					t.Fatalf("entry %d differs", i)
				}
			}
		})
	}
}

// TestOffloadSourceFails: a source read error mid-offload aborts the
// upload and leaves nothing behind.
func TestOffloadSourceFails(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			src := &failingSource{memSource: randomSource(9, 500, 40<<10, 4), failAt: 300}
			uid := NewUID()
			if err := b.o.Offload(ctx, src, uid, "ml"); err == nil || !errors.Is(err, errSource) {
				t.Fatalf("offload: %v", err)
			}
			if keys, _ := b.o.List(ctx, uid.String()); len(keys) != 0 {
				t.Fatalf("failed offload left %v", keys)
			}
			if err := b.o.Offload(ctx, &memSource{id: 1}, NewUID(), "ml"); !errors.Is(err, ErrNotOffloadable) {
				t.Fatalf("empty ledger: %v", err)
			}
		})
	}
}

var errSource = errors.New("source read failed")

type failingSource struct {
	*memSource
	failAt int64
}

func (s *failingSource) Read(ctx context.Context, first, last int64) ([][]byte, error) {
	if last >= s.failAt {
		return nil, errSource
	}
	return s.memSource.Read(ctx, first, last)
}

// TestOffloadBigEntry: an entry larger than the block size gets a block
// of its own.
func TestOffloadBigEntry(t *testing.T) {
	ctx := context.Background()
	b := backends(t)[1]
	src := &memSource{id: 4, entries: [][]byte{[]byte("a"), bytes.Repeat([]byte{7}, MinMaxBlockSize+10), []byte("c")}}
	uid := NewUID()
	if err := b.o.Offload(ctx, src, uid, "ml"); err != nil {
		t.Fatal(err)
	}
	h, err := b.o.Open(ctx, 4, uid, nil)
	if err != nil {
		t.Fatal(err)
	}
	es, err := h.Read(ctx, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range es {
		if !bytes.Equal(es[i], src.entries[i]) {
			t.Fatalf("entry %d differs", i)
		}
	}
}

func TestFormatVersionChecked(t *testing.T) {
	ctx := context.Background()
	b := backends(t)[1]
	src := randomSource(5, 10, 100, 5)
	uid := NewUID()
	if err := b.o.Offload(ctx, src, uid, "ml"); err != nil {
		t.Fatal(err)
	}
	ds := b.o.store.(*dirStore)
	p, _ := ds.path(IndexKey(uid, 5))
	if err := os.WriteFile(p+metaSuffix, []byte(`{"s3managedledgeroffloaderformatversion":"2"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := b.o.Open(ctx, 5, uid, nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open with version 2: %v", err)
	}
}

func TestFromProperties(t *testing.T) {
	c, err := FromProperties(map[string]string{
		"managedLedgerOffloadDriver":              "aws-s3",
		"s3ManagedLedgerOffloadBucket":            "b",
		"managedLedgerOffloadBucket":              "ignored",
		"s3ManagedLedgerOffloadRegion":            "eu-west-1",
		"managedLedgerOffloadMaxBlockSizeInBytes": fmt.Sprint(8 << 20),
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Bucket != "b" || c.Region != "eu-west-1" || c.MaxBlockSize != 8<<20 || c.ReadBufferSize != DefaultReadBufferSize {
		t.Fatalf("%+v", c)
	}
	for _, bad := range []map[string]string{
		{"managedLedgerOffloadDriver": "aws-s3", "s3ManagedLedgerOffloadBucket": "b"},
		{"managedLedgerOffloadDriver": "S3", "s3ManagedLedgerOffloadBucket": "b", "s3ManagedLedgerOffloadRegion": "r"},
		{"managedLedgerOffloadDriver": "aws-s3", "s3ManagedLedgerOffloadRegion": "r"},
		{"managedLedgerOffloadDriver": "azureblob"},
		{"managedLedgerOffloadDriver": "filesystem"},
		{"managedLedgerOffloadDriver": "filesystem", "fileSystemURI": "hdfs://x/y"},
		{"managedLedgerOffloadDriver": "filesystem", "fileSystemURI": "/x", "managedLedgerOffloadMaxBlockSizeInBytes": "1000"},
		{"managedLedgerOffloadDriver": "filesystem", "fileSystemURI": "/x", "managedLedgerOffloadMaxBlockSizeInBytes": "9223372036854775807"},
		{"managedLedgerOffloadDriver": "filesystem", "fileSystemURI": "/x", "managedLedgerOffloadReadBufferSizeInBytes": "-1"},
	} {
		if _, err := FromProperties(bad); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%v: %v, want ErrBadConfig", bad, err)
		}
	}
	prof := filepath.Join(t.TempDir(), "fs.properties")
	if err := os.WriteFile(prof, []byte("# profile\nfs.defaultFS = file:///var/offload\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err = FromProperties(map[string]string{"managedLedgerOffloadDriver": "FILESYSTEM", "fileSystemProfilePath": prof})
	if err != nil || c.Directory != "/var/offload" {
		t.Fatalf("%+v %v", c, err)
	}
}

func TestUID(t *testing.T) {
	u := NewUID()
	s := u.String()
	if len(s) != 36 || s[14] != '4' {
		t.Fatalf("%s", s)
	}
	v, err := ParseUID(s)
	if err != nil || v != u {
		t.Fatalf("%v %v", v, err)
	}
	if _, err := ParseUID("x"); err == nil {
		t.Fatal("bad uid parsed")
	}
}
