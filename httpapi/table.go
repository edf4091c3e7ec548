package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/magnetar-mq/magnetar/auth"
)

// HandlerFunc handles one matched request; p holds the captured
// (path-unescaped) segments.
type HandlerFunc func(w http.ResponseWriter, r *http.Request, p Params)

// Params are the captured path segments of a matched route.
type Params map[string]string

// Media types a route may accept as a request body.
const (
	JSON        = "application/json"
	Multipart   = "multipart/form-data"
	OctetStream = "application/octet-stream"
	// AnyMedia in a route's Consumes accepts a body of any type, or of
	// none declared (a webhook's).
	AnyMedia = "*/*"
)

// Request body limits. A larger body is refused whole with 413 before any
// handler (or the authorization check) reads it.
const (
	// MaxRequestBody bounds a route's body unless it declares otherwise
	// (1 MiB).
	MaxRequestBody = 1 << 20
	// MaxSchemaBody bounds a schema upload (16 MiB).
	MaxSchemaBody = 16 << 20
	// MaxPackageBody bounds a function, source or sink package upload
	// (256 MiB).
	MaxPackageBody = 256 << 20
)

// Route is the declaration of one endpoint: the server serves it, the
// guard authorizes it by Access, and tests and clients walk it.
type Route struct {
	// Name is the route's stable identifier (a CLI command or a test
	// names the route by it). Empty: derived from Method and Pattern
	// (see DeriveName).
	Name    string
	Method  string
	Pattern string
	// Access is the authorization rule: what the caller's role needs.
	Access auth.Access
	// Request is a value of the request body's type (nil: no body or an
	// untyped one); Response likewise for a 2xx answer's body. They
	// document the route for clients built from the table.
	Request, Response any
	// Consumes lists the media types a request body may have (default
	// JSON only). A state-changing request with a body of another type is
	// refused with 415.
	Consumes []string
	// MaxBody bounds the request body (default MaxRequestBody).
	MaxBody int64
	Handler HandlerFunc

	segs []segment
}

// ID is "METHOD pattern": unique in a table.
func (r *Route) ID() string { return r.Method + " " + r.Pattern }

// consumes reports whether a body of media type mt is accepted. A type
// with the +json suffix (RFC 6839), such as pulsaradmin's
// application/vnd.partitioned-topic-metadata+json, counts as JSON.
func (r *Route) consumes(mt string) bool {
	if strings.HasSuffix(mt, "+json") && strings.HasPrefix(mt, "application/") {
		mt = JSON
	}
	if len(r.Consumes) == 0 {
		return mt == JSON
	}
	return slices.Contains(r.Consumes, mt)
}

// consumesAny reports whether the route takes a body of any media type.
func (r *Route) consumesAny() bool { return slices.Contains(r.Consumes, AnyMedia) }

func (r *Route) maxBody() int64 {
	if r.MaxBody > 0 {
		return r.MaxBody
	}
	return MaxRequestBody
}

// segment is one compiled pattern segment.
type segment struct {
	lit  string // the literal; "" for a wildcard
	name string // the wildcard's name
	rest bool   // a final {name...}: one or more remaining segments
}

func (s segment) wild() bool { return s.name != "" }

// rank orders segment kinds for precedence: literal > wildcard > rest.
func (s segment) rank() int {
	switch {
	case !s.wild():
		return 2
	case !s.rest:
		return 1
	}
	return 0
}

func compile(pattern string) ([]segment, error) {
	if !strings.HasPrefix(pattern, "/") {
		return nil, fmt.Errorf("httpapi: pattern %q does not start with /", pattern)
	}
	raw := strings.Split(strings.Trim(pattern, "/"), "/")
	segs := make([]segment, len(raw))
	names := map[string]bool{}
	for i, s := range raw {
		if !strings.HasPrefix(s, "{") {
			if strings.ContainsAny(s, "{}") {
				return nil, fmt.Errorf("httpapi: pattern %q: bad segment %q", pattern, s)
			}
			segs[i] = segment{lit: s}
			continue
		}
		if !strings.HasSuffix(s, "}") || len(s) < 3 {
			return nil, fmt.Errorf("httpapi: pattern %q: bad segment %q", pattern, s)
		}
		name, rest := strings.CutSuffix(s[1:len(s)-1], "...")
		if rest && i != len(raw)-1 {
			return nil, fmt.Errorf("httpapi: pattern %q: {%s...} must be the last segment", pattern, name)
		}
		if name == "" || names[name] {
			return nil, fmt.Errorf("httpapi: pattern %q: empty or repeated wildcard %q", pattern, name)
		}
		names[name] = true
		segs[i] = segment{name: name, rest: rest}
	}
	return segs, nil
}

