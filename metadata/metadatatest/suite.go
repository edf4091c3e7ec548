package metadatatest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/metadata"
)

// EventTimeout bounds each wait for a watch event.
var EventTimeout = 15 * time.Second

// Opener returns a client of the store under test; see the package doc.
type Opener func(t *testing.T) metadata.Store

// Run runs every conformance test as a subtest of t.
func Run(t *testing.T, open func(t *testing.T) metadata.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open Opener)
	}{
		{"GetPut", testGetPut},
		{"Values", testValues},
		{"Parents", testParents},
		{"Delete", testDelete},
		{"Children", testChildren},
		{"Root", testRoot},
		{"InvalidPath", testInvalidPath},
		{"Sequential", testSequential},
		{"SequentialConcurrent", testSequentialConcurrent},
		{"ConcurrentCAS", testConcurrentCAS},
		{"Ephemeral", testEphemeral},
		{"EphemeralOwnership", testEphemeralOwnership},
		{"EphemeralDelete", testEphemeralDelete},
		{"Watch", testWatch},
		{"WatchOtherClient", testWatchOtherClient},
		{"WatchCancel", testWatchCancel},
		{"Context", testContext},
		{"Closed", testClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

func newStore(t *testing.T, open Opener) metadata.Store {
	t.Helper()
	s := open(t)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func mustPut(t *testing.T, s metadata.Store, p, v string, expected metadata.Version) metadata.Version {
	t.Helper()
	ver, err := s.Put(context.Background(), p, []byte(v), expected)
	if err != nil {
		t.Fatalf("Put(%s, %q, %d): %v", p, v, expected, err)
	}
	return ver
}

func wantGet(t *testing.T, s metadata.Store, p, want string, wantVer metadata.Version) {
	t.Helper()
	got, ver, err := s.Get(context.Background(), p)
	if err != nil {
		t.Fatalf("Get(%s): %v", p, err)
	}
	if string(got) != want || ver != wantVer {
		t.Fatalf("Get(%s) = %q v%d, want %q v%d", p, got, ver, want, wantVer)
	}
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: err = %v, want %v", what, err, want)
	}
}

func wantExists(t *testing.T, s metadata.Store, p string, want bool) {
	t.Helper()
	ok, err := s.Exists(context.Background(), p)
	if err != nil {
		t.Fatalf("Exists(%s): %v", p, err)
	}
	if ok != want {
		t.Fatalf("Exists(%s) = %v, want %v", p, ok, want)
	}
}

func wantChildren(t *testing.T, s metadata.Store, p string, want ...string) {
	t.Helper()
	got, err := s.Children(context.Background(), p)
	if err != nil {
		t.Fatalf("Children(%s): %v", p, err)
	}
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Children(%s) = %q, want %q", p, got, want)
	}
}

func testGetPut(t *testing.T, open Opener) {
	s := newStore(t, open)
	ctx := context.Background()
	_, _, err := s.Get(ctx, "/k")
	wantErr(t, "Get missing", err, metadata.ErrNotFound)
	_, err = s.Put(ctx, "/k", []byte("x"), 0)
	wantErr(t, "CAS on missing node", err, metadata.ErrNotFound)

	if v := mustPut(t, s, "/k", "a", metadata.NotExists); v != 0 {
		t.Fatalf("create version = %d, want 0", v)
	}
	wantGet(t, s, "/k", "a", 0)
	_, err = s.Put(ctx, "/k", []byte("b"), metadata.NotExists)
	wantErr(t, "create over existing node", err, metadata.ErrExists)
	wantGet(t, s, "/k", "a", 0)

	if v := mustPut(t, s, "/k", "b", 0); v != 1 {
		t.Fatalf("CAS version = %d, want 1", v)
	}
	_, err = s.Put(ctx, "/k", []byte("c"), 0)
	wantErr(t, "CAS with stale version", err, metadata.ErrBadVersion)
	_, err = s.Put(ctx, "/k", []byte("c"), 7)
	wantErr(t, "CAS with future version", err, metadata.ErrBadVersion)
	wantGet(t, s, "/k", "b", 1)

	if v := mustPut(t, s, "/k", "c", metadata.AnyVersion); v != 2 {
		t.Fatalf("unconditional put version = %d, want 2", v)
	}
	if v := mustPut(t, s, "/new", "n", metadata.AnyVersion); v != 0 {
		t.Fatalf("unconditional create version = %d, want 0", v)
	}
	wantGet(t, s, "/k", "c", 2)
	wantGet(t, s, "/new", "n", 0)
	wantExists(t, s, "/k", true)
	wantExists(t, s, "/nope", false)
}

func testValues(t *testing.T, open Opener) {
	s := newStore(t, open)
	mustPut(t, s, "/empty", "", metadata.NotExists)
	wantGet(t, s, "/empty", "", 0)
	if _, err := s.Put(context.Background(), "/nil", nil, metadata.NotExists); err != nil {
		t.Fatalf("Put nil: %v", err)
	}
	wantGet(t, s, "/nil", "", 0)

	big := bytes.Repeat([]byte("0123456789abcdef"), 100<<10/16) // 100 KiB
	big[len(big)-1] = 0
	if _, err := s.Put(context.Background(), "/big", big, metadata.NotExists); err != nil {
		t.Fatalf("Put 100 KiB: %v", err)
	}
	got, _, err := s.Get(context.Background(), "/big")
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("Get 100 KiB = %d bytes, %v; want the value written", len(got), err)
	}
	// Up to MaxValueSize bytes, and not one more.
	maxVal := bytes.Repeat([]byte{'m'}, metadata.MaxValueSize)
	if _, err := s.Put(context.Background(), "/max", maxVal, metadata.NotExists); err != nil {
		t.Fatalf("Put of MaxValueSize bytes: %v", err)
	}
	if got, _, err := s.Get(context.Background(), "/max"); err != nil || !bytes.Equal(got, maxVal) {
		t.Fatalf("Get of MaxValueSize bytes = %d bytes, %v", len(got), err)
	}
	_, err = s.Put(context.Background(), "/max", append(maxVal, 'x'), metadata.AnyVersion)
	wantErr(t, "Put of MaxValueSize+1 bytes", err, metadata.ErrTooLarge)
	_, err = s.CreateSequential(context.Background(), "/max-", append(maxVal, 'x'))
	wantErr(t, "CreateSequential of MaxValueSize+1 bytes", err, metadata.ErrTooLarge)
	if e, ok := s.(metadata.Ephemeraler); ok {
		wantErr(t, "PutEphemeral of MaxValueSize+1 bytes", e.PutEphemeral(context.Background(), "/maxe", append(maxVal, 'x')), metadata.ErrTooLarge)
	}
	wantGet(t, s, "/max", string(maxVal), 0)

	// The store must not alias the caller's buffer.
	buf := []byte("first")
	if _, err := s.Put(context.Background(), "/alias", buf, metadata.NotExists); err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXXX")
	wantGet(t, s, "/alias", "first", 0)
	got, _, _ = s.Get(context.Background(), "/alias")
	copy(got, "YYYYY")
	wantGet(t, s, "/alias", "first", 0)
}

