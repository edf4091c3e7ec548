package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// maxHTTPBody bounds a forwarded request body (it is buffered so that a
// redirect can resend it).
const maxHTTPBody = 64 << 20

// hopHeaders are not forwarded (RFC 9110 §7.6.1), nor are the client's
// credentials and any X-Original-Principal it sent; the last three (the
// browser's origin headers, which the proxy's guard has checked against
// the proxy's own origin) are not forwarded either, and the broker sees
// a non-browser request.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Authorization", auth.HeaderOriginalPrincipal,
	"Origin", "Sec-Fetch-Site", "Sec-Fetch-Mode"}

// requestOnlyHeaders is how many of hopHeaders' last entries concern
// requests only (kept on answers).
const requestOnlyHeaders = 5

func httpError(w http.ResponseWriter, code int, reason string) { httpapi.WriteError(w, code, reason) }

// routes declares the proxy's HTTP surface: /admin and /lookup
// (authenticated here, forwarded to brokers, which authorize the
// client's role), /metrics, /proxy-stats (superusers) and /status.html.
func (p *Proxy) routes() *httpapi.Table {
	t := httpapi.NewTable()
	metrics := p.m.handler()
	t.Add(
		httpapi.Route{Method: "GET", Pattern: "/metrics", Access: auth.AccessMetrics,
			Handler: func(w http.ResponseWriter, r *http.Request, _ httpapi.Params) { metrics.ServeHTTP(w, r) }},
		httpapi.Route{Method: "GET", Pattern: "/proxy-stats", Access: auth.AccessSuperUser, Response: Stats{}, Handler: p.serveStats},
		httpapi.Route{Method: "GET", Pattern: "/proxy-stats/connections", Access: auth.AccessSuperUser, Handler: p.serveStats},
		httpapi.Route{Method: "GET", Pattern: "/status.html", Access: auth.AccessPublic,
			Handler: func(w http.ResponseWriter, _ *http.Request, _ httpapi.Params) { _, _ = io.WriteString(w, "OK") }},
	)
	for _, prefix := range []string{"admin", "lookup"} {
		for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete} {
			t.Add(httpapi.Route{Name: "forward." + prefix + "." + strings.ToLower(m), Method: m, Pattern: "/" + prefix + "/{path...}",
				Access: auth.AccessAny, Consumes: []string{httpapi.JSON, httpapi.Multipart, httpapi.OctetStream}, MaxBody: maxHTTPBody,
				Handler: func(w http.ResponseWriter, r *http.Request, _ httpapi.Params) { p.forwardHTTP(w, r) }})
		}
	}
	return t
}

// newHTTPServer builds the server of the HTTP and HTTPS listeners: the
// routes behind the guard (authentication; /proxy-stats for
// superUserRoles) under HTTPLimits.
func (p *Proxy) newHTTPServer() (*httpapi.Server, error) {
	sec := p.cfg.Security
	if sec.Enabled() && sec.Authz == nil {
		// The proxy authorizes only its own superuser pages; brokers
		// authorize everything it forwards.
		c := *sec
		c.Authz = auth.NewAuthorizer(auth.AuthorizerConfig{Store: p.cfg.Metadata, SuperUsers: p.cfg.SuperUserRoles})
		sec = &c
	}
	h, err := p.routes().Handler(httpapi.Guard{Security: sec, Limits: p.cfg.HTTPLimits, Log: p.log.With("component", "http")})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	return httpapi.NewServer(h, p.cfg.HTTPLimits, p.log.With("component", "http")), nil
}

func (p *Proxy) newWebClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = p.cfg.BrokerClientTLS
	tr.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: tr, Timeout: 2 * time.Minute}
}

// topicOfPath returns the topic an admin path addresses
// (/admin/v2/{persistent|non-persistent}/{tenant}/{ns}/{topic}[/...]),
// or "".
func topicOfPath(path string) string {
	rest, ok := strings.CutPrefix(path, "/admin/v2/")
	if !ok {
		return ""
	}
	seg := strings.Split(rest, "/")
	if len(seg) < 4 || (seg[0] != "persistent" && seg[0] != "non-persistent") || seg[1] == "" || seg[2] == "" || seg[3] == "" {
		return ""
	}
	if len(seg) == 4 && seg[3] == "partitioned" { // list of partitioned topics
		return ""
	}
	return seg[0] + "://" + seg[1] + "/" + seg[2] + "/" + seg[3]
}

