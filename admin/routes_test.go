package admin

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/console"
	"github.com/magnetar-mq/magnetar/functions"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
	"github.com/magnetar-mq/magnetar/topichistory"
)

// fullSurface is a secure broker serving every route the standalone
// declares on its HTTP port: the broker's own (lookup, metrics, cluster
// and bundles), the admin API, the console and the function worker's.
type fullSurface struct {
	*secAdmin
	meta metadata.Store
}

func startFullSurface(t *testing.T, mut func(*auth.Config)) *fullSurface {
	t.Helper()
	k, _ := auth.NewSecretKey("HS256")
	sc := tokenSecurity(k)
	if mut != nil {
		mut(sc)
	}
	var meta metadata.Store
	tb := startBrokerOpts(t, brokerOpts{
		cfg: func(c *brokerconf.Config) { c.Security = sc },
		register: func(b *broker.Broker, m *embedded.Store) {
			meta = m
			h, err := topichistory.Enable(b)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := console.Register(b.Router(), console.BrokerSource(b, h, nil), nil); err != nil {
				t.Fatal(err)
			}
			w, err := functions.NewWorker(functions.Options{Metadata: m, ID: "w1", DataDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			w.Register(b.Router())
		},
	})
	s := &fullSurface{secAdmin: &secAdmin{testBroker: tb, key: k}, meta: meta}
	s.call(t, "root", "PUT", "/admin/v2/tenants/acme", `{"adminRoles":["acme-admin"],"allowedClusters":["standalone"]}`, 204)
	s.call(t, "acme-admin", "PUT", "/admin/v2/namespaces/acme/ns", "", 204)
	s.call(t, "acme-admin", "PUT", "/admin/v2/persistent/acme/ns/x", "", 204)
	s.call(t, "acme-admin", "PUT", "/admin/v2/persistent/acme/ns/x/subscription/s", "", 204)
	for role, acts := range map[string]string{"bob": `["produce","consume"]`, "prod": `["produce"]`} {
		s.call(t, "acme-admin", "POST", "/admin/v2/namespaces/acme/ns/permissions/"+role, acts, 204)
	}
	return s
}

// snapshot reads every node of the metadata store.
func snapshot(t *testing.T, m metadata.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(p string)
	walk = func(p string) {
		v, _, err := m.Get(context.Background(), p)
		if err == nil {
			out[p] = string(v)
		}
		kids, _ := m.Children(context.Background(), p)
		for _, k := range kids {
			walk(path.Join(p, k))
		}
	}
	walk("/")
	return out
}

// deniedRoles are roles each access refuses: bob has produce and consume
// on acme/ns, prod produce only, stranger nothing; acme-admin
// administers acme.
var deniedRoles = map[auth.Access][]string{
	auth.AccessSuperUser:        {"acme-admin", "bob", "stranger"},
	auth.AccessTenantAdmin:      {"bob", "stranger"},
	auth.AccessNamespaceConsume: {"prod", "stranger"},
	auth.AccessTopicLookup:      {"stranger"},
	auth.AccessTopicConsume:     {"prod", "stranger"},
	auth.AccessFunctions:        {"bob", "stranger"},
	auth.AccessSources:          {"bob", "stranger"},
	auth.AccessSinks:            {"bob", "stranger"},
	auth.AccessPackages:         {"bob", "stranger"},
}

// fillPath puts test values into a route's pattern.
func fillPath(pattern string) string {
	return fillPattern(pattern, map[string]string{"tenant": "acme", "ns": "ns", "namespace": "ns", "domain": "persistent", "topic": "x",
		"cluster": "standalone", "sub": "s", "name": "f", "bundle": "0x00000000_0xffffffff"}, "1")
}

func (s *fullSurface) status(t *testing.T, role, method, p string) (int, string) {
	t.Helper()
	return s.do(t, role, method, p, "")
}

// TestRouteRules walks every route of the HTTP surface (broker, admin,
// cluster, console, function worker): each declares a valid access rule;
// without credentials each but the open ones answers 401; for each access
// level a role that lacks it gets 403; and after all those refused
// requests (every method, every route) the metadata store is unchanged.
// The allowed roles get past the guard on every GET route, and with
// authorization on no route answers 501.
func TestRouteRules(t *testing.T) {
	s := startFullSurface(t, nil)
	routes := s.Router().Routes()
	if len(routes) < 250 {
		t.Fatalf("only %d routes", len(routes))
	}
	kinds := map[string]bool{}
	before := snapshot(t, s.meta)
	for _, rt := range routes {
		if !rt.Access.Valid() {
			t.Errorf("%s has no access rule", rt.ID())
		}
		kinds[strings.Split(strings.TrimPrefix(rt.Pattern, "/"), "/")[0]] = true
		p := fillPath(rt.Pattern)
		if rt.Access.Authenticated(&auth.Config{}) {
			if code, body := s.status(t, "", rt.Method, p); code != 401 {
				t.Errorf("%s as nobody: %d %.100s, want 401", rt.ID(), code, body)
			}
		}
		for _, role := range deniedRoles[rt.Access] {
			if code, body := s.status(t, role, rt.Method, p); code != 403 {
				t.Errorf("%s (%s) as %s: %d %.100s, want 403", rt.ID(), rt.Access, role, code, body)
			}
		}
	}
	after := snapshot(t, s.meta)
	if !maps.Equal(before, after) {
		for k := range after {
			if before[k] != after[k] {
				t.Errorf("refused requests changed %s: %q -> %q", k, before[k], after[k])
			}
		}
		for k := range before {
			if _, ok := after[k]; !ok {
				t.Errorf("refused requests deleted %s", k)
			}
		}
	}
	// Decisions worth pinning: the anti-affinity listing is a superuser's
	// whatever namespace its path looks like, transaction reads are
	// anyone's (as in Pulsar), functions take the functions permission.
	for name, want := range map[string]auth.Access{
		"namespaces.antiAffinity.group.get":       auth.AccessSuperUser,
		"namespaces.topics.get":                   auth.AccessNamespaceConsume,
		"tenants.tenant.put":                      auth.AccessSuperUser,
		"namespaces.permissions.grant":            auth.AccessTenantAdmin,
		"transactions.coordinators.get":           auth.AccessAny,
		"lookup.topic.domain.tenant.ns.topic.get": auth.AccessTopicLookup,
		"functions.create":                        auth.AccessFunctions,
		"sinks.create":                            auth.AccessSinks,
		"metrics.get":                             auth.AccessMetrics,
	} {
		if r := s.Router().Route(name); r == nil || r.Access != want {
			t.Errorf("route %s: %v, want access %s", name, r, want)
		}
	}
	for _, k := range []string{"admin", "lookup", "metrics", "console"} {
		if !kinds[k] {
			t.Errorf("no %s route walked", k)
		}
	}
	// The allowed roles pass the guard (GET routes change nothing).
	allowed := map[auth.Access]string{auth.AccessSuperUser: "root", auth.AccessTenantAdmin: "acme-admin",
		auth.AccessNamespaceConsume: "bob", auth.AccessTopicLookup: "prod", auth.AccessTopicConsume: "bob",
		auth.AccessFunctions: "acme-admin", auth.AccessSources: "acme-admin", auth.AccessSinks: "acme-admin",
		auth.AccessPackages: "acme-admin", auth.AccessAny: "stranger", auth.AccessMetrics: "", auth.AccessPublic: ""}
	for _, rt := range routes {
		if rt.Method != "GET" {
			continue
		}
		role, ok := allowed[rt.Access]
		if !ok {
			t.Fatalf("%s: no allowed role for %s", rt.ID(), rt.Access)
		}
		code, body := s.status(t, role, "GET", fillPath(rt.Pattern))
		if code == 401 || code == 403 || code == 501 {
			t.Errorf("%s as %q: %d %.100s", rt.ID(), role, code, body)
		}
	}
	for _, rt := range routes {
		if permissionRoute(rt) {
			if code, body := s.status(t, "root", rt.Method, fillPath(rt.Pattern)); code == 501 {
				t.Errorf("%s with authorization on: 501 %s", rt.ID(), body)
			}
		}
	}
}

// TestAntiAffinityPathAuthorizedByItsRoute: GET
// /admin/v2/namespaces/{cluster}/antiAffinity/{group} lists the
// namespaces of an anti-affinity group across tenants (superusers only).
// The same path also reads as the topics of a namespace named
// "antiAffinity": a consume grant on such a namespace must not open the
// listing (issue 31 item 5).
func TestAntiAffinityPathAuthorizedByItsRoute(t *testing.T) {
	s := startFullSurface(t, nil)
	s.call(t, "root", "PUT", "/admin/v2/tenants/standalone", `{"adminRoles":["sa-admin"],"allowedClusters":["standalone"]}`, 204)
	s.call(t, "root", "PUT", "/admin/v2/namespaces/standalone/antiAffinity", "", 204)
	s.call(t, "root", "POST", "/admin/v2/namespaces/standalone/antiAffinity/permissions/bob", `["consume"]`, 204)
	s.call(t, "acme-admin", "POST", "/admin/v2/namespaces/acme/ns/antiAffinity", `"topics"`, 204)
	if code, body := s.status(t, "bob", "GET", "/admin/v2/namespaces/standalone/antiAffinity/topics"); code != 403 {
		t.Fatalf("consume grant on standalone/antiAffinity: %d %s, want 403", code, body)
	}
	code, body := s.status(t, "root", "GET", "/admin/v2/namespaces/standalone/antiAffinity/topics")
	if code != 200 || !strings.Contains(body, "acme/ns") {
		t.Fatalf("superuser: %d %s, want the group's namespaces", code, body)
	}
}

// TestCrossSiteWritesChangeNothing: state-changing requests a cross-site
// page can make a browser send (text/plain or form bodies, any body with
// a foreign Origin) are refused and change nothing, though the browser
// sends valid credentials; pulsar-admin-style JSON requests work (issue
// 31 item 4).
func TestCrossSiteWritesChangeNothing(t *testing.T) {
	s := startFullSurface(t, nil)
	send := func(method, p, ctype, origin, body string) int {
		req, _ := http.NewRequest(method, "http://"+s.HTTPAddr()+p, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.token(t, "root"))
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	before := snapshot(t, s.meta)
	grant := "/admin/v2/namespaces/acme/ns/permissions/mallory"
	tenant := "/admin/v2/tenants/evil"
	for _, c := range []struct{ method, p, ctype, origin, body string }{
		{"POST", grant, "text/plain", "https://evil.example", `["produce","consume"]`},
		{"POST", grant, "text/plain", "", `["produce","consume"]`},
		{"POST", grant, "application/x-www-form-urlencoded", "https://evil.example", `a=b`},
		{"POST", grant, "application/json", "https://evil.example", `["produce","consume"]`},
		{"PUT", tenant, "text/plain", "https://evil.example", `{"allowedClusters":["standalone"]}`},
		{"PUT", tenant, "multipart/form-data; boundary=x", "", "--x--\r\n"},
		{"PUT", tenant, "application/json", "https://evil.example", `{"allowedClusters":["standalone"]}`},
		{"DELETE", "/admin/v2/namespaces/acme/ns/permissions/bob", "", "https://evil.example", ""},
	} {
		if code := send(c.method, c.p, c.ctype, c.origin, c.body); code != 403 && code != 415 {
			t.Errorf("%s %s %s from %q: %d, want 403 or 415", c.method, c.p, c.ctype, c.origin, code)
		}
	}
	if after := snapshot(t, s.meta); !maps.Equal(before, after) {
		t.Fatalf("cross-site requests changed the metadata store: %v", slices.Sorted(maps.Keys(after)))
	}
	// The same writes as JSON from a non-browser client, or the
	// server's own origin, succeed.
	if code := send("POST", grant, "application/json", "", `["consume"]`); code != 204 {
		t.Fatalf("JSON grant: %d", code)
	}
	if code := send("PUT", tenant, "application/json", "http://"+s.HTTPAddr(), `{"allowedClusters":["standalone"]}`); code != 204 {
		t.Fatalf("same-origin tenant create: %d", code)
	}
}

// TestDuplicateRouteFailsStart: a broker whose route table declares one
// route twice (the whole admin API registered again, or one route under
// other wildcard names, which the router could not tell apart) refuses
// to start, naming the route, and serves nothing.
func TestDuplicateRouteFailsStart(t *testing.T) {
	for name, again := range map[string]func(*broker.Broker){
		"the admin API twice": func(b *broker.Broker) { Register(b.Router(), BrokerDeps(b)) },
		"one route, other wildcard names": func(b *broker.Broker) {
			b.Router().Handle("GET", "/admin/v2/tenants/{name}", auth.AccessAny, func(http.ResponseWriter, *http.Request, httpapi.Params) {})
		},
	} {
		t.Run(name, func(t *testing.T) {
			tb := newTestBroker(t, brokerOpts{})
			again(tb.Broker)
			err := tb.Start(context.Background())
			if !errors.Is(err, broker.ErrBadConfig) || !strings.Contains(err.Error(), "registered twice") {
				t.Fatalf("start with a duplicate route: %v", err)
			}
			if tb.HTTPAddr() != "" {
				t.Fatalf("HTTP listener bound at %s", tb.HTTPAddr())
			}
		})
	}
}
