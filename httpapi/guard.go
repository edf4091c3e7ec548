package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/magnetar-mq/magnetar/auth"
)

// Guard configures the request pipeline a Table is served behind (see
// Table.Handler).
type Guard struct {
	// Security authenticates and authorizes requests; nil (or one with
	// authentication off) lets every request through as the empty role.
	Security *auth.Security
	Limits   Limits
	Log      *slog.Logger
	// Anonymous marks a server that takes no credentials at all (a
	// webhook): none of its connections ever counts as authenticated, so
	// Limits.MaxUnauthenticatedPerIP caps every connection of an
	// address, not only those that have not yet sent a request.
	Anonymous bool
}

// InterceptFunc sees an authorized request before its route's handler
// and reports whether it answered it.
type InterceptFunc func(w http.ResponseWriter, r *http.Request, rt *Route, p Params) bool

// Handler returns the table served behind the guard, or the table's
// registration errors. Every request goes through, in order:
//
//  1. the request rate and concurrency limits (429, 503);
//  2. the route lookup (the route decides the rest);
//  3. cross-origin protection for state-changing methods: a browser
//     request from another origin is refused (403);
//  4. the body's media type for state-changing methods: a body must be
//     one the route consumes, JSON by default (415);
//  5. the body size (413, before anything reads it) and the body's pace
//     (a body slower than Limits.BodyMinRate is cut);
//  6. authentication (401, and the connection closes), unless the
//     route's Access needs none;
//  7. 404 or 405 for a path no route serves;
//  8. authorization by the route's Access, for the role and, on a
//     proxied request, the original principal (403);
//  9. the table's interceptor (SetIntercept), then the route's handler,
//     with the role in the request context.
func (t *Table) Handler(g Guard) (http.Handler, error) {
	if err := t.Err(); err != nil {
		return nil, err
	}
	g.Limits.EnsureDefaults()
	if g.Log == nil {
		g.Log = slog.New(slog.DiscardHandler)
	}
	h := &guarded{t: t, g: g, cop: http.NewCrossOriginProtection()}
	for _, o := range g.Limits.TrustedOrigins {
		if err := h.cop.AddTrustedOrigin(o); err != nil {
			return nil, fmt.Errorf("httpapi: trusted origin %q: %w", o, err)
		}
	}
	if g.Limits.RequestsLimitEnabled {
		h.rate = rate.NewLimiter(rate.Limit(g.Limits.RequestsMaxPerSecond), max(1, int(g.Limits.RequestsMaxPerSecond)))
	}
	if n := g.Limits.MaxConcurrentRequests; n > 0 {
		h.sem = make(chan struct{}, n)
	}
	return h, nil
}

type guarded struct {
	t    *Table
	g    Guard
	cop  *http.CrossOriginProtection
	rate *rate.Limiter
	sem  chan struct{}
}

// safeMethod reports whether m changes nothing (RFC 9110 §9.2.1).
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// hasBody reports whether r carries a body (chunked bodies count).
func hasBody(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}

func (h *guarded) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			h.g.Log.Error("HTTP handler panic", "method", r.Method, "path", r.URL.Path, "panic", v)
			w.Header().Set("Connection", "close")
			WriteError(w, http.StatusInternalServerError, InternalReason)
		}
	}()
	if h.rate != nil && !h.rate.Allow() {
		WriteError(w, http.StatusTooManyRequests, "Too many requests")
		return
	}
	if h.sem != nil {
		select {
		case h.sem <- struct{}{}:
			defer func() { <-h.sem }()
		default:
			t := time.NewTimer(h.g.Limits.ConcurrencyWait)
			select {
			case h.sem <- struct{}{}:
				t.Stop()
				defer func() { <-h.sem }()
			case <-t.C:
				w.Header().Set("Retry-After", "1")
				WriteError(w, http.StatusServiceUnavailable, "Too many concurrent requests")
				return
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
	}
	path, ok := SplitPath(r.URL.EscapedPath())
	if !ok {
		WriteError(w, http.StatusBadRequest, "bad path escape")
		return
	}
	rt, p, allowed := h.t.Lookup(r.Method, path)
	if !safeMethod(r.Method) {
		if err := h.cop.Check(r); err != nil {
			h.g.Log.Info("cross-origin request refused", "method", r.Method, "path", r.URL.Path,
				"origin", r.Header.Get("Origin"), "remote", r.RemoteAddr)
			WriteError(w, http.StatusForbidden, "Cross-origin request refused: "+err.Error())
			return
		}
		if rt != nil && hasBody(r) {
			mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if !rt.consumesAny() && (err != nil || !rt.consumes(mt)) {
				want := strings.Join(rt.Consumes, " or ")
				if want == "" {
					want = JSON
				}
				refuse(w, http.StatusUnsupportedMediaType, fmt.Sprintf("Unsupported Content-Type %q: this endpoint takes %s", r.Header.Get("Content-Type"), want))
				return
			}
		}
	}
	if hasBody(r) && !h.limitBody(w, r, rt) {
		return
	}
	s := h.g.Security
	need := s.Enabled() && (rt == nil || rt.Access.Authenticated(&s.Config))
	role, original := "", ""
	var id auth.Identity
	if need {
		var err error
		id, err = s.Authn.AuthenticateHTTP(r)
		if err != nil {
			h.g.Log.Warn("HTTP authentication failed", "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path, "err", err)
			w.Header().Set("WWW-Authenticate", `Bearer realm="magnetar"`)
			// An unauthenticated client keeps no connection: its body
			// is not read and the connection closes after the answer.
			refuse(w, http.StatusUnauthorized, "Authentication required")
			return
		}
		role, original = id.Role, r.Header.Get(auth.HeaderOriginalPrincipal)
		if perr := s.CheckOriginalPrincipal(role, original, true); perr != nil {
			h.g.Log.Warn("HTTP original principal refused", "remote", r.RemoteAddr, "role", role, "err", perr)
			msg := "Invalid combination of Original principal cannot be empty if the request is via proxy."
			if original != "" {
				msg = "Original principal is not allowed for role " + role
			}
			refuse(w, http.StatusUnauthorized, msg)
			return
		}
	}
	if !h.g.Anonymous {
		markAuthenticated(r.Context())
	}
	if rt == nil {
		if len(allowed) > 0 {
			w.Header().Set("Allow", strings.Join(allowed, ", "))
			WriteError(w, http.StatusMethodNotAllowed, "Method "+r.Method+" not allowed on "+r.URL.Path)
			return
		}
		WriteError(w, http.StatusNotFound, "Not found: "+r.URL.Path)
		return
	}
	effective := role
	if original != "" && s.IsProxyRole(role) {
		effective = original
	}
	if need && s.Authz != nil {
		for _, who := range auth.AuthorizedRoles(role, effective) {
			if err := s.AuthorizeRoute(r.Context(), who, rt.Access, p); err != nil {
				if errors.Is(err, auth.ErrAuthorization) {
					h.g.Log.Info("HTTP request denied", "role", who, "via", role, "route", rt.ID(), "path", r.URL.Path)
					WriteError(w, http.StatusForbidden, strings.TrimPrefix(err.Error(), auth.ErrAuthorization.Error()+": "))
					return
				}
				if errors.Is(err, auth.ErrTenantNotFound) { // Pulsar's answer, before the role's rights
					WriteError(w, http.StatusNotFound, "Tenant does not exist")
					return
				}
				InternalError(w, h.g.Log, "authorization check", err)
				return
			}
		}
	}
	r = r.WithContext(auth.WithIdentity(auth.WithRole(r.Context(), effective), id))
	if f := h.t.intercept; f != nil && f(w, r, rt, p) {
		return
	}
	rt.Handler(w, r, p)
}

// refuse answers a request whose body is not wanted and closes the
// connection after the answer. The server drains up to 256 KiB of an
// unread body before closing (so that a client still sending a small
// body reads the answer rather than a reset); refuse bounds that drain
// to refuseDrain, however slowly the client sends. Clients that send
// large bodies should ask "Expect: 100-continue": a refused request's
// body is then never sent.
func refuse(w http.ResponseWriter, status int, reason string) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(refuseDrain))
	WriteError(w, status, reason)
}