func testParents(t *testing.T, open Opener) {
	s := newStore(t, open)
	mustPut(t, s, "/a/b/c", "leaf", metadata.AnyVersion)
	wantExists(t, s, "/a", true)
	wantExists(t, s, "/a/b", true)
	wantGet(t, s, "/a/b/c", "leaf", 0)
	wantChildren(t, s, "/a", "b")
	wantChildren(t, s, "/a/b", "c")
	// A create-only put creates parents too, and leaves existing ones alone.
	mustPut(t, s, "/a", "top", 0)
	mustPut(t, s, "/a/x/y", "y", metadata.NotExists)
	wantGet(t, s, "/a", "top", 1)
	wantChildren(t, s, "/a", "b", "x")
	// CAS never creates anything.
	_, err := s.Put(context.Background(), "/p/q", []byte("v"), 0)
	wantErr(t, "CAS under missing parent", err, metadata.ErrNotFound)
	wantExists(t, s, "/p", false)
}

func testDelete(t *testing.T, open Opener) {
	s := newStore(t, open)
	ctx := context.Background()
	wantErr(t, "Delete missing", s.Delete(ctx, "/d", metadata.AnyVersion), metadata.ErrNotFound)
	mustPut(t, s, "/d", "v0", metadata.NotExists)
	mustPut(t, s, "/d", "v1", 0)
	wantErr(t, "Delete stale version", s.Delete(ctx, "/d", 0), metadata.ErrBadVersion)
	wantExists(t, s, "/d", true)
	if err := s.Delete(ctx, "/d", 1); err != nil {
		t.Fatalf("Delete(/d, 1): %v", err)
	}
	wantExists(t, s, "/d", false)
	wantErr(t, "Delete again", s.Delete(ctx, "/d", 1), metadata.ErrNotFound)

	mustPut(t, s, "/e/child", "c", metadata.AnyVersion)
	wantErr(t, "Delete with children", s.Delete(ctx, "/e", metadata.AnyVersion), metadata.ErrNotEmpty)
	if err := s.Delete(ctx, "/e/child", metadata.AnyVersion); err != nil {
		t.Fatal(err)
	}
	wantChildren(t, s, "/e")
	if err := s.Delete(ctx, "/e", metadata.AnyVersion); err != nil {
		t.Fatalf("Delete emptied parent: %v", err)
	}
	// Re-creating a deleted node starts again at version 0.
	if v := mustPut(t, s, "/d", "again", metadata.NotExists); v != 0 {
		t.Fatalf("re-create version = %d, want 0", v)
	}
}