// shape is the pattern with its wildcard names erased: two routes of one
// method and one shape match exactly the same paths, so the router could
// not tell them apart.
func shape(segs []segment) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteByte('/')
		switch {
		case s.rest:
			b.WriteString("{...}")
		case s.wild():
			b.WriteString("{}")
		default:
			b.WriteString(s.lit)
		}
	}
	return b.String()
}

// match reports whether segs match path, with the captured values.
func match(segs []segment, path []string) (Params, bool) {
	var p Params
	for i, s := range segs {
		if i >= len(path) {
			return nil, false
		}
		if !s.wild() {
			if s.lit != path[i] {
				return nil, false
			}
			continue
		}
		if p == nil {
			p = Params{}
		}
		if s.rest {
			p[s.name] = strings.Join(path[i:], "/")
			return p, true
		}
		p[s.name] = path[i]
	}
	return p, len(path) == len(segs)
}

// literals counts the literal segments.
func literals(segs []segment) int {
	n := 0
	for _, s := range segs {
		if !s.wild() {
			n++
		}
	}
	return n
}

// moreSpecific reports whether a takes precedence over b when both match
// a path: more literal segments win; at equal counts the first position
// where their kinds differ decides (a literal beats a wildcard, a
// wildcard beats a rest wildcard), so "/namespaces/{cluster}/antiAffinity/{group}"
// beats "/namespaces/{tenant}/{ns}/retention" on the path
// "/namespaces/c/antiAffinity/retention".
func moreSpecific(a, b []segment) bool {
	if la, lb := literals(a), literals(b); la != lb {
		return la > lb
	}
	for i := 0; i < len(a) && i < len(b); i++ {
		if ra, rb := a[i].rank(), b[i].rank(); ra != rb {
			return ra > rb
		}
	}
	return len(a) > len(b)
}

// Table is the route table of one HTTP surface. Add every route before
// serving; a Table is not safe for concurrent registration and serving.
type Table struct {
	routes []*Route
	byID   map[string]*Route
	byName map[string]*Route
	shapes map[string]*Route // method + shape
	errs   []error
	// intercept runs before every authorized request's handler.
	intercept InterceptFunc
}

// SetIntercept installs f to see every authorized request before its
// route's handler (a cluster broker sends topic calls to the topic's
// owner); f reports whether it answered the request.
func (t *Table) SetIntercept(f InterceptFunc) { t.intercept = f }

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{byID: map[string]*Route{}, byName: map[string]*Route{}, shapes: map[string]*Route{}}
}

// Add declares routes. A route that cannot be told apart from one
// already declared (same method and pattern up to wildcard names), one
// with a name already taken, a bad pattern or no handler is not added;
// the error is kept and returned by Err (servers refuse to start).
func (t *Table) Add(routes ...Route) {
	for _, r := range routes {
		r := r
		if err := t.add(&r); err != nil {
			t.errs = append(t.errs, err)
		}
	}
}

func (t *Table) add(r *Route) error {
	segs, err := compile(r.Pattern)
	if err != nil {
		return err
	}
	if r.Method == "" || strings.ToUpper(r.Method) != r.Method {
		return fmt.Errorf("httpapi: %s: method %q", r.Pattern, r.Method)
	}
	if r.Handler == nil {
		return fmt.Errorf("httpapi: %s: no handler", r.ID())
	}
	if !r.Access.Valid() {
		return fmt.Errorf("httpapi: %s declares no access rule", r.ID())
	}
	r.segs = segs
	key := r.Method + " " + shape(segs)
	if old := t.shapes[key]; old != nil {
		return fmt.Errorf("httpapi: %s is registered twice (first as %s): the second would never serve", r.ID(), old.ID())
	}
	if r.Name == "" {
		r.Name = DeriveName(r.Method, r.Pattern)
	}
	if old := t.byName[r.Name]; old != nil {
		return fmt.Errorf("httpapi: route name %q of %s is taken by %s: give one of them a Name", r.Name, r.ID(), old.ID())
	}
	t.shapes[key], t.byName[r.Name], t.byID[r.ID()] = r, r, r
	t.routes = append(t.routes, r)
	return nil
}