// refuseDrain bounds the reading of a refused request's body.
const refuseDrain = 500 * time.Millisecond

// limitBody enforces the route's body size (413 before anything reads
// the body) and pace; false when it answered.
func (h *guarded) limitBody(w http.ResponseWriter, r *http.Request, rt *Route) bool {
	limit := int64(MaxRequestBody)
	if rt != nil {
		limit = rt.maxBody()
	}
	if m := h.g.Limits.MaxRequestSize; m > 0 && m < limit {
		limit = m
	}
	tooLarge := func(n string) bool {
		refuse(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body of %s bytes is over the limit of %d bytes", n, limit))
		return false
	}
	if r.ContentLength > limit {
		return tooLarge(fmt.Sprint(r.ContentLength))
	}
	if t := h.g.Limits.BodyTimeout; t > 0 {
		r.Body = newPacedBody(w, r.Body, t, h.g.Limits.BodyMinRate)
	}
	if r.ContentLength >= 0 || limit > bufferedBodyLimit {
		// The server stops a declared body at its Content-Length; a
		// large chunked one is cut by the reader.
		if r.ContentLength < 0 {
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		return true
	}
	buf, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		w.Header().Set("Connection", "close")
		WriteError(w, http.StatusBadRequest, "cannot read the request body: "+err.Error())
		return false
	}
	if int64(len(buf)) > limit {
		return tooLarge("more than " + fmt.Sprint(limit))
	}
	r.Body = io.NopCloser(bytes.NewReader(buf))
	r.ContentLength = int64(len(buf))
	return true
}

// bufferedBodyLimit: a chunked body of a route whose limit is at most
// this is read whole before the handler, so that the handler never sees
// a cut body.
const bufferedBodyLimit = MaxSchemaBody

// pacedBody cuts a body that arrives too slowly: each read must come
// within timeout of the last one, and the body as a whole must keep up
// minRate bytes per second after a first timeout of grace. A client that
// trickles a byte every few seconds holds the connection for at most
// about timeout.
type pacedBody struct {
	rc      io.ReadCloser
	ctl     *http.ResponseController
	start   time.Time
	n       int64
	timeout time.Duration
	minRate int64
}

func newPacedBody(w http.ResponseWriter, rc io.ReadCloser, timeout time.Duration, minRate int64) *pacedBody {
	b := &pacedBody{rc: rc, ctl: http.NewResponseController(w), start: time.Now(), timeout: timeout, minRate: minRate}
	// Also bounds the server's discard of a body the handler left unread.
	_ = b.ctl.SetReadDeadline(b.start.Add(timeout))
	return b
}

func (b *pacedBody) Read(p []byte) (int, error) {
	deadline := time.Now().Add(b.timeout)
	if b.minRate > 0 {
		byRate := b.start.Add(b.timeout + time.Duration(float64(b.n)/float64(b.minRate)*float64(time.Second)))
		if byRate.Before(deadline) {
			deadline = byRate
		}
	}
	_ = b.ctl.SetReadDeadline(deadline)
	n, err := b.rc.Read(p)
	b.n += int64(n)
	return n, err
}

func (b *pacedBody) Close() error { return b.rc.Close() }
