package admincli

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