// Handle declares one route: a shorthand for Add.
func (t *Table) Handle(method, pattern string, access auth.Access, h HandlerFunc) {
	t.Add(Route{Method: method, Pattern: pattern, Access: access, Handler: h})
}

// Err returns the registration errors (nil when every route was added).
func (t *Table) Err() error {
	if len(t.errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w (and %d more)", t.errs[0], len(t.errs)-1)
}

// Errs returns every registration error.
func (t *Table) Errs() []error { return slices.Clone(t.errs) }

// Routes returns the declared routes in declaration order. The routes
// are the table's own: before serving, a declaring package may fill in
// their documentation (Request, Response); nothing else may change.
func (t *Table) Routes() []*Route { return slices.Clone(t.routes) }

// Route returns the route with the given name, or nil.
func (t *Table) Route(name string) *Route { return t.byName[name] }

// DeriveName is a route's default name: the literal segments (without
// a leading "admin" and the API version) and the names of the wildcards
// after the last literal, joined by ".", then the lowercase method:
// "namespaces.retention.get" for GET
// /admin/v2/namespaces/{tenant}/{ns}/retention, "tenants.tenant.get" for
// GET /admin/v2/tenants/{tenant}, "lookup.topic.domain.tenant.ns.topic.get"
// for the topic lookup.
func DeriveName(method, pattern string) string {
	segs := strings.Split(strings.Trim(pattern, "/"), "/")
	if len(segs) >= 2 && isVersion(segs[1]) {
		segs = append(segs[:1:1], segs[2:]...)
	}
	if len(segs) > 0 && segs[0] == "admin" {
		segs = segs[1:]
	}
	last := -1
	for i, s := range segs {
		if !strings.HasPrefix(s, "{") {
			last = i
		}
	}
	var parts []string
	for i, s := range segs {
		switch {
		case s == "":
		case !strings.HasPrefix(s, "{"):
			parts = append(parts, s)
		case i > last:
			parts = append(parts, strings.TrimSuffix(strings.Trim(s, "{}"), "..."))
		}
	}
	return strings.Join(append(parts, strings.ToLower(method)), ".")
}

// SplitPath splits an escaped URL path into unescaped segments (leading
// and trailing slashes ignored); ok is false on a bad escape.
func SplitPath(escaped string) ([]string, bool) {
	raw := strings.Split(strings.Trim(escaped, "/"), "/")
	for i, s := range raw {
		u, err := url.PathUnescape(s)
		if err != nil {
			return nil, false
		}
		raw[i] = u
	}
	return raw, true
}

// Lookup finds the route serving method on path (split by SplitPath):
// the most specific match (see moreSpecific). A GET route serves HEAD.
// When no route of the method matches, allowed lists the methods whose
// routes do (a 405 rather than a 404).
func (t *Table) Lookup(method string, path []string) (r *Route, p Params, allowed []string) {
	if method == http.MethodHead {
		method = http.MethodGet
	}
	for _, c := range t.routes {
		cp, ok := match(c.segs, path)
		if !ok {
			continue
		}
		if c.Method != method {
			if !slices.Contains(allowed, c.Method) {
				allowed = append(allowed, c.Method)
			}
			continue
		}
		if r == nil || moreSpecific(c.segs, r.segs) {
			r, p = c, cp
		}
	}
	if r != nil {
		allowed = nil
	}
	return r, p, allowed
}

// isVersion reports whether s is an API version segment ("v2").
func isVersion(s string) bool {
	if len(s) < 2 || s[0] != 'v' {
		return false
	}
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
