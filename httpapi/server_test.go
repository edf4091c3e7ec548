package httpapi

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// serve runs the fixture's table on a Server with lim on 127.0.0.1.
func serveWith(t *testing.T, lim Limits) (*fixture, string) {
	t.Helper()
	f := newFixture(t, "", lim)
	h := f.srv.Config.Handler
	f.srv.Close()
	srv := NewServer(h, lim, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln, nil)
	t.Cleanup(func() { srv.Close() })
	return f, ln.Addr().String()
}

// closedWithin reports whether the server closes c within d (reading
// nothing more).
func closedWithin(t *testing.T, c net.Conn, d time.Duration) (bool, time.Duration) {
	t.Helper()
	start := time.Now()
	c.SetReadDeadline(start.Add(d))
	_, err := io.Copy(io.Discard, c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return false, time.Since(start)
	}
	return true, time.Since(start)
}

// TestServerClosesIdleKeepAlive: a keep-alive connection left idle after
// an answer is closed after the idle timeout, and one left after a 401
// is closed at once.
func TestServerClosesIdleKeepAlive(t *testing.T) {
	f, addr := serveWith(t, Limits{IdleTimeout: 300 * time.Millisecond})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /admin/v2/clusters HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", f.token(t, "root"))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 418 {
		t.Fatalf("request: %v %v", resp, err)
	}
	<-f.calls
	if closed, took := closedWithin(t, c, 3*time.Second); !closed || took > 2*time.Second {
		t.Fatalf("idle keep-alive: closed=%v after %v, want closed after ~300ms", closed, took)
	}

	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	fmt.Fprintf(c2, "GET /admin/v2/clusters HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c2)
	resp, err = http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 401 || !resp.Close {
		t.Fatalf("unauthenticated: %v %v, want 401 with Connection: close", resp, err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	c2.SetReadDeadline(time.Now().Add(time.Second))
	if b, err := br.ReadByte(); err != io.EOF {
		rest, _ := io.ReadAll(br)
		t.Fatalf("connection after a 401: %v, want EOF (read %q%s)", err, b, rest)
	}
}

// TestServerCutsTrickledBody: a body trickled a byte at a time is cut
// after the body timeout, authenticated or not; an unauthenticated one is
// answered 401 and closed without its body being read.
func TestServerCutsTrickledBody(t *testing.T) {
	f, addr := serveWith(t, Limits{BodyTimeout: 500 * time.Millisecond, BodyMinRate: 100})
	grant := "/admin/v2/namespaces/acme/ns/permissions/bob"
	trickle := func(c net.Conn, stop <-chan struct{}) {
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
				if _, err := c.Write([]byte("x")); err != nil {
					return
				}
			}
		}
	}
	for _, role := range []string{"root", ""} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		authz := ""
		if role != "" {
			authz = "Authorization: Bearer " + f.token(t, role) + "\r\n"
		}
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n%s\r\n", grant, authz)
		stop := make(chan struct{})
		go trickle(c, stop)
		start := time.Now()
		c.SetReadDeadline(start.Add(10 * time.Second))
		b, _ := io.ReadAll(c)
		took := time.Since(start)
		close(stop)
		c.Close()
		if took > 5*time.Second {
			t.Fatalf("role %q: trickled body held the connection %v", role, took)
		}
		if role == "" && !strings.Contains(string(b), " 401 ") {
			t.Fatalf("unauthenticated trickle answered %q", b)
		}
	}
	select {
	case r := <-f.calls:
		t.Fatalf("a handler ran for %q on a cut body", r)
	default:
	}
}

// TestServerCapsUnauthenticatedConnections: one address holds at most
// the cap of connections that have not authenticated; connections that
// authenticated do not count, and closed ones free their place.
func TestServerCapsUnauthenticatedConnections(t *testing.T) {
	const limit = 4
	f, addr := serveWith(t, Limits{MaxUnauthenticatedPerIP: limit, ReadHeaderTimeout: time.Minute})
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// dial returns nil when the server reset the connection before the
	// dial returned.
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return nil
		}
		conns = append(conns, c)
		return c
	}
	alive := func(c net.Conn) bool {
		if c == nil {
			return false
		}
		closed, _ := closedWithin(t, c, 300*time.Millisecond)
		return !closed
	}
	// One connection authenticates and stays open.
	authed := dial()
	if authed == nil {
		t.Fatal("first connection refused")
	}
	fmt.Fprintf(authed, "GET /admin/v2/clusters HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", f.token(t, "root"))
	br := bufio.NewReader(authed)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 418 {
		t.Fatalf("authenticated request: %v %v", resp, err)
	}
	<-f.calls
	var open []net.Conn
	for range limit {
		c := dial()
		if c == nil {
			t.Fatal("a connection under the cap was refused")
		}
		open = append(open, c)
	}
	refused := 0
	for range 20 {
		if !alive(dial()) {
			refused++
		}
	}
	if refused != 20 {
		t.Fatalf("%d of 20 connections over the cap refused", refused)
	}
	for _, c := range open {
		if !alive(c) {
			t.Fatal("a connection under the cap was closed")
		}
	}
	// The authenticated one still serves.
	fmt.Fprintf(authed, "GET /admin/v2/clusters HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", f.token(t, "root"))
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 418 {
		t.Fatalf("authenticated connection: %v %v", resp, err)
	}
	<-f.calls
	// Closing one frees a place.
	open[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for !alive(dial()) {
		if time.Now().After(deadline) {
			t.Fatal("a closed connection did not free its place")
		}
	}
}
