package acceptloop

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// flakyListener fails its first n Accepts with err, then accepts from the
// real listener.
type flakyListener struct {
	net.Listener
	mu   sync.Mutex
	n    int
	err  error
	seen int
}

func (l *flakyListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if l.n > 0 {
		l.n--
		l.seen++
		l.mu.Unlock()
		return nil, l.err
	}
	l.mu.Unlock()
	return l.Listener.Accept()
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestSurvivesDescriptorShortage: EMFILE from Accept (descriptors ran
// out) is retried with a back-off and logged once, not fatal: the next
// connection is served.
func TestSurvivesDescriptorShortage(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl := &flakyListener{Listener: ln, n: 5, err: &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}}
	var logs syncBuf
	got := make(chan net.Conn, 1)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		Run(fl, nil, slog.New(slog.NewTextHandler(&logs, nil)), func(c net.Conn) bool { got <- c; return true })
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case sc := <-got:
		sc.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("no connection served after the descriptor shortage")
	}
	if n := strings.Count(logs.String(), "accept failed"); n != 1 {
		t.Fatalf("%d log lines for 5 failures in under a second, want 1:\n%s", n, logs.String())
	}
	ln.Close()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the listener closed")
	}
}

// TestStops: Run returns when done is closed during a back-off, and when
// the handler says stop.
func TestStops(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fl := &flakyListener{Listener: ln, n: 1 << 30, err: errors.New("boom")}
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() { defer close(ended); Run(fl, done, nil, func(net.Conn) bool { return true }) }()
	close(done)
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after done closed")
	}

	ended = make(chan struct{})
	go func() {
		defer close(ended)
		Run(ln, nil, nil, func(c net.Conn) bool { c.Close(); return false })
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return when the handler said stop")
	}
}
