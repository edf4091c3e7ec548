package connectors

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/magnetar-mq/magnetar/functions/sdk"
	"github.com/magnetar-mq/magnetar/pulsarclient"
)

const maxBody = 5 << 20

func httpSource(ctx context.Context, in *sdk.Instance) error {
	cfg := in.Spec.UserConfig
	addr := str(cfg, "listenAddress", "127.0.0.1:0")
	path := str(cfg, "path", "/")
	p, err := in.Output("")
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost && r.Method != http.MethodPut {
			http.Error(w, "POST a message body", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			http.Error(w, "body: "+err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		in.Received(1)
		t0 := time.Now()
		msg := &pulsarclient.ProducerMessage{Payload: body, Key: r.Header.Get("X-Message-Key"),
			Properties: map[string]string{"http-path": r.URL.Path, "content-type": r.Header.Get("Content-Type")}}
		if _, err := p.Send(r.Context(), msg); err != nil {
			in.SystemError(err)
			http.Error(w, "not persisted: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		in.Processed(1, time.Since(t0))
		w.WriteHeader(http.StatusOK)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	bound := ln.Addr().String()
	in.Log.Info("webhook listening", "address", bound, "path", path)
	if err := in.PutState(ctx, "http-address/"+strconv.Itoa(in.ID), []byte(bound)); err != nil {
		in.SystemError(err)
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
