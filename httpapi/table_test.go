package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/auth"
)

func hit(name string, got *string) HandlerFunc {
	return func(_ http.ResponseWriter, _ *http.Request, p Params) {
		*got = name
		for _, k := range []string{"y", "rest", "group"} {
			if v, ok := p[k]; ok {
				*got += ":" + v
			}
		}
	}
}

// TestLookupPrecedence: the most literal segments win; at equal counts
// the first position where the kinds differ decides; a rest wildcard
// matches one or more segments; HEAD is served by GET routes; other
// methods of a known path are reported for a 405.
func TestLookupPrecedence(t *testing.T) {
	var got string
	tb := NewTable()
	for _, r := range []struct{ m, p, name string }{
		{"GET", "/a/{x}/{y}", "wild"},
		{"GET", "/a/lit/{y}", "lit"},
		{"GET", "/r/{rest...}", "rest"},
		{"GET", "/r/x/{y}", "rx"},
		{"GET", "/ns/{tenant}/{ns}/retention", "retention"},
		{"GET", "/ns/{cluster}/antiAffinity/{group}", "anti"},
		{"GET", "/ns/{tenant}/{ns}/topics", "topics"},
		{"PUT", "/a/lit/{y}", "put"},
	} {
		tb.Add(Route{Name: r.name, Method: r.m, Pattern: r.p, Access: auth.AccessAny, Handler: hit(r.name, &got)})
	}
	if err := tb.Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, want string }{
		{"GET", "/a/lit/q", "lit:q"},
		{"HEAD", "/a/lit/q", "lit:q"},
		{"GET", "/a/b/c", "wild:c"},
		{"GET", "/r/x/y%2Fz", "rx:y/z"},
		{"GET", "/r/a/b%2Fc/d", "rest:a/b/c/d"},
		{"GET", "/r/x/y/z", "rest:x/y/z"},
		{"GET", "/ns/t/n/retention", "retention"},
		{"GET", "/ns/c/antiAffinity/retention", "anti:retention"},
		{"GET", "/ns/c/antiAffinity/topics", "anti:topics"},
		{"GET", "/ns/t/n/topics/", "topics"},
		{"PUT", "/a/lit/q", "put:q"},
	} {
		path, ok := SplitPath(strings.SplitN(c.path, "?", 2)[0])
		if !ok {
			t.Fatalf("SplitPath(%q) failed", c.path)
		}
		r, p, _ := tb.Lookup(c.method, path)
		if r == nil {
			t.Errorf("%s %s: no route, want %s", c.method, c.path, c.want)
			continue
		}
		got = ""
		r.Handler(nil, nil, p)
		if got != c.want {
			t.Errorf("%s %s -> %q, want %q", c.method, c.path, got, c.want)
		}
	}
	if r, _, allowed := tb.Lookup("DELETE", []string{"a", "lit", "q"}); r != nil || strings.Join(allowed, ",") != "GET,PUT" {
		t.Errorf("DELETE /a/lit/q: route %v, allowed %v; want none and GET,PUT", r, allowed)
	}
	if r, _, allowed := tb.Lookup("GET", []string{"r"}); r != nil || allowed != nil {
		t.Errorf("GET /r: %v %v, want nothing (a rest wildcard needs a segment)", r, allowed)
	}
}

