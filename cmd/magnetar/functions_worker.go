package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/functions"
	"github.com/magnetar-mq/magnetar/functions/connectors"
	"github.com/magnetar-mq/magnetar/metadata"
)

func init() {
	rootCmd.AddCommand(newFunctionsWorkerCmd(), newFunctionsInstanceCmd())
}

// newFunctionWorker builds a worker whose builtin connectors run as this
// binary's functions-instance subcommand.
func newFunctionWorker(store metadata.Store, id, dataDir string, log *slog.Logger) (*functions.Worker, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("function worker: %w", err)
	}
	cmd := []string{exe, "functions-instance"}
	var env []string
	// Under the test binary (see harness_test.go) main's arguments come
	// from MAGNETAR_MAIN_ARGS.
	if _, ok := os.LookupEnv("MAGNETAR_MAIN_ARGS"); ok {
		cmd = []string{exe}
		env = []string{"MAGNETAR_MAIN_ARGS=functions-instance"}
	}
	return functions.NewWorker(functions.Options{Metadata: store, ID: id, DataDir: dataDir,
		BuiltinCommand: cmd, BuiltinEnv: env, Logger: log.With("component", "functions")})
}

func newFunctionsInstanceCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "functions-instance",
		Short:  "Run one builtin connector instance (started by the function worker)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return connectors.Main(os.Getenv(functions.EnvBuiltin))
		},
	}
}

type functionsWorkerFlags struct {
	meta       metadataFlags
	id         string
	httpAddr   string
	advertised string
	serviceURL string
	dataDir    string
	run        runFlags
}

func newFunctionsWorkerCmd() *cobra.Command {
	var f functionsWorkerFlags
	cmd := &cobra.Command{
		Use:   "functions-worker",
		Short: "Run a function worker for a cluster (Pulsar Functions and Pulsar IO)",
		Long: `Runs a function worker that shares deployments, packages, state and
instance assignments with the other workers of the metadata store given by
--metadata-url. It serves /admin/v3/functions, /admin/v3/sources and
/admin/v3/sinks and /metrics on --http, and runs the instances assigned to
it as child processes connecting to --broker-service-url. When a worker
dies its instances move to the others.

When ready it prints one line to stdout:
  magnetar functions-worker ready http=http://HOST:PORT`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runFunctionsWorker(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	f.meta.register(cmd)
	fl.StringVar(&f.id, "worker-id", "", "worker id, unique among the workers (default HOST-PORT of --http)")
	fl.StringVar(&f.httpAddr, "http", ":6750", "REST listen address")
	fl.StringVar(&f.advertised, "advertised-host", "localhost", "host name other workers and instances use to reach this worker")
	fl.StringVar(&f.serviceURL, "broker-service-url", "pulsar://localhost:6650", "broker the instances connect to")
	fl.StringVar(&f.dataDir, "data-dir", "./functions-data", "packages, instance logs and instance directories")
	addRunFlags(fl, &f.run)
	return cmd
}

func runFunctionsWorker(ctx context.Context, f functionsWorkerFlags) error {
	log, err := newLogger(f.run.logLevel, f.run.logFormat)
	if err != nil {
		return err
	}
	ctx, stop := signalContext(ctx)
	defer stop()
	store, err := openMetadataURL(f.meta.url, f.meta.sessionTimeout, log)
	if err != nil {
		return err
	}
	defer store.Close()
	ln, err := net.Listen("tcp", f.httpAddr)
	if err != nil {
		return err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	base := fmt.Sprintf("http://%s", net.JoinHostPort(f.advertised, fmt.Sprint(port)))
	if f.id == "" {
		f.id = fmt.Sprintf("%s-%d", f.advertised, port)
	}
	if err := os.MkdirAll(f.dataDir, 0o755); err != nil {
		return err
	}
	dir, _ := filepath.Abs(f.dataDir)
	w, err := newFunctionWorker(store, f.id, dir, log)
	if err != nil {
		return err
	}
	rt := broker.NewRouter()
	w.Register(rt)
	mux := http.NewServeMux()
	mux.Handle("/metrics", metricsHandler(w))
	mux.Handle("/", rt)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http", "err", err)
		}
	}()
	if err := w.Start(ctx, f.serviceURL, base); err != nil {
		return err
	}
	fmt.Printf("magnetar functions-worker ready http=%s id=%s\n", base, f.id)
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return w.Close()
}

// metricsHandler serves the worker's function metrics in the Prometheus
// text format.
func metricsHandler(w *functions.Worker) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(w.Collector())
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
