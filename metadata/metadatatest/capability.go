package metadatatest

import (
	"context"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/metadata"
)

func ephemeraler(t *testing.T, s metadata.Store) (metadata.Ephemeraler, bool) {
	e, ok := s.(metadata.Ephemeraler)
	if !ok {
		t.Logf("%T does not implement metadata.Ephemeraler: not applicable", s)
	}
	return e, ok
}

func watcher(t *testing.T, s metadata.Store) (metadata.Watcher, bool) {
	w, ok := s.(metadata.Watcher)
	if !ok {
		t.Logf("%T does not implement metadata.Watcher: not applicable", s)
	}
	return w, ok
}

func testEphemeral(t *testing.T, open Opener) {
	s1 := open(t)
	t.Cleanup(func() { s1.Close() })
	e1, ok := ephemeraler(t, s1)
	if !ok {
		return
	}
	s2 := newStore(t, open)
	ctx := context.Background()
	if err := e1.PutEphemeral(ctx, "/live/bookie-1", []byte("addr")); err != nil {
		t.Fatalf("PutEphemeral: %v", err)
	}
	mustPut(t, s1, "/live/persistent", "p", metadata.NotExists)
	// Visible from another client while the session lives.
	wantGet(t, s2, "/live/bookie-1", "addr", 0)
	wantChildren(t, s2, "/live", "bookie-1", "persistent")
	// No children under an ephemeral node.
	_, err := s1.Put(ctx, "/live/bookie-1/x", nil, metadata.AnyVersion)
	wantErr(t, "Put under ephemeral node", err, metadata.ErrEphemeralParent)

	if err := s1.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wantExists(t, s2, "/live/bookie-1", false)
	wantChildren(t, s2, "/live", "persistent")
}

func testEphemeralOwnership(t *testing.T, open Opener) {
	s1, s2 := newStore(t, open), newStore(t, open)
	e1, ok := ephemeraler(t, s1)
	if !ok {
		return
	}
	e2 := s2.(metadata.Ephemeraler)
	ctx := context.Background()
	if err := e1.PutEphemeral(ctx, "/reg/a", []byte("one")); err != nil {
		t.Fatal(err)
	}
	// The owner may replace the value.
	if err := e1.PutEphemeral(ctx, "/reg/a", []byte("two")); err != nil {
		t.Fatalf("PutEphemeral again by the owner: %v", err)
	}
	wantGet(t, s2, "/reg/a", "two", 1)
	// Another session may not take it over, nor turn a persistent node into
	// an ephemeral one.
	wantErr(t, "PutEphemeral on another session's node", e2.PutEphemeral(ctx, "/reg/a", []byte("x")), metadata.ErrExists)
	mustPut(t, s2, "/reg/p", "persistent", metadata.NotExists)
	wantErr(t, "PutEphemeral on a persistent node", e1.PutEphemeral(ctx, "/reg/p", nil), metadata.ErrExists)
	wantGet(t, s1, "/reg/a", "two", 1)
}

