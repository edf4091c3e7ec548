package httpapi

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Limits bound what one client can hold of an HTTP server. Pulsar's
// settings keep their names (maxHttpServerConnections,
// maxConcurrentHttpRequests, httpRequestsLimitEnabled,
// httpRequestsMaxPerSecond, httpMaxRequestSize, httpMaxRequestHeaderSize);
// Pulsar has no keys for the timeouts and the per-address cap (Jetty's
// 30 s idle timeout is built in), so those are Magnetar's own. In the
// struct a zero field takes its default and a negative one turns the
// limit off; through Set a key's value 0 turns it off, as Pulsar's
// "0 to disable".
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's line and headers, and
	// the TLS handshake (10 s).
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request for
	// this long (30 s).
	IdleTimeout time.Duration
	// WriteTimeout bounds a request from the end of its headers to the
	// end of the answer (2 min).
	WriteTimeout time.Duration
	// BodyTimeout is the longest wait for the next piece of a request
	// body, and the grace before BodyMinRate applies (20 s).
	BodyTimeout time.Duration
	// BodyMinRate is the slowest average pace of a request body in bytes
	// per second after BodyTimeout (1 KiB/s).
	BodyMinRate int64
	// MaxConnections bounds the server's open connections; beyond it new
	// ones wait in the listen backlog (2048).
	MaxConnections int
	// MaxUnauthenticatedPerIP bounds the connections one client address
	// holds before a request on them has authenticated; a new connection
	// over the cap is closed at once (32).
	MaxUnauthenticatedPerIP int
	// MaxConcurrentRequests bounds the requests served at once; more wait
	// up to ConcurrencyWait, then get 503 (1024).
	MaxConcurrentRequests int
	ConcurrencyWait       time.Duration
	// RequestsLimitEnabled turns on a server-wide rate of
	// RequestsMaxPerSecond (100); excess requests get 429.
	RequestsLimitEnabled bool
	RequestsMaxPerSecond float64
	// MaxRequestSize caps every request body (≤ 0: only the routes'
	// own limits).
	MaxRequestSize int64
	// MaxRequestHeaderSize bounds the request line and headers (8 KiB).
	MaxRequestHeaderSize int
	// TrustedOrigins are origins (scheme://host[:port]) whose browser
	// requests may change state besides the server's own.
	TrustedOrigins []string
}

// EnsureDefaults fills the zero fields with their defaults.
func (l *Limits) EnsureDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&l.ReadHeaderTimeout, 10*time.Second)
	def(&l.IdleTimeout, 30*time.Second)
	def(&l.WriteTimeout, 2*time.Minute)
	def(&l.BodyTimeout, 20*time.Second)
	def(&l.ConcurrencyWait, 5*time.Second)
	if l.BodyMinRate == 0 {
		l.BodyMinRate = 1 << 10
	}
	if l.MaxConnections == 0 {
		l.MaxConnections = 2048
	}
	if l.MaxUnauthenticatedPerIP == 0 {
		l.MaxUnauthenticatedPerIP = 32
	}
	if l.MaxConcurrentRequests == 0 {
		l.MaxConcurrentRequests = 1024
	}
	if l.RequestsMaxPerSecond <= 0 {
		l.RequestsMaxPerSecond = 100
	}
	if l.MaxRequestHeaderSize <= 0 {
		l.MaxRequestHeaderSize = 8 << 10
	}
}

// on returns d, or 0 (no timeout) for a negative d.
func on(d time.Duration) time.Duration { return max(d, 0) }

type limitKey struct {
	key, doc string
	dur      *time.Duration
	n        *int
	n64      *int64
	b        *bool
	f        *float64
	ls       *[]string
}

