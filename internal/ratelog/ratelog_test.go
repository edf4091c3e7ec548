package ratelog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestRateLog: a burst gives one line; the next line after the interval
// reports how many were dropped.
func TestLine(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, nil))
	var r Line
	for range 100 {
		r.Log(l, slog.LevelWarn, "persist failed", "topic", "t")
	}
	if n := strings.Count(buf.String(), "persist failed"); n != 1 {
		t.Fatalf("%d lines for a burst of 100, want 1:\n%s", n, buf.String())
	}
	r.mu.Lock()
	r.next = time.Now().Add(-time.Millisecond) // the interval has passed
	r.mu.Unlock()
	r.Log(l, slog.LevelWarn, "persist failed", "topic", "t")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "suppressed=99") {
		t.Fatalf("lines = %q, want a second one with suppressed=99", lines)
	}
}
