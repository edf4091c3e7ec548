package connlimit

import (
	"errors"
	"net"
	"testing"
	"time"
)

// accepting serves l's Accept into a channel until l closes.
func accepting(t *testing.T, l *Listener) <-chan *Conn {
	t.Helper()
	out := make(chan *Conn, 16)
	go func() {
		defer close(out)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			out <- c.(*Conn)
		}
	}()
	t.Cleanup(func() { l.Close() })
	return out
}

func listen(t *testing.T, max, perAddr int) (*Listener, <-chan *Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(ln, max, perAddr, nil)
	return l, accepting(t, l)
}

func dial(t *testing.T, l *Listener) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// refused dials l and reports whether the server closed the connection
// without a word (or reset it before the dial completed).
func refused(t *testing.T, l *Listener) bool {
	t.Helper()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		return true
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

func next(t *testing.T, acc <-chan *Conn) *Conn {
	t.Helper()
	select {
	case c := <-acc:
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("no connection accepted")
		return nil
	}
}

func none(t *testing.T, acc <-chan *Conn, d time.Duration) {
	t.Helper()
	select {
	case c := <-acc:
		t.Fatalf("accepted %v over the cap", c.RemoteAddr())
	case <-time.After(d):
	}
}

// TestPerAddressCap: an address holds at most perAddr untrusted
// connections; one more is reset and never handed out; trusting or
// closing one makes room for another.
func TestPerAddressCap(t *testing.T) {
	l, acc := listen(t, 0, 2)
	a, b := next2(t, l, acc)
	if n := l.Untrusted("127.0.0.1"); n != 2 {
		t.Fatalf("untrusted = %d, want 2", n)
	}
	if !refused(t, l) {
		t.Fatal("third untrusted connection kept")
	}
	none(t, acc, 100*time.Millisecond)
	a.Trust()
	a.Trust() // once only
	if n := l.Untrusted("127.0.0.1"); n != 1 {
		t.Fatalf("untrusted after Trust = %d, want 1", n)
	}
	c := next1(t, l, acc)
	if !refused(t, l) {
		t.Fatal("connection over the cap kept after a Trust")
	}
	b.Close()
	b.Close()
	next1(t, l, acc)
	c.Close()
	a.Close() // trusted: gives back only its slot
	if n := l.Untrusted("127.0.0.1"); n != 1 {
		t.Fatalf("untrusted at the end = %d, want 1", n)
	}
}

// TestConnectionCap: with max connections open, the next waits (in the
// backlog) until one closes.
func TestConnectionCap(t *testing.T) {
	l, acc := listen(t, 1, 0)
	first := next1(t, l, acc)
	dial(t, l)
	none(t, acc, 200*time.Millisecond)
	first.Close()
	next(t, acc)
}

func next1(t *testing.T, l *Listener, acc <-chan *Conn) *Conn {
	t.Helper()
	dial(t, l)
	return next(t, acc)
}

func next2(t *testing.T, l *Listener, acc <-chan *Conn) (*Conn, *Conn) {
	t.Helper()
	return next1(t, l, acc), next1(t, l, acc)
}