// ownerWebURL looks topic up (as the client) and returns its owner's web
// URL, "" when that cannot be told (the request then goes to any broker,
// whose redirect the proxy follows).
func (p *Proxy) ownerWebURL(ctx context.Context, topic string, cl clientIdentity) string {
	lr := p.lookup(ctx, &pb.CommandLookupTopic{Topic: proto.String(topic), RequestId: proto.Uint64(0)}, cl)
	if lr.GetResponse() != pb.CommandLookupTopicResponse_Connect {
		return ""
	}
	return p.disc.webFor(ctx, lr.GetBrokerServiceUrl())
}

// forwardHTTP forwards the request (authenticated by the guard) to a
// broker (the topic's owner for topic calls) with the proxy's
// credentials and the caller's role in X-Original-Principal, follows
// redirects itself and copies the answer back.
func (p *Proxy) forwardHTTP(w http.ResponseWriter, r *http.Request) {
	var cl clientIdentity
	if s := p.cfg.Security; s.Enabled() {
		id, _ := auth.IdentityFromContext(r.Context())
		cl.role, cl.method = id.Role, id.Method
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxHTTPBody))
	if err != nil {
		httpError(w, http.StatusRequestEntityTooLarge, "request body too large or unreadable: "+err.Error())
		return
	}
	ctx := r.Context()
	var bases []string
	if t := topicOfPath(r.URL.EscapedPath()); t != "" {
		if u := p.ownerWebURL(ctx, t, cl); u != "" {
			bases = append(bases, u)
		}
	}
	for len(bases) < 3 {
		u, err := p.disc.nextWeb(ctx)
		if err != nil {
			break
		}
		bases = append(bases, u)
	}
	if len(bases) == 0 {
		httpError(w, http.StatusServiceUnavailable, "no broker available")
		return
	}
	authz := ""
	if a := p.cfg.BrokerClientAuth; a != nil {
		if authz, err = a.HTTPHeader(); err != nil {
			httpapi.InternalError(w, p.log, "proxy credentials", err)
			return
		}
	}
	setAuth := func(h http.Header) {
		if authz != "" {
			h.Set("Authorization", authz)
		}
		if cl.role != "" {
			h.Set(auth.HeaderOriginalPrincipal, cl.role)
		}
	}
	var resp *http.Response
	for _, base := range bases {
		req, err := http.NewRequestWithContext(ctx, r.Method, base+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			httpError(w, http.StatusBadRequest, err.Error())
			return
		}
		for k, vs := range r.Header {
			req.Header[k] = append([]string(nil), vs...)
		}
		clientAuthz := req.Header.Get("Authorization")
		for _, h := range hopHeaders {
			req.Header.Del(h)
		}
		if !p.cfg.Security.Enabled() && authz == "" && clientAuthz != "" {
			// Neither authenticating nor holding credentials, the
			// proxy passes the caller's own credentials through.
			req.Header.Set("Authorization", clientAuthz)
		}
		setAuth(req.Header)
		if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
			req.Header.Set("X-Forwarded-For", host)
		}
		c := *p.web
		c.CheckRedirect = func(nr *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return errors.New("reached max number of redirections")
			}
			setAuth(nr.Header)
			return nil
		}
		resp, err = c.Do(req)
		if err == nil {
			break
		}
		p.log.Info("HTTP forward failed", "broker", base, "path", r.URL.Path, "err", err)
		if ctx.Err() != nil {
			return
		}
	}
	if resp == nil {
		p.m.httpRequests.WithLabelValues("502").Inc()
		httpError(w, http.StatusBadGateway, "no broker answered")
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	for _, h := range hopHeaders[:len(hopHeaders)-requestOnlyHeaders] {
		w.Header().Del(h)
	}
	p.m.httpRequests.WithLabelValues(strconv.Itoa(resp.StatusCode)).Inc()
	w.WriteHeader(resp.StatusCode)
	if _, err := io.Copy(w, resp.Body); err != nil {
		p.log.Debug("HTTP answer copy", "err", fmt.Sprint(err))
	}
}
