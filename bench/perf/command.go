package perf

// `magnetar perf produce|consume`: the command line of the load
// generator (the binary only adds NewCommand to its tree).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/magnetar-mq/magnetar/bench/report"
)

// perfOutput holds the flags every perf subcommand shares.
type perfOutput struct {
	json       bool
	quiet      bool
	cpuProfile string
	reportDir  string
}

// NewCommand builds `magnetar perf` with produce and consume.
func NewCommand() *cobra.Command {
	perfCmd := &cobra.Command{
		Use:   "perf",
		Short: "Load generator over the Pulsar protocol (like pulsar-perf)",
	}
	perfCmd.AddCommand(NewProduceCommand(), NewConsumeCommand())
	return perfCmd
}

func addCommonFlags(fl *pflag.FlagSet, c *Common, out *perfOutput) {
	fl.StringVar(&c.ServiceURL, "service-url", "pulsar://127.0.0.1:6650", "Pulsar service URL")
	fl.StringSliceVar(&c.Topics, "topic", []string{"perf-topic"}, "topic(s), comma-separated or repeated")
	fl.IntVar(&c.Partitions, "partitions", 0, "create each topic as partitioned with this many partitions (needs --admin-url)")
	fl.StringVar(&c.AdminURL, "admin-url", "", "admin HTTP URL, e.g. http://127.0.0.1:8080")
	fl.Int64VarP(&c.NumMessages, "num-messages", "m", 0, "stop after this many messages in total (0 = no limit)")
	fl.DurationVar(&c.Duration, "test-duration", 0, "stop after this long (0 = no limit)")
	fl.DurationVar(&c.Window, "window", 0, "also report latency percentiles per window of this length (JSON: windows; 0 = none)")
	fl.StringVar(&c.AuthPlugin, "auth-plugin", "", "authentication plugin: token, tls, basic (or Pulsar's class names)")
	fl.StringVar(&c.AuthParams, "auth-params", "", "plugin parameters, e.g. token:<jwt>, file:///path, tlsCertFile:..,tlsKeyFile:..")
	fl.StringVar(&c.TLSTrustCertPath, "tls-trust-cert-path", "", "CA bundle that verifies a pulsar+ssl:// broker")
	fl.BoolVar(&c.TLSAllowInsecure, "tls-allow-insecure", false, "do not verify the broker certificate (testing only)")
	fl.BoolVar(&out.json, "json", false, "print the final summary as JSON on stdout")
	fl.BoolVarP(&out.quiet, "quiet", "q", false, "no progress line on stderr")
	fl.StringVar(&out.reportDir, "report", "", "write an HTML report (throughput and latency over time, the latency distribution, machine and settings) into this directory")
	fl.StringVar(&out.cpuProfile, "cpuprofile", "", "write a CPU profile of this (client) process to FILE")
	fl.MarkHidden("cpuprofile")
}

