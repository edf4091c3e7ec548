package broker

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Request body limits of the HTTP API. A larger body is refused whole
// with 413 before any handler (or the authorization check) reads it, so
// no handler ever sees a cut body: one of declared length is refused
// from its Content-Length, a chunked one once it passes the limit.
const (
	// MaxRequestBody bounds every request body (1 MiB)...
	MaxRequestBody = 1 << 20
	// MaxSchemaBody ...except a schema upload's (16 MiB)...
	MaxSchemaBody = 16 << 20
	// MaxPackageBody ...and a function, source or sink package upload's
	// under /admin/v3 (256 MiB).
	MaxPackageBody = 256 << 20
)

// bodyLimit is the body limit of r.
func bodyLimit(r *http.Request) int64 {
	for _, kind := range []string{"/admin/v3/functions/", "/admin/v3/sources/", "/admin/v3/sinks/"} {
		if strings.HasPrefix(r.URL.Path, kind) && (r.Method == http.MethodPost || r.Method == http.MethodPut) {
			return MaxPackageBody
		}
	}
	if r.Method == http.MethodPost && strings.HasSuffix(strings.TrimRight(r.URL.Path, "/"), "/schema") {
		return MaxSchemaBody
	}
	return MaxRequestBody
}

// limitBody enforces the request body limits in front of next.
func limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		limit := bodyLimit(r)
		tooLarge := func(n string) {
			// The rest of the body is not read: close the connection
			// instead of draining it.
			w.Header().Set("Connection", "close")
			WriteError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body of %s bytes is over the limit of %d bytes", n, limit))
		}
		if r.ContentLength > limit {
			tooLarge(fmt.Sprint(r.ContentLength))
			return
		}
		if r.ContentLength >= 0 {
			// The server stops the body at Content-Length.
			next.ServeHTTP(w, r)
			return
		}
		buf, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
		if err != nil {
			WriteError(w, http.StatusBadRequest, "cannot read the request body: "+err.Error())
			return
		}
		if int64(len(buf)) > limit {
			tooLarge("more than " + fmt.Sprint(limit))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(buf))
		r.ContentLength = int64(len(buf))
		next.ServeHTTP(w, r)
	})
}