// TestDuplicateRoutesRefused: a second declaration of a method and
// pattern (up to wildcard names), a taken name, a route without an
// access rule or handler, and a malformed pattern are errors, and a
// table with errors cannot be served.
func TestDuplicateRoutesRefused(t *testing.T) {
	h := func(http.ResponseWriter, *http.Request, Params) {}
	for name, second := range map[string]Route{
		"same pattern":         {Method: "GET", Pattern: "/admin/v2/brokers/{cluster}", Access: auth.AccessAny, Handler: h},
		"other wildcard names": {Method: "GET", Pattern: "/admin/v2/brokers/{c}", Access: auth.AccessAny, Handler: h},
		"trailing slash":       {Method: "GET", Pattern: "/admin/v2/brokers/{cluster}/", Access: auth.AccessAny, Handler: h},
		"taken name":           {Name: "brokers.cluster.get", Method: "GET", Pattern: "/admin/v2/other/{x}", Access: auth.AccessAny, Handler: h},
		"no access":            {Method: "GET", Pattern: "/admin/v2/x", Handler: h},
		"bad access":           {Method: "GET", Pattern: "/admin/v2/x", Access: auth.Access(1000), Handler: h},
		"no handler":           {Method: "GET", Pattern: "/admin/v2/x", Access: auth.AccessAny},
		"rest not last":        {Method: "GET", Pattern: "/a/{r...}/b", Access: auth.AccessAny, Handler: h},
		"repeated wildcard":    {Method: "GET", Pattern: "/a/{x}/{x}", Access: auth.AccessAny, Handler: h},
		"lower-case method":    {Method: "get", Pattern: "/a/b", Access: auth.AccessAny, Handler: h},
		"no leading slash":     {Method: "GET", Pattern: "a/b", Access: auth.AccessAny, Handler: h},
	} {
		tb := NewTable()
		tb.Add(Route{Method: "GET", Pattern: "/admin/v2/brokers/{cluster}", Access: auth.AccessSuperUser, Handler: h})
		tb.Add(second)
		if tb.Err() == nil || len(tb.Routes()) != 1 {
			t.Errorf("%s: accepted (%d routes)", name, len(tb.Routes()))
			continue
		}
		if _, err := tb.Handler(Guard{}); err == nil {
			t.Errorf("%s: a table with errors was served", name)
		}
	}
	// Another method of the same pattern is not a duplicate.
	tb := NewTable()
	tb.Handle("GET", "/a/{x}", auth.AccessAny, h)
	tb.Handle("PUT", "/a/{x}", auth.AccessAny, h)
	if err := tb.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestDeriveName(t *testing.T) {
	for pattern, want := range map[string]string{
		"GET /admin/v2/namespaces/{tenant}/{ns}/retention":     "namespaces.retention.get",
		"GET /lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}":  "lookup.topic.domain.tenant.ns.topic.get",
		"GET /admin/v2/tenants/{tenant}":                       "tenants.tenant.get",
		"GET /admin/v2/tenants":                                "tenants.get",
		"GET /console/{rest...}":                               "console.rest.get",
		"POST /admin/v3/functions/{tenant}/{namespace}/{name}": "functions.tenant.namespace.name.post",
		"GET /metrics": "metrics.get",
		"GET /console/topics/{domain}/{tenant}/{ns}/{topic}/hst": "console.topics.hst.get",
	} {
		m, p, _ := strings.Cut(pattern, " ")
		if got := DeriveName(m, p); got != want {
			t.Errorf("DeriveName(%s) = %q, want %q", pattern, got, want)
		}
	}
}

// FuzzLookup: any method and path finds at most one route without
// panicking, and a found route's pattern matches the path.
func FuzzLookup(f *testing.F) {
	tb := NewTable()
	h := func(http.ResponseWriter, *http.Request, Params) {}
	for _, p := range []string{"/admin/v2/{domain}/{tenant}/{ns}/{topic}", "/admin/v2/namespaces/{tenant}/{ns}/topics",
		"/admin/v2/namespaces/{cluster}/antiAffinity/{group}", "/console/{rest...}", "/metrics"} {
		tb.Handle("GET", p, auth.AccessAny, h)
	}
	f.Add("GET", "/admin/v2/persistent/a/b/c")
	f.Add("HEAD", "/admin/v2/namespaces/a/antiAffinity/topics")
	f.Add("GET", "/%zz")
	f.Fuzz(func(t *testing.T, method, path string) {
		segs, ok := SplitPath(path)
		if !ok {
			return
		}
		r, p, _ := tb.Lookup(method, segs)
		if r == nil {
			return
		}
		if _, ok := match(r.segs, segs); !ok || p == nil && strings.Contains(r.Pattern, "{") {
			t.Fatalf("%s %s served by %s with %v", method, path, r.ID(), p)
		}
	})
}
