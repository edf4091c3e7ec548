package connectors

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/functions/iopolicy"
	"github.com/magnetar-mq/magnetar/functions/sdk"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/pulsarclient"
)

// maxBody bounds one webhook request body (one message).
const maxBody = 5 << 20

// webhookLimits are the webhook server's limits: the timeouts of every
// Magnetar HTTP server (httpapi.Limits' defaults: headers, idle
// keep-alive, write, body pace), at most 1024 connections, and at most
// 64 of one client address. The webhook takes no credentials, so the
// per-address cap holds for all of an address's connections (an
// anonymous guard never trusts a connection).
var webhookLimits = httpapi.Limits{MaxConnections: 1024, MaxUnauthenticatedPerIP: 64, MaxRequestSize: maxBody}

func httpSource(ctx context.Context, in *sdk.Instance, pol *iopolicy.Policy) error {
	cfg := in.Spec.UserConfig
	addr := str(cfg, "listenAddress", iopolicy.DefaultWebhookAddress)
	path := str(cfg, "path", "/")
	if err := pol.CheckListen(addr); err != nil {
		return fmt.Errorf("http source: configs.listenAddress: %w", err)
	}
	p, err := in.Output("")
	if err != nil {
		return err
	}
	send := func(r *http.Request, body []byte) error {
		in.Received(1)
		t0 := time.Now()
		msg := &pulsarclient.ProducerMessage{Payload: body, Key: r.Header.Get("X-Message-Key"),
			Properties: map[string]string{"http-path": r.URL.Path, "content-type": r.Header.Get("Content-Type")}}
		if _, err := p.Send(r.Context(), msg); err != nil {
			in.SystemError(err)
			return err
		}
		in.Processed(1, time.Since(t0))
		return nil
	}
	srv, err := newWebhook(path, webhookLimits, in.Log, send)
	if err != nil {
		return fmt.Errorf("http source: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// What was bound, as the kernel reports it, must be allowed too.
	if err := pol.CheckListen(ln.Addr().String()); err != nil {
		ln.Close()
		return fmt.Errorf("http source: bound %s: %w", ln.Addr(), err)
	}
	bound := ln.Addr().String()
	in.Log.Info("webhook listening", "address", bound, "path", path)
	if err := in.PutState(ctx, "http-address/"+strconv.Itoa(in.ID), []byte(bound)); err != nil {
		in.SystemError(err)
	}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	return srv.Serve(ln, nil)
}

// newWebhook returns the server of a webhook at path (a path ending in
// "/" takes its whole subtree, as net/http's patterns do): the body of
// every POST or PUT, of any media type, is handed to send and answered
// 200 once send returns nil. The server is an httpapi one behind an
// anonymous guard: lim's timeouts, body pace, size and connection caps,
// and the guard's cross-site refusal of browser writes.
func newWebhook(path string, lim httpapi.Limits, log *slog.Logger, send func(*http.Request, []byte) error) (*httpapi.Server, error) {
	if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, "{}") {
		return nil, fmt.Errorf("configs.path %q: a path starting with / and without braces", path)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	serve := func(w http.ResponseWriter, r *http.Request, _ httpapi.Params) {
		body, err := io.ReadAll(r.Body)
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			httpapi.WriteError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body is over the limit of %d bytes", tooLarge.Limit))
			return
		case err != nil:
			// Cut for its pace, or the client went away.
			w.Header().Set("Connection", "close")
			httpapi.WriteError(w, http.StatusBadRequest, "Request body not read whole")
			return
		}
		if err := send(r, body); err != nil {
			// The producer's error (which may name brokers) is in the
			// instance log and its system errors.
			httpapi.WriteError(w, http.StatusServiceUnavailable, "Message not persisted; the instance log has the details")
			return
		}
		w.WriteHeader(http.StatusOK)
	}
	patterns := []string{path}
	if base, ok := strings.CutSuffix(path, "/"); ok {
		patterns = []string{base + "/{rest...}"}
		if base != "" {
			patterns = append(patterns, base)
		}
	}
	rt := httpapi.NewTable()
	for _, pat := range patterns {
		for _, m := range []string{http.MethodPost, http.MethodPut} {
			rt.Add(httpapi.Route{Method: m, Pattern: pat, Access: auth.AccessPublic, Consumes: []string{httpapi.AnyMedia},
				MaxBody: maxBody, Handler: serve})
		}
	}
	h, err := rt.Handler(httpapi.Guard{Limits: lim, Log: log, Anonymous: true})
	if err != nil {
		return nil, err
	}
	return httpapi.NewServer(h, lim, log), nil
}