func testChildren(t *testing.T, open Opener) {
	s := newStore(t, open)
	_, err := s.Children(context.Background(), "/c")
	wantErr(t, "Children of missing node", err, metadata.ErrNotFound)
	names := []string{"m", "b", "z", "a-1", "a", "a0", "B", "10", "9"}
	for _, n := range names {
		mustPut(t, s, "/c/"+n, n, metadata.NotExists)
	}
	mustPut(t, s, "/c/m/deeper", "", metadata.NotExists)
	mustPut(t, s, "/cc", "", metadata.NotExists) // a sibling sharing the prefix
	want := slices.Clone(names)
	slices.Sort(want)
	wantChildren(t, s, "/c", want...)
	wantChildren(t, s, "/c/m", "deeper")
	wantChildren(t, s, "/c/z")
}

func testRoot(t *testing.T, open Opener) {
	s := newStore(t, open)
	wantExists(t, s, "/", true)
	wantChildren(t, s, "/")
	mustPut(t, s, "/two", "", metadata.NotExists)
	mustPut(t, s, "/one/x", "", metadata.NotExists)
	wantChildren(t, s, "/", "one", "two")
	wantErr(t, "Delete /", s.Delete(context.Background(), "/", metadata.AnyVersion), metadata.ErrInvalidPath)
}

func testInvalidPath(t *testing.T, open Opener) {
	s := newStore(t, open)
	ctx := context.Background()
	for _, p := range []string{"", "a", "a/b", "/a/", "//a", "/a//b", "/a/./b", "/..", "/a\x00b"} {
		_, _, err := s.Get(ctx, p)
		wantErr(t, fmt.Sprintf("Get(%q)", p), err, metadata.ErrInvalidPath)
		_, err = s.Put(ctx, p, nil, metadata.AnyVersion)
		wantErr(t, fmt.Sprintf("Put(%q)", p), err, metadata.ErrInvalidPath)
		wantErr(t, fmt.Sprintf("Delete(%q)", p), s.Delete(ctx, p, metadata.AnyVersion), metadata.ErrInvalidPath)
		_, err = s.Children(ctx, p)
		wantErr(t, fmt.Sprintf("Children(%q)", p), err, metadata.ErrInvalidPath)
		_, err = s.Exists(ctx, p)
		wantErr(t, fmt.Sprintf("Exists(%q)", p), err, metadata.ErrInvalidPath)
	}
	_, err := s.CreateSequential(ctx, "noslash", nil)
	wantErr(t, "CreateSequential(noslash)", err, metadata.ErrInvalidPath)
}

// seqNumber checks that p is parentPrefix followed by ten digits and
// returns the number.
func seqNumber(t *testing.T, p, parentPrefix string) int64 {
	t.Helper()
	digits, ok := strings.CutPrefix(p, parentPrefix)
	if !ok || len(digits) != 10 {
		t.Fatalf("CreateSequential(%s) = %s, want the prefix and 10 digits", parentPrefix, p)
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		t.Fatalf("CreateSequential(%s) = %s: %v", parentPrefix, p, err)
	}
	return n
}

