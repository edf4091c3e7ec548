package broker

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// Router is the admin/lookup HTTP router: a registration table of
// (method, pattern, handler). Patterns are slash-separated segments where
// "{name}" matches any one segment and a final "{name...}" matches the
// rest of the path. When several patterns match, the one with the most
// literal segments wins (so "/admin/v2/namespaces/{t}/{ns}/topics" beats
// "/admin/v2/{domain}/{t}/{ns}/{topic}"); ties go to the earliest
// registration. Unknown paths answer 404 and known paths with another
// method 405, both with a {"reason":...} body.
//
// Register routes before Start; Router is not safe for concurrent
// registration and serving.
type Router struct {
	routes []route
}

type route struct {
	method   string
	segs     []string
	literals int
	h        HandlerFunc
}

// HandlerFunc handles one matched request; p holds the captured
// (path-unescaped) segments.
type HandlerFunc func(w http.ResponseWriter, r *http.Request, p Params)

// Params are the captured path segments of a matched route.
type Params map[string]string

func newRouter() *Router { return &Router{} }

// NewRouter returns an empty router, for servers other than the broker
// (the function worker) that serve the same REST conventions.
func NewRouter() *Router { return newRouter() }

// Handle registers h for method and pattern.
func (rt *Router) Handle(method, pattern string, h HandlerFunc) {
	segs := strings.Split(strings.Trim(pattern, "/"), "/")
	lit := 0
	for _, s := range segs {
		if !strings.HasPrefix(s, "{") {
			lit++
		}
	}
	rt.routes = append(rt.routes, route{method: method, segs: segs, literals: lit, h: h})
}

func (r *route) match(path []string) (Params, bool) {
	var p Params
	for i, s := range r.segs {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "...}") {
			if i >= len(path) {
				return nil, false
			}
			if p == nil {
				p = Params{}
			}
			p[s[1:len(s)-4]] = strings.Join(path[i:], "/")
			return p, true
		}
		if i >= len(path) {
			return nil, false
		}
		if strings.HasPrefix(s, "{") {
			if p == nil {
				p = Params{}
			}
			p[s[1:len(s)-1]] = path[i]
			continue
		}
		if s != path[i] {
			return nil, false
		}
	}
	return p, len(path) == len(r.segs)
}

// ServeHTTP dispatches to the best-matching route.
func (rt *Router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	raw := strings.Split(strings.Trim(req.URL.EscapedPath(), "/"), "/")
	path := make([]string, len(raw))
	for i, s := range raw {
		u, err := url.PathUnescape(s)
		if err != nil {
			WriteError(w, http.StatusBadRequest, "bad path escape")
			return
		}
		path[i] = u
	}
	var best *route
	var bestP Params
	methodMismatch := false
	for i := range rt.routes {
		r := &rt.routes[i]
		p, ok := r.match(path)
		if !ok {
			continue
		}
		if r.method != req.Method && !(r.method == http.MethodGet && req.Method == http.MethodHead) {
			methodMismatch = true
			continue
		}
		if best == nil || r.literals > best.literals {
			best, bestP = r, p
		}
	}
	if best == nil {
		if methodMismatch {
			WriteError(w, http.StatusMethodNotAllowed, "Method "+req.Method+" not allowed on "+req.URL.Path)
			return
		}
		WriteError(w, http.StatusNotFound, "Not found: "+req.URL.Path)
		return
	}
	best.h(w, req, bestP)
}

// WriteJSON writes v as a JSON response with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError writes Pulsar's error shape {"reason": msg}.
func WriteError(w http.ResponseWriter, status int, msg string) {
	WriteJSON(w, status, map[string]string{"reason": msg})
}
