package proxy

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// maxHTTPBody bounds a forwarded request body (it is buffered so that a
// redirect can resend it).
const maxHTTPBody = 64 << 20

// hopHeaders are not forwarded (RFC 9110 §7.6.1), nor are the client's
// credentials and any X-Original-Principal it sent.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Authorization", auth.HeaderOriginalPrincipal}

func httpError(w http.ResponseWriter, code int, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"reason": reason})
}

// httpHandler serves /admin and /lookup (forwarded to brokers), /metrics,
// /proxy-stats and /status.html.
func (p *Proxy) httpHandler() http.Handler {
	mux := http.NewServeMux()
	metrics := p.m.handler()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		if s := p.cfg.Security; s.Enabled() && s.Config.AuthenticateMetricsEndpoint {
			if _, err := s.Authn.AuthenticateHTTP(r); err != nil {
				httpError(w, http.StatusUnauthorized, "Authentication required")
				return
			}
		}
		metrics.ServeHTTP(w, r)
	})
	mux.HandleFunc("/proxy-stats", p.serveStats)
	mux.HandleFunc("/proxy-stats/connections", p.serveStats)
	mux.HandleFunc("/status.html", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "OK") })
	mux.HandleFunc("/admin/", p.forwardHTTP)
	mux.HandleFunc("/lookup/", p.forwardHTTP)
	return mux
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

// forwardHTTP authenticates the caller, forwards the request to a broker
// (the topic's owner for topic calls) with the proxy's credentials and
// the caller's role in X-Original-Principal, follows redirects itself
// and copies the answer back.
func (p *Proxy) forwardHTTP(w http.ResponseWriter, r *http.Request) {
	var cl clientIdentity
	if s := p.cfg.Security; s.Enabled() {
		id, err := s.Authn.AuthenticateHTTP(r)
		if err != nil {
			p.log.Info("HTTP authentication failed", "remote", r.RemoteAddr, "err", err)
			w.Header().Set("WWW-Authenticate", `Bearer realm="magnetar"`)
			httpError(w, http.StatusUnauthorized, "Authentication required")
			return
		}
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
			httpError(w, http.StatusInternalServerError, "proxy credentials: "+err.Error())
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
	for _, h := range hopHeaders[:len(hopHeaders)-2] {
		w.Header().Del(h)
	}
	p.m.httpRequests.WithLabelValues(strconv.Itoa(resp.StatusCode)).Inc()
	w.WriteHeader(resp.StatusCode)
	if _, err := io.Copy(w, resp.Body); err != nil {
		p.log.Debug("HTTP answer copy", "err", fmt.Sprint(err))
	}
}