func testSequential(t *testing.T, open Opener) {
	s := newStore(t, open)
	ctx := context.Background()
	last := int64(-1)
	for i := range 5 {
		p, err := s.CreateSequential(ctx, "/seq/q/job-", []byte(strconv.Itoa(i)))
		if err != nil {
			t.Fatalf("CreateSequential: %v", err)
		}
		n := seqNumber(t, p, "/seq/q/job-")
		if n <= last {
			t.Fatalf("sequence %d after %d, want increasing", n, last)
		}
		last = n
		wantGet(t, s, p, strconv.Itoa(i), 0)
	}
	kids, err := s.Children(ctx, "/seq/q")
	if err != nil || len(kids) != 5 {
		t.Fatalf("Children(/seq/q) = %q, %v; want 5 nodes", kids, err)
	}
	// Numbers are not reused after a delete.
	if err := s.Delete(ctx, "/seq/q/"+kids[4], metadata.AnyVersion); err != nil {
		t.Fatal(err)
	}
	p, err := s.CreateSequential(ctx, "/seq/q/job-", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := seqNumber(t, p, "/seq/q/job-"); n <= last {
		t.Fatalf("sequence %d after deleting %d, want larger", n, last)
	}
	// An empty name prefix gives bare numbers.
	p, err = s.CreateSequential(ctx, "/seq/bare/", []byte("b"))
	if err != nil {
		t.Fatal(err)
	}
	seqNumber(t, p, "/seq/bare/")
}

func testSequentialConcurrent(t *testing.T, open Opener) {
	s1, s2 := newStore(t, open), newStore(t, open)
	const workers, each = 4, 25
	results := make([][]int64, workers)
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := range workers {
		s := s1
		if w%2 == 1 {
			s = s2
		}
		wg.Go(func() {
			for range each {
				p, err := s.CreateSequential(context.Background(), "/conc/n-", nil)
				if err != nil {
					errc <- err
					return
				}
				n, err := strconv.ParseInt(strings.TrimPrefix(p, "/conc/n-"), 10, 64)
				if err != nil {
					errc <- fmt.Errorf("bad sequential path %s", p)
					return
				}
				results[w] = append(results[w], n)
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatalf("CreateSequential: %v", err)
	}
	seen := map[int64]bool{}
	for w, ns := range results {
		for i, n := range ns {
			if seen[n] {
				t.Fatalf("sequence number %d handed out twice", n)
			}
			seen[n] = true
			if i > 0 && n <= ns[i-1] {
				t.Fatalf("worker %d got %d after %d, want increasing", w, n, ns[i-1])
			}
		}
	}
	kids, err := s1.Children(context.Background(), "/conc")
	if err != nil || len(kids) != workers*each {
		t.Fatalf("Children(/conc) has %d nodes, %v; want %d", len(kids), err, workers*each)
	}
}

func testConcurrentCAS(t *testing.T, open Opener) {
	s1, s2 := newStore(t, open), newStore(t, open)
	mustPut(t, s1, "/counter", "0", metadata.NotExists)
	const workers, each = 4, 25
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := range workers {
		s := s1
		if w%2 == 1 {
			s = s2
		}
		wg.Go(func() {
			ctx := context.Background()
			for range each {
				for {
					v, ver, err := s.Get(ctx, "/counter")
					if err != nil {
						errc <- err
						return
					}
					n, _ := strconv.Atoi(string(v))
					_, err = s.Put(ctx, "/counter", []byte(strconv.Itoa(n+1)), ver)
					if err == nil {
						break
					}
					if !errors.Is(err, metadata.ErrBadVersion) {
						errc <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatalf("increment: %v", err)
	}
	wantGet(t, s1, "/counter", strconv.Itoa(workers*each), workers*each)
}

func testContext(t *testing.T, open Opener) {
	s := newStore(t, open)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := s.Get(ctx, "/x")
	wantErr(t, "Get with canceled context", err, context.Canceled)
	_, err = s.Put(ctx, "/x", nil, metadata.AnyVersion)
	wantErr(t, "Put with canceled context", err, context.Canceled)
	wantExists(t, s, "/x", false)
}

func testClosed(t *testing.T, open Opener) {
	s := open(t)
	mustPut(t, s, "/before", "v", metadata.NotExists)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := context.Background()
	_, _, err := s.Get(ctx, "/before")
	wantErr(t, "Get after Close", err, metadata.ErrClosed)
	_, err = s.Put(ctx, "/x", nil, metadata.AnyVersion)
	wantErr(t, "Put after Close", err, metadata.ErrClosed)
	wantErr(t, "Delete after Close", s.Delete(ctx, "/before", metadata.AnyVersion), metadata.ErrClosed)
	_, err = s.Children(ctx, "/")
	wantErr(t, "Children after Close", err, metadata.ErrClosed)
	_, err = s.Exists(ctx, "/")
	wantErr(t, "Exists after Close", err, metadata.ErrClosed)
	_, err = s.CreateSequential(ctx, "/s-", nil)
	wantErr(t, "CreateSequential after Close", err, metadata.ErrClosed)
	if e, ok := s.(metadata.Ephemeraler); ok {
		wantErr(t, "PutEphemeral after Close", e.PutEphemeral(ctx, "/e", nil), metadata.ErrClosed)
	}
	if w, ok := s.(metadata.Watcher); ok {
		wantErr(t, "Watch after Close", w.Watch(ctx, "/before", func(metadata.Event) {}), metadata.ErrClosed)
	}
	// The data outlives the client.
	s2 := newStore(t, open)
	wantGet(t, s2, "/before", "v", 0)
}
