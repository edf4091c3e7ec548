package admin

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/httpapi"
)

// limitBroker is a broker with token authentication (superuser root) and
// short HTTP limits.
func limitBroker(t *testing.T, lim httpapi.Limits) (*testBroker, string) {
	t.Helper()
	k, _ := auth.NewSecretKey("HS256")
	sc := tokenSecurity(k)
	tb := startBroker(t, func(c *brokerconf.Config) { c.Security = sc; c.HTTPLimits = lim })
	tok, err := auth.CreateToken(k, auth.TokenSpec{Subject: "root"})
	if err != nil {
		t.Fatal(err)
	}
	return tb, tok
}

// serverClosed waits up to d for the server to close c and reports how
// long it took (ok false: still open).
func serverClosed(c net.Conn, r io.Reader, d time.Duration) (time.Duration, bool) {
	start := time.Now()
	c.SetReadDeadline(start.Add(d))
	_, err := io.Copy(io.Discard, r)
	return time.Since(start), !errors.Is(err, os.ErrDeadlineExceeded)
}

// TestHTTPUnauthenticatedHoldsNothing (issue 31 item 3): a keep-alive
// connection is closed after the idle timeout, and one whose request
// failed authentication at once; a body trickled a byte at a time is cut,
// unauthenticated at once and authenticated after the body timeout; one
// address cannot hold more unauthenticated connections than the cap.
func TestHTTPUnauthenticatedHoldsNothing(t *testing.T) {
	tb, root := limitBroker(t, httpapi.Limits{IdleTimeout: time.Second, BodyTimeout: time.Second, BodyMinRate: 100,
		MaxUnauthenticatedPerIP: 8, ReadHeaderTimeout: time.Minute})
	addr := tb.HTTPAddr()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	get := func(c net.Conn, br *bufio.Reader, token string) *http.Response {
		authz := ""
		if token != "" {
			authz = "Authorization: Bearer " + token + "\r\n"
		}
		fmt.Fprintf(c, "GET /admin/v2/brokers/ready HTTP/1.1\r\nHost: x\r\n%s\r\n", authz)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}

	// An idle keep-alive is closed after the idle timeout.
	c := dial()
	br := bufio.NewReader(c)
	if resp := get(c, br, root); resp.StatusCode != 200 {
		t.Fatalf("ready: %d", resp.StatusCode)
	}
	if took, closed := serverClosed(c, br, 10*time.Second); !closed || took > 5*time.Second {
		t.Fatalf("idle keep-alive: closed=%v after %v, want closed after ~1s", closed, took)
	}
	// After a 401 the connection closes at once.
	c = dial()
	br = bufio.NewReader(c)
	if resp := get(c, br, ""); resp.StatusCode != 401 {
		t.Fatalf("no credentials: %d", resp.StatusCode)
	}
	if took, closed := serverClosed(c, br, 10*time.Second); !closed || took > 500*time.Millisecond {
		t.Fatalf("after a 401: closed=%v after %v, want at once", closed, took)
	}

	// Trickled bodies.
	for _, token := range []string{"", root} {
		c := dial() // the writer below owns this connection; no shared variable
		authz := ""
		if token != "" {
			authz = "Authorization: Bearer " + token + "\r\n"
		}
		fmt.Fprintf(c, "PUT /admin/v2/namespaces/public/default/unload HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+
			"Content-Length: 100000\r\n%s\r\n", authz)
		stop, stopped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stopped)
			for {
				select {
				case <-stop:
					return
				case <-time.After(500 * time.Millisecond):
					if _, err := c.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}()
		took, closed := serverClosed(c, c, 15*time.Second)
		close(stop)
		<-stopped
		limit := 5 * time.Second
		if token == "" {
			limit = time.Second
		}
		if !closed || took > limit {
			t.Fatalf("trickled body (authenticated=%v): closed=%v after %v, want within %v", token != "", closed, took, limit)
		}
	}

	// At most 8 unauthenticated connections from one address.
	var open int
	var conns []net.Conn
	for range 40 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			continue // reset before the dial returned
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		if _, closed := serverClosed(c, c, 200*time.Millisecond); !closed {
			open++
		}
		c.Close()
	}
	if open > 8 || open == 0 {
		t.Fatalf("%d of %d unauthenticated connections stayed open, want at most 8", open, len(conns))
	}
}
