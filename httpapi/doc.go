// Package httpapi is Magnetar's one HTTP surface: the route table every
// HTTP listener serves (broker, admin API, console, function worker,
// proxy), the guard in front of it, and the hardened server.
//
// # Routes as data
//
// A Route is one declaration: method, pattern, handler, the access rule
// (auth.Access: superuser, any, tenant admin of {tenant}, namespace or
// topic permissions, functions/sources/sinks permission, metrics,
// public), a stable Name, the request and response body types, the media
// types the body may have and its size limit. A Table holds the routes of
// one listener. The server routes by it, the guard authorizes by the
// serving route's Access, and tests and clients walk it (Routes, Route by
// name), so a route cannot be authorized by a rule other than its own.
//
//	t := httpapi.NewTable()
//	t.Add(httpapi.Route{Method: "GET", Pattern: "/admin/v2/tenants/{tenant}",
//		Access: auth.AccessTenantAdmin, Response: TenantInfo{}, Handler: getTenant})
//	h, err := t.Handler(httpapi.Guard{Security: sec, Limits: lim})   // err: bad declarations
//	srv := httpapi.NewServer(h, lim, log)
//	go srv.Serve(ln, nil)           // or a *tls.Config for HTTPS
//
// # Patterns and precedence
//
// Segments are literals, "{name}" (one segment) or a final "{name...}"
// (one or more segments); captured values are path-unescaped, and leading
// and trailing slashes are ignored. When several routes of a method match
// a path, the one with more literal segments wins; at equal counts the
// first position where their kinds differ decides (literal over wildcard
// over rest). So "/namespaces/{cluster}/antiAffinity/{group}" serves
// "/namespaces/c/antiAffinity/retention", not
// "/namespaces/{tenant}/{ns}/retention". Go's ServeMux refuses such pairs
// (neither pattern is more specific), which is why the table has its own
// matcher. Two routes of one method whose patterns differ only in
// wildcard names match the same paths: the second declaration is an
// error, and a table with errors is never served. A route without a
// valid Access is an error too. GET routes serve HEAD; a path served
// only by other methods answers 405 with Allow.
//
// # Names
//
// Route.Name defaults to DeriveName(method, pattern): the literal
// segments without "admin" and the version, the wildcards after the last
// literal, and the method ("namespaces.retention.get",
// "tenants.tenant.get"). Names are unique in a table; where two derived
// names collide the later route must be named explicitly.
//
// # The guard (Table.Handler)
//
// In order: request rate (429) and concurrency (503) limits; route
// lookup; for state-changing methods, cross-origin protection (Go's
// http.CrossOriginProtection: Sec-Fetch-Site and Origin against the
// request's host and Limits.TrustedOrigins; 403) and the body's media
// type (415); the body's size (413, before anything reads it) and pace;
// authentication (401 with the connection closed and the body unread)
// unless the route's Access needs none; 404/405 for unknown paths (after
// authentication, so they reveal nothing to strangers); authorization of
// the role, and of the original principal of a proxy role, by the
// route's Access (403); the route's handler with the role and identity
// in the request context. Errors are Pulsar's {"reason": ...}; a 500
// never carries internal error text (InternalError logs it).
//
// # The server (Server)
//
// An http.Server with Limits: header, idle, write and body timeouts (a
// body must keep a minimum pace), a cap on open connections, and a cap on
// the connections one client address holds before a request on them has
// authenticated (enforced at accept, below TLS). Limits also reads
// Pulsar's configuration keys (Limits.Set).
package httpapi