func (l *Limits) keys() []limitKey {
	return []limitKey{
		{key: "httpServerReadHeaderTimeoutSeconds", dur: &l.ReadHeaderTimeout, doc: "seconds to read a request's headers and the TLS handshake (default 10; 0: no limit)"},
		{key: "httpServerIdleTimeoutSeconds", dur: &l.IdleTimeout, doc: "seconds an idle keep-alive connection stays open (default 30; 0: no limit)"},
		{key: "httpServerWriteTimeoutSeconds", dur: &l.WriteTimeout, doc: "seconds from a request's headers to the end of its answer (default 120; 0: no limit)"},
		{key: "httpServerRequestBodyTimeoutSeconds", dur: &l.BodyTimeout, doc: "seconds to wait for the next part of a request body (default 20; 0: no limit)"},
		{key: "httpServerRequestBodyMinBytesPerSecond", n64: &l.BodyMinRate, doc: "slowest average request body pace after the body timeout (default 1024; 0: none)"},
		{key: "maxHttpServerConnections", n: &l.MaxConnections, doc: "open HTTP connections at most (default 2048; 0: no limit)"},
		{key: "httpMaxUnauthenticatedConnectionsPerIp", n: &l.MaxUnauthenticatedPerIP, doc: "connections one address may hold before authenticating (default 32; 0: no limit)"},
		{key: "maxConcurrentHttpRequests", n: &l.MaxConcurrentRequests, doc: "HTTP requests served at once (default 1024; 0: no limit)"},
		{key: "httpRequestsLimitEnabled", b: &l.RequestsLimitEnabled, doc: "limit the HTTP request rate to httpRequestsMaxPerSecond (429 beyond)"},
		{key: "httpRequestsMaxPerSecond", f: &l.RequestsMaxPerSecond, doc: "HTTP requests per second when httpRequestsLimitEnabled (default 100)"},
		{key: "httpMaxRequestSize", n64: &l.MaxRequestSize, doc: "bytes of any request body at most (default -1: each endpoint's own limit)"},
		{key: "httpMaxRequestHeaderSize", n: &l.MaxRequestHeaderSize, doc: "bytes of a request line and headers at most (default 8192)"},
		{key: "httpTrustedOrigins", ls: &l.TrustedOrigins, doc: "comma list of browser origins (scheme://host:port) besides the server's own that may change state"},
	}
}

// Keys lists every setting: key and one-line description.
func (l *Limits) Keys() [][2]string {
	var out [][2]string
	for _, k := range l.keys() {
		out = append(out, [2]string{k.key, k.doc})
	}
	return out
}

// Known reports whether key is an HTTP limit setting.
func (l *Limits) Known(key string) bool {
	return slices.ContainsFunc(l.keys(), func(k limitKey) bool { return k.key == key })
}

// IsBool reports whether key is a boolean setting.
func (l *Limits) IsBool(key string) bool {
	return slices.ContainsFunc(l.keys(), func(k limitKey) bool { return k.key == key && k.b != nil })
}

// Set assigns one setting by its key. For the timeouts and the caps 0
// means off.
func (l *Limits) Set(key, value string) error {
	value = strings.TrimSpace(value)
	i := slices.IndexFunc(l.keys(), func(k limitKey) bool { return k.key == key })
	if i < 0 {
		return fmt.Errorf("httpapi: unknown setting %q", key)
	}
	k := l.keys()[i]
	bad := func(what string) error { return fmt.Errorf("httpapi: %s: %q is not %s", key, value, what) }
	switch {
	case k.dur != nil:
		v, err := strconv.ParseFloat(value, 64)
		if err != nil || v < 0 {
			return bad("a non-negative number of seconds")
		}
		*k.dur = time.Duration(v * float64(time.Second))
		if v == 0 {
			*k.dur = -1
		}
	case k.n != nil:
		v, err := strconv.Atoi(value)
		if err != nil || v < 0 {
			return bad("a non-negative integer")
		}
		if v == 0 && key == "httpMaxRequestHeaderSize" {
			// No "off" here: a header limit of 0 would refuse every
			// request (Pulsar gives 0 no meaning).
			return bad("a positive integer")
		}
		*k.n = v
		if v == 0 {
			*k.n = -1
		}
	case k.n64 != nil:
		v, err := strconv.ParseInt(value, 10, 64)
		if err != nil || (v < 0 && key != "httpMaxRequestSize") {
			return bad("an integer")
		}
		*k.n64 = v
		if v == 0 && key != "httpMaxRequestSize" {
			*k.n64 = -1
		}
	case k.b != nil:
		v, err := strconv.ParseBool(value)
		if err != nil {
			return bad("a boolean")
		}
		*k.b = v
	case k.f != nil:
		v, err := strconv.ParseFloat(value, 64)
		if err != nil || v <= 0 {
			return bad("a positive number")
		}
		*k.f = v
	case k.ls != nil:
		*k.ls = nil
		for _, s := range strings.Split(value, ",") {
			if s = strings.TrimSpace(s); s != "" {
				*k.ls = append(*k.ls, s)
			}
		}
	}
	return nil
}
