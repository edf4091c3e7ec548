package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestWatchLoopFrames(t *testing.T) {
	a := &adminCLI{}
	var out bytes.Buffer
	n := 0
	err := watchLoop(context.Background(), a, &out, false, time.Millisecond, 3, "magnetar admin topics stats x", func() error {
		n++
		if n == 2 {
			return errors.New("connection refused")
		}
		fmt.Fprintf(a.out, "KEY  VALUE\nmsgInCounter  %d\n", n*10)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if c := strings.Count(s, "Every 1ms: magnetar admin topics stats x"); c != 3 {
		t.Fatalf("%d frame headers, want 3:\n%s", c, s)
	}
	// Each frame has that call's table; a failed refresh shows its error
	// and the watch goes on.
	if !strings.Contains(s, "msgInCounter  10") || !strings.Contains(s, "error: connection refused") || !strings.Contains(s, "msgInCounter  30") {
		t.Fatalf("frames:\n%s", s)
	}
	if a.out != &out {
		t.Fatal("watchLoop did not restore the output")
	}
	// On a terminal every frame clears the screen first.
	out.Reset()
	if err := watchLoop(context.Background(), a, &out, true, time.Millisecond, 2, "t", func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if c := strings.Count(out.String(), "\x1b[H\x1b[2J"); c != 2 {
		t.Fatalf("%d screen clears, want 2", c)
	}
	// An error on the first call ends the watch with it.
	first := errors.New("404 Not Found: Topic not found")
	if err := watchLoop(context.Background(), a, &out, false, time.Millisecond, 0, "t", func() error { return first }); !errors.Is(err, first) {
		t.Fatalf("first-call error: %v", err)
	}
	// Cancellation ends an endless watch after the current frame.
	ctx, cancel := context.WithCancel(context.Background())
	frames := 0
	err = watchLoop(ctx, a, &out, false, time.Millisecond, 0, "t", func() error {
		frames++
		if frames == 4 {
			cancel()
		}
		return nil
	})
	if err != nil || frames != 4 {
		t.Fatalf("cancelled watch: err %v after %d frames, want nil after 4", err, frames)
	}
}

// TestAdminWatchE2E: `magnetar admin topics stats --watch` against a
// standalone prints refreshed tables; bad flags and a missing topic fail.
func TestAdminWatchE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	p := startStandalone(t, t.TempDir())
	if code, _, body := httpDo(t, "PUT", p.http+"/admin/v2/persistent/public/default/watched", "", false); code != 204 {
		t.Fatalf("create topic: %d %s", code, body)
	}
	out := runAdmin(t, p, false, "topics", "stats", "public/default/watched", "--watch", "--watch-interval", "50ms", "--watch-count", "3")
	if c := strings.Count(out, "Every 50ms: magnetar admin topics stats public/default/watched"); c != 3 {
		t.Fatalf("%d frames, want 3:\n%s", c, out)
	}
	if c := strings.Count(out, "msgInCounter"); c != 3 {
		t.Fatalf("%d stats tables, want 3:\n%s", c, out)
	}
	if out := runAdmin(t, p, false, "topics", "stats-internal", "public/default/watched", "-w", "--watch-interval", "10ms", "--watch-count", "2"); strings.Count(out, "Every 10ms") != 2 || strings.Count(out, "entriesAddedCounter") != 2 {
		t.Fatalf("stats-internal -w:\n%s", out)
	}
	if msg := runAdmin(t, p, true, "topics", "stats", "public/default/missing", "--watch", "--watch-count", "2"); !strings.Contains(msg, "404") {
		t.Fatalf("watch of a missing topic: %s", msg)
	}
	if msg := runAdmin(t, p, true, "topics", "stats", "public/default/watched", "--watch", "--watch-interval", "0s"); !strings.Contains(msg, "--watch-interval") {
		t.Fatalf("zero interval: %s", msg)
	}
	p.stop()
}
