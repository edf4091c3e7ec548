package localcluster

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestNthAddr(t *testing.T) {
	if got, err := nthAddr("127.0.0.1:6650", 2); err != nil || got != "127.0.0.1:6652" {
		t.Fatalf("nthAddr(6650, 2) = %q, %v", got, err)
	}
	if got, err := nthAddr(":8080", 0); err != nil || got != ":8080" {
		t.Fatalf("nthAddr(:8080, 0) = %q, %v", got, err)
	}
	got, err := nthAddr("127.0.0.1:0", 3)
	if err != nil {
		t.Fatal(err)
	}
	_, ps, _ := net.SplitHostPort(got)
	if p, _ := strconv.Atoi(ps); p == 0 {
		t.Fatalf("port 0 should become a free port, got %q", got)
	}
	for _, bad := range []string{"6650", "host:port"} {
		if _, err := nthAddr(bad, 0); err == nil {
			t.Errorf("nthAddr(%q) accepted", bad)
		}
	}
}

func TestReadyFields(t *testing.T) {
	f := readyFields("magnetar broker ready service=pulsar://127.0.0.1:6650 http=http://127.0.0.1:8080")
	if f["service"] != "pulsar://127.0.0.1:6650" || f["http"] != "http://127.0.0.1:8080" || len(f) != 2 {
		t.Fatalf("%v", f)
	}
}

// lineLog is an io.Writer that hands every write to the test.
type lineLog chan string

func (l lineLog) Write(p []byte) (int, error) {
	l <- string(p)
	return len(p), nil
}

// next waits for a report containing want.
func (l lineLog) next(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case s := <-l:
			if strings.Contains(s, want) {
				return
			}
		case <-deadline:
			t.Fatalf("no report %q within 60s", want)
		}
	}
}

// shChild starts a shell child that prints a ready line and waits.
func shChild(t *testing.T, name string) func() (*child, <-chan string, error) {
	log := filepath.Join(t.TempDir(), name+".log")
	return func() (*child, <-chan string, error) {
		return startChild(name, log, "ready", "/bin/sh", "-c", "echo ready pid=$$; exec sleep 600")
	}
}

// TestSupervisorRestarts: a child killed behind the supervisor's back is
// reported and, with restart, started again (a new process); stopAll
// stops it. Without restart a death is only reported.
func TestSupervisorRestarts(t *testing.T) {
	log := make(lineLog, 16)
	s := &supervisor{restart: true, log: log}
	line, err := s.add("sleeper", shChild(t, "sleeper"))
	if err != nil || readyFields(line)["pid"] == "" {
		t.Fatalf("add: %q, %v", line, err)
	}
	first := s.procs[0].cur
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.watch(ctx)
	first.cmd.Process.Kill()
	log.next(t, "sleeper exited unexpectedly")
	log.next(t, "sleeper restarted")
	s.mu.Lock()
	second := s.procs[0].cur
	s.mu.Unlock()
	if second == first || second.cmd.Process.Pid == first.cmd.Process.Pid {
		t.Fatal("not a new process after the restart")
	}
	s.stopAll()
	select {
	case <-second.done:
	default:
		t.Fatal("stopAll returned with the child running")
	}

	once := &supervisor{log: log}
	if _, err := once.add("once", shChild(t, "once")); err != nil {
		t.Fatal(err)
	}
	c := once.procs[0].cur
	once.watch(ctx)
	c.cmd.Process.Kill()
	log.next(t, "once exited unexpectedly")
	once.stopAll()
	if once.procs[0].cur != c {
		t.Fatal("restarted without restart")
	}
}

// TestChildNotReady: a child that exits before its ready line is an
// error naming its log.
func TestChildNotReady(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "quitter.log")
	s := &supervisor{log: make(lineLog, 16)}
	_, err := s.add("quitter", func() (*child, <-chan string, error) {
		return startChild("quitter", logPath, "ready", "/bin/sh", "-c", "echo not yet; echo broken >&2; exit 2")
	})
	if err == nil || !strings.Contains(err.Error(), "quitter exited before it was ready") || !strings.Contains(err.Error(), logPath) {
		t.Fatalf("err = %v", err)
	}
	s.stopAll()
}