func testEphemeralDelete(t *testing.T, open Opener) {
	s1 := open(t)
	t.Cleanup(func() { s1.Close() })
	e1, ok := ephemeraler(t, s1)
	if !ok {
		return
	}
	s2 := newStore(t, open)
	ctx := context.Background()
	if err := e1.PutEphemeral(ctx, "/x/gone", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := s2.Delete(ctx, "/x/gone", metadata.AnyVersion); err != nil {
		t.Fatalf("Delete of another session's ephemeral node: %v", err)
	}
	// Someone else may now own the path: s1's Close must not touch it.
	mustPut(t, s2, "/x/gone", "persistent", metadata.NotExists)
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	wantGet(t, s2, "/x/gone", "persistent", 0)
}

// events collects watch events for a test.
type events struct {
	t  *testing.T
	ch chan metadata.Event
}

func watchPath(t *testing.T, w metadata.Watcher, ctx context.Context, p string) *events {
	t.Helper()
	ev := &events{t: t, ch: make(chan metadata.Event, 1024)}
	if err := w.Watch(ctx, p, func(e metadata.Event) { ev.ch <- e }); err != nil {
		t.Fatalf("Watch(%s): %v", p, err)
	}
	return ev
}

// want waits (at most EventTimeout) for the next event and checks it.
func (e *events) want(p string, typ metadata.EventType) {
	e.t.Helper()
	timer := time.NewTimer(EventTimeout)
	defer timer.Stop()
	select {
	case got := <-e.ch:
		if got.Path != p || got.Type != typ {
			e.t.Fatalf("watch event = %+v, want {Path:%s Type:%d}", got, p, typ)
		}
	case <-timer.C:
		e.t.Fatalf("no watch event {Path:%s Type:%d} within %v", p, typ, EventTimeout)
	}
}

func testWatch(t *testing.T, open Opener) {
	s := newStore(t, open)
	w, ok := watcher(t, s)
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Watching a path that does not exist yet.
	ev := watchPath(t, w, ctx, "/w/n")
	mustPut(t, s, "/w/n", "v0", metadata.NotExists)
	ev.want("/w/n", metadata.EventCreated)
	mustPut(t, s, "/w/n", "v1", 0)
	ev.want("/w/n", metadata.EventChanged)
	mustPut(t, s, "/w/n/c", "", metadata.NotExists)
	ev.want("/w/n", metadata.EventChildren)
	mustPut(t, s, "/w/n/c", "changed", 0) // a child's value is not n's business
	if err := s.Delete(context.Background(), "/w/n/c", metadata.AnyVersion); err != nil {
		t.Fatal(err)
	}
	ev.want("/w/n", metadata.EventChildren)
	if err := s.Delete(context.Background(), "/w/n", metadata.AnyVersion); err != nil {
		t.Fatal(err)
	}
	ev.want("/w/n", metadata.EventDeleted)
	mustPut(t, s, "/w/n", "back", metadata.NotExists)
	ev.want("/w/n", metadata.EventCreated)

	// Children of a watched existing node, created by CreateSequential.
	ev2 := watchPath(t, w, ctx, "/w")
	if _, err := s.CreateSequential(context.Background(), "/w/s-", nil); err != nil {
		t.Fatal(err)
	}
	ev2.want("/w", metadata.EventChildren)
	select {
	case got := <-ev.ch:
		t.Fatalf("unexpected event %+v on /w/n", got)
	default:
	}
}

func testWatchOtherClient(t *testing.T, open Opener) {
	s1, s2 := newStore(t, open), newStore(t, open)
	w, ok := watcher(t, s1)
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mustPut(t, s2, "/o", "", metadata.NotExists)
	ev := watchPath(t, w, ctx, "/o")
	mustPut(t, s2, "/o", "x", 0)
	ev.want("/o", metadata.EventChanged)
	mustPut(t, s2, "/o/kid", "", metadata.NotExists)
	ev.want("/o", metadata.EventChildren)
	if e2, ok := s2.(metadata.Ephemeraler); ok {
		if err := e2.PutEphemeral(context.Background(), "/o/eph", nil); err != nil {
			t.Fatal(err)
		}
		ev.want("/o", metadata.EventChildren)
		if err := s2.Close(); err != nil {
			t.Fatal(err)
		}
		ev.want("/o", metadata.EventChildren) // the ephemeral node went away
		wantChildren(t, s1, "/o", "kid")
	}
}

func testWatchCancel(t *testing.T, open Opener) {
	s := newStore(t, open)
	w, ok := watcher(t, s)
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	first := watchPath(t, w, ctx, "/c")
	mustPut(t, s, "/c", "", metadata.NotExists)
	first.want("/c", metadata.EventCreated)
	cancel()
	// A watch with a live context still works after another was canceled,
	// and Close (run by cleanup) waits for both watch goroutines.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	ev := watchPath(t, w, ctx2, "/c")
	mustPut(t, s, "/c", "x", 0)
	ev.want("/c", metadata.EventChanged)
}
