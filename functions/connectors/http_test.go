package connectors

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

	"github.com/magnetar-mq/magnetar/httpapi"
)

// hook is a webhook served on 127.0.0.1 whose messages land in sent.
type hook struct {
	addr string
	sent chan string
	fail chan error // the next send returns this error, if one is queued
}

func startHook(t *testing.T, path string, lim httpapi.Limits) *hook {
	t.Helper()
	h := &hook{sent: make(chan string, 64), fail: make(chan error, 1)}
	srv, err := newWebhook(path, lim, nil, func(r *http.Request, body []byte) error {
		select {
		case err := <-h.fail:
			return err
		default:
		}
		h.sent <- r.URL.Path + " " + string(body)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln, nil) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; err != nil {
			t.Errorf("webhook serve: %v", err)
		}
	})
	h.addr = ln.Addr().String()
	return h
}

// nothingSent fails if a message was handed over.
func (h *hook) nothingSent(t *testing.T) {
	t.Helper()
	select {
	case m := <-h.sent:
		t.Fatalf("message %q sent", m)
	default:
	}
}

// post sends one request on c and reads its answer.
func post(t *testing.T, c net.Conn, br *bufio.Reader, method, path, headers, body string) (int, string) {
	t.Helper()
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n%s\r\n%s", method, path, len(body), headers, body)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

func dialHook(t *testing.T, h *hook) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// closedWithin reports whether the server closes c within d, and after
// how long.
func closedWithin(c net.Conn, d time.Duration) (bool, time.Duration) {
	start := time.Now()
	c.SetReadDeadline(start.Add(d))
	_, err := io.Copy(io.Discard, c)
	return !errors.Is(err, os.ErrDeadlineExceeded), time.Since(start)
}

// TestWebhookServesLikeTheHTTPServers: the webhook source's server keeps
// every Magnetar HTTP server's timeouts (its limits differ only in the
// caps), and serves POST and PUT bodies of any media type at its path;
// other methods get 405, other paths 404, a browser's cross-site POST
// 403, and a failed send a 503 whose body holds none of the error's text.
func TestWebhookServesLikeTheHTTPServers(t *testing.T) {
	got, want := webhookLimits, httpapi.Limits{}
	got.EnsureDefaults()
	want.EnsureDefaults()
	if got.ReadHeaderTimeout != want.ReadHeaderTimeout || got.IdleTimeout != want.IdleTimeout || got.WriteTimeout != want.WriteTimeout ||
		got.BodyTimeout != want.BodyTimeout || got.BodyMinRate != want.BodyMinRate || got.MaxRequestHeaderSize != want.MaxRequestHeaderSize {
		t.Fatalf("webhook limits %+v: timeouts differ from the HTTP servers' %+v", got, want)
	}
	if got.MaxUnauthenticatedPerIP <= 0 || got.MaxConnections <= 0 || got.MaxRequestSize != maxBody {
		t.Fatalf("webhook limits %+v: a cap is off", got)
	}

	h := startHook(t, "/events", httpapi.Limits{})
	c, br := dialHook(t, h)
	for _, r := range []struct{ method, headers, body string }{
		{"POST", "", "no media type"},
		{"PUT", "Content-Type: text/plain\r\n", "text"},
		{"POST", "Content-Type: application/x-www-form-urlencoded\r\n", "a=b"},
		{"POST", "Sec-Fetch-Site: same-origin\r\n", "same origin"},
	} {
		if code, b := post(t, c, br, r.method, "/events", r.headers, r.body); code != http.StatusOK {
			t.Fatalf("%s %q: %d %s", r.method, r.body, code, b)
		}
		if m := <-h.sent; m != "/events "+r.body {
			t.Fatalf("sent %q, want %q", m, r.body)
		}
	}
	for _, r := range []struct {
		method, path, headers string
		want                  int
	}{
		{"GET", "/events", "", http.StatusMethodNotAllowed},
		{"DELETE", "/events", "", http.StatusMethodNotAllowed},
		{"POST", "/other", "", http.StatusNotFound},
		{"POST", "/events/more", "", http.StatusNotFound},
		{"POST", "/events", "Sec-Fetch-Site: cross-site\r\nOrigin: https://evil.example\r\n", http.StatusForbidden},
	} {
		c, br := dialHook(t, h)
		if code, b := post(t, c, br, r.method, r.path, r.headers, "x"); code != r.want {
			t.Fatalf("%s %s %q: %d %s, want %d", r.method, r.path, r.headers, code, b, r.want)
		}
	}
	h.nothingSent(t)

	h.fail <- errors.New("dial tcp 10.1.2.3:6650: connection refused")
	code, b := post(t, c, br, "POST", "/events", "", "lost")
	if code != http.StatusServiceUnavailable || strings.Contains(b, "10.1.2.3") || strings.Contains(b, "refused") {
		t.Fatalf("failed send: %d %s, want 503 without the error's text", code, b)
	}
}

// TestWebhookSubtree: a path ending in "/" takes its subtree, as
// net/http's patterns (the webhook's before httpapi) did.
func TestWebhookSubtree(t *testing.T) {
	for _, c := range []struct {
		path     string
		ok, gone []string
	}{
		{"/", []string{"/", "/a", "/a/b/c"}, nil},
		{"/hooks/", []string{"/hooks", "/hooks/", "/hooks/a", "/hooks/a/b"}, []string{"/", "/other", "/hooksx"}},
	} {
		h := startHook(t, c.path, httpapi.Limits{})
		for _, p := range c.ok {
			conn, br := dialHook(t, h)
			if code, b := post(t, conn, br, "POST", p, "", "m"); code != http.StatusOK {
				t.Fatalf("path %s: POST %s: %d %s", c.path, p, code, b)
			}
			<-h.sent
		}
		for _, p := range c.gone {
			conn, br := dialHook(t, h)
			if code, b := post(t, conn, br, "POST", p, "", "m"); code != http.StatusNotFound {
				t.Fatalf("path %s: POST %s: %d %s, want 404", c.path, p, code, b)
			}
		}
		h.nothingSent(t)
	}
	if _, err := newWebhook("/a/{b}", httpapi.Limits{}, nil, nil); err == nil {
		t.Fatal("a path with braces accepted")
	}
	if _, err := newWebhook("events", httpapi.Limits{}, nil, nil); err == nil {
		t.Fatal("a relative path accepted")
	}
}

// TestWebhookLimitsHold: the limits of the webhook's server hold on its
// connections: an idle keep-alive connection is closed after the idle
// timeout; a body trickled a byte at a time is cut after the body
// timeout and nothing is sent; and since the webhook takes no
// credentials, the per-address cap counts every connection of an
// address, even those that have been served.
func TestWebhookLimitsHold(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		h := startHook(t, "/", httpapi.Limits{IdleTimeout: 300 * time.Millisecond})
		c, br := dialHook(t, h)
		if code, b := post(t, c, br, "POST", "/", "", "m"); code != http.StatusOK {
			t.Fatalf("POST: %d %s", code, b)
		}
		<-h.sent
		if closed, took := closedWithin(c, 5*time.Second); !closed || took > 3*time.Second {
			t.Fatalf("idle keep-alive: closed=%v after %v, want closed after ~300ms", closed, took)
		}
	})
	t.Run("trickle", func(t *testing.T) {
		h := startHook(t, "/", httpapi.Limits{BodyTimeout: 500 * time.Millisecond, BodyMinRate: 100})
		for _, framing := range []string{"Content-Length: 100000\r\n", "Transfer-Encoding: chunked\r\n"} {
			c, _ := dialHook(t, h)
			fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\n%s\r\n", framing)
			stop, stopped := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(stopped)
				piece := "x"
				if strings.HasPrefix(framing, "Transfer") {
					piece = "1\r\nx\r\n"
				}
				tick := time.NewTicker(200 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
						if _, err := io.WriteString(c, piece); err != nil {
							return
						}
					}
				}
			}()
			closed, took := closedWithin(c, 10*time.Second)
			close(stop)
			<-stopped
			if !closed || took > 5*time.Second {
				t.Fatalf("%s trickled body: closed=%v after %v, want cut after ~500ms", framing, closed, took)
			}
		}
		h.nothingSent(t)
	})
	t.Run("per-address cap", func(t *testing.T) {
		const limit = 3
		h := startHook(t, "/", httpapi.Limits{MaxUnauthenticatedPerIP: limit})
		for range limit {
			c, br := dialHook(t, h)
			if code, b := post(t, c, br, "POST", "/", "", "m"); code != http.StatusOK {
				t.Fatalf("POST under the cap: %d %s", code, b)
			}
			<-h.sent
		}
		// Served and kept alive, the three still count: a fourth is
		// reset without being served.
		for range 5 {
			c, err := net.Dial("tcp", h.addr)
			if err != nil {
				continue // reset before the dial returned
			}
			fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nm")
			closed, _ := closedWithin(c, 2*time.Second)
			c.Close()
			if !closed {
				t.Fatal("a connection over the per-address cap was kept")
			}
		}
		h.nothingSent(t)
	})
}
