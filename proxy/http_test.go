package proxy

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/auth"
)

// TestProxyRouteRules (issue 31 item 5, the proxy's surface): every
// route of the proxy's table declares a valid access rule and is
// authorized by it. Without credentials every route but the open ones
// (/metrics, /status.html) answers 401 and nothing reaches a broker; a
// role that is not a superuser gets 403 on /proxy-stats and nothing
// else of the proxy's own; the forwarded /admin and /lookup routes reach
// the broker, for every method, with the caller's role as the original
// principal and never the caller's credentials.
func TestProxyRouteRules(t *testing.T) {
	type seen struct{ method, uri, authz, orig string }
	got := make(chan seen, 64)
	broker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"), r.Header.Get(auth.HeaderOriginalPrincipal)}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer broker.Close()
	key, err := auth.NewSecretKey("HS256")
	if err != nil {
		t.Fatal(err)
	}
	cfg := auth.DefaultConfig()
	cfg.AuthenticationEnabled = true
	cfg.AuthenticationProviders = []string{"token"}
	cfg.TokenSecretKey = "data:;base64," + base64.StdEncoding.EncodeToString(key)
	sec, err := auth.New(cfg, nil, "c", nil)
	if err != nil {
		t.Fatal(err)
	}
	proxyCreds, err := auth.ParseClientAuth("token", "token:proxy-secret")
	if err != nil {
		t.Fatal(err)
	}
	fb := startFakeBroker(t)
	p, err := Start(context.Background(), Config{ServiceAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		BrokerServiceURL: fb.url(), BrokerWebServiceURL: broker.URL, Security: sec, SuperUserRoles: []string{"root"},
		BrokerClientAuth: proxyCreds})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	token := func(role string) string {
		tok, err := auth.CreateToken(key, auth.TokenSpec{Subject: role})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	call := func(method, path, role string) int {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+p.HTTPAddr()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if role != "" {
			req.Header.Set("Authorization", "Bearer "+token(role))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	forwarded := func() *seen {
		select {
		case s := <-got:
			return &s
		default:
			return nil
		}
	}

	routes := p.routes().Routes()
	if len(routes) < 10 {
		t.Fatalf("only %d proxy routes", len(routes))
	}
	for _, rt := range routes {
		if !rt.Access.Valid() {
			t.Errorf("%s declares no access rule", rt.ID())
			continue
		}
		// The proxy's own statistics are the superusers'; what it
		// forwards the brokers authorize.
		if strings.HasPrefix(rt.Pattern, "/proxy-stats") && rt.Access != auth.AccessSuperUser ||
			strings.HasSuffix(rt.Pattern, "{path...}") && rt.Access != auth.AccessAny {
			t.Errorf("%s declares %s", rt.ID(), rt.Access)
		}
		path := strings.Replace(rt.Pattern, "{path...}", "v2/tenants/acme", 1)
		open := !rt.Access.Authenticated(&sec.Config)
		// Without credentials: 401 and nothing forwarded, unless open.
		code := call(rt.Method, path, "")
		switch {
		case open && code != http.StatusOK:
			t.Errorf("%s %s without credentials: %d, want 200 (open route)", rt.Method, path, code)
		case !open && code != http.StatusUnauthorized:
			t.Errorf("%s %s without credentials: %d, want 401", rt.Method, path, code)
		}
		if s := forwarded(); s != nil {
			t.Errorf("%s %s without credentials reached the broker: %+v", rt.Method, path, *s)
		}
		for _, role := range []string{"alice", "root"} {
			code := call(rt.Method, path, role)
			s := forwarded()
			switch rt.Access {
			case auth.AccessSuperUser:
				want := map[string]int{"alice": http.StatusForbidden, "root": http.StatusOK}[role]
				if code != want || s != nil {
					t.Errorf("%s %s as %s: %d (forwarded %v), want %d, not forwarded", rt.Method, path, role, code, s, want)
				}
			case auth.AccessAny:
				want := seen{rt.Method, path, "Bearer proxy-secret", role}
				if code != http.StatusNoContent || s == nil || *s != want {
					t.Errorf("%s %s as %s: %d, broker saw %+v, want 204 and %+v", rt.Method, path, role, code, s, want)
				}
			default:
				if code != http.StatusOK || s != nil {
					t.Errorf("%s %s as %s: %d (forwarded %v), want 200 served by the proxy", rt.Method, path, role, code, s)
				}
			}
		}
	}
}
