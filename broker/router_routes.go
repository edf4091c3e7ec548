package broker

import "strings"

// Route is one registered route: its method and pattern.
type Route struct {
	Method, Pattern string
}

// Routes lists the registered routes in registration order (for tests
// that walk the API, and for documentation).
func (rt *Router) Routes() []Route {
	out := make([]Route, 0, len(rt.routes))
	for _, r := range rt.routes {
		out = append(out, Route{Method: r.method, Pattern: "/" + strings.Join(r.segs, "/")})
	}
	return out
}