// NewProduceCommand builds `magnetar perf produce`.
func NewProduceCommand() *cobra.Command {
	var cfg ProduceConfig
	var out perfOutput
	var raw bool
	cmd := &cobra.Command{
		Use:   "produce",
		Short: "Publish messages as fast as possible or at a fixed rate and report throughput and publish latency",
		Long: `Publish messages as fast as possible or at a fixed rate and report throughput and publish latency.

By default the producers are Magnetar's protocol client (pulsarclient). With
--raw they are a lean single-purpose protocol client (bench/perf doc): every SEND a freshly built,
checksummed batch, pipelined up to --max-pending messages; no compression,
no reconnect, one connection per producer. --memory-limit and --compression
do not apply to --raw.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPerf(cmd, &cfg.Common, out, func(ctx context.Context) (Summary, error) {
				if raw {
					return RawProduce(ctx, cfg)
				}
				return Produce(ctx, cfg)
			})
		},
	}
	fl := cmd.Flags()
	addCommonFlags(fl, &cfg.Common, &out)
	fl.BoolVar(&raw, "raw", false, "use the lean raw protocol client instead of the full one (pulsarclient)")
	fl.Float64VarP(&cfg.Rate, "rate", "r", 0, "total messages per second over all producers (0 = max)")
	fl.IntVarP(&cfg.Size, "size", "s", 1024, "message size in bytes")
	fl.IntVarP(&cfg.NumProducers, "num-producers", "n", 1, "producers per topic")
	fl.IntVar(&cfg.MaxPending, "max-pending", 1000, "max pending messages per producer")
	fl.Int64Var(&cfg.MemoryLimit, "memory-limit", 0, "client memory limit for pending messages in bytes (0 = client default, 64 MiB)")
	fl.BoolVar(&cfg.DisableBatching, "disable-batching", false, "send each message on its own")
	fl.UintVar(&cfg.BatchMaxMessages, "batch-max-messages", 1000, "max messages per batch")
	fl.UintVar(&cfg.BatchMaxBytes, "batch-max-bytes", 128<<10, "max bytes per batch")
	fl.DurationVar(&cfg.BatchDelay, "batch-delay", 1e6, "max time a batch waits before it is sent")
	fl.StringVar(&cfg.Compression, "compression", "none", "compression: none, lz4, zlib, zstd, snappy")
	fl.BoolVar(&cfg.PayloadTimestamp, "payload-timestamp", false, "write each message's send time into its first 8 payload bytes (for consume --payload-timestamp)")
	return cmd
}

// NewConsumeCommand builds `magnetar perf consume`.
func NewConsumeCommand() *cobra.Command {
	var cfg ConsumeConfig
	var out perfOutput
	var raw bool
	cmd := &cobra.Command{
		Use:   "consume",
		Short: "Consume and ack messages and report throughput and end-to-end latency",
		Long: `Consume and ack messages and report throughput and end-to-end latency.

By default the consumers are Magnetar's protocol client (pulsarclient). With
--raw they are a lean single-purpose protocol client (bench/perf doc): every entry's checksum verified and
every message of a batch walked, permits refilled at half the receiver queue,
acks per entry; no decompression, no reconnect, one connection per consumer.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPerf(cmd, &cfg.Common, out, func(ctx context.Context) (Summary, error) {
				if raw {
					return RawConsume(ctx, cfg, nil)
				}
				return Consume(ctx, cfg, nil)
			})
		},
	}
	fl := cmd.Flags()
	addCommonFlags(fl, &cfg.Common, &out)
	fl.BoolVar(&raw, "raw", false, "use the lean raw protocol client instead of the full one (pulsarclient)")
	fl.StringVar(&cfg.AckMode, "ack-mode", "", "individual, cumulative or none; default: individual, or with --raw cumulative on exclusive/failover and individual on shared/key_shared subscriptions (cumulative without --raw: every 100th message of each partition and the last)")
	fl.IntVarP(&cfg.NumConsumers, "num-consumers", "n", 1, "consumers per topic")
	fl.StringVar(&cfg.Subscription, "subscription-name", "perf-sub", "subscription name")
	fl.StringVar(&cfg.SubscriptionType, "subscription-type", "exclusive", "exclusive, shared, failover or key_shared")
	fl.StringVar(&cfg.Position, "subscription-position", "latest", "initial position of a new subscription: latest or earliest (catch-up)")
	fl.IntVar(&cfg.ReceiverQueueSize, "receiver-queue-size", 1000, "client receiver queue size per consumer")
	fl.DurationVar(&cfg.IdleTimeout, "idle-timeout", 0, "stop once no message arrived for this long after the first (0 = never)")
	fl.BoolVar(&cfg.PayloadTimestamp, "payload-timestamp", false, "end-to-end latency from the send time produce --payload-timestamp wrote into the payload (µs) instead of the publish time (ms)")
	return cmd
}

// runPerf wires signals, progress output, the optional client CPU profile
// and the summary printing around one run.
func runPerf(cmd *cobra.Command, c *Common, out perfOutput, run func(context.Context) (Summary, error)) error {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if !out.quiet {
		c.Progress = cmd.ErrOrStderr()
	}
	if out.cpuProfile != "" {
		f, err := os.Create(out.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	machine, started := report.Probe(""), time.Now()
	c.Timeline = c.Timeline || out.reportDir != ""
	sum, err := run(ctx)
	if err != nil {
		return err
	}
	if out.reportDir != "" {
		rep := Report(sum, perfSettings(cmd), machine, redactedCommand(os.Args), started, time.Now())
		p, err := rep.Write(out.reportDir)
		if err != nil {
			return err
		}
		fmt.Fprintln(cmd.ErrOrStderr(), "report:", p)
	}
	return printSummary(cmd.OutOrStdout(), cmd.ErrOrStderr(), sum, out.json)
}

// redactedCommand joins args with the value of --auth-params (a token or
// key file) left out.
func redactedCommand(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		switch {
		case i > 0 && args[i-1] == "--auth-params":
			a = "(not shown)"
		case strings.HasPrefix(a, "--auth-params="):
			a = "--auth-params=(not shown)"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// perfSettings lists the command's flags for a report; the values of
// credentials (--auth-params) are not written.
func perfSettings(cmd *cobra.Command) []report.KV {
	var kv []report.KV
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		switch f.Name {
		case "help", "report", "cpuprofile", "json", "quiet":
			return
		}
		v := f.Value.String()
		if f.Name == "auth-params" && v != "" {
			v = "(set, not shown)"
		}
		if !f.Changed {
			v += " (default)"
		}
		kv = append(kv, report.KV{Key: "--" + f.Name, Value: v})
	})
	return kv
}

func printSummary(stdout, stderr io.Writer, sum Summary, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(stdout)
		return enc.Encode(sum)
	}
	_, err := fmt.Fprintln(stdout, sum.String())
	return err
}
