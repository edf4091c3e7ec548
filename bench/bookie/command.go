package bookie

// `magnetar bench bookie`: the command line of the benchmark (the binary
// only adds NewCommand to its tree).

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/bench/report"
	"github.com/magnetar-mq/magnetar/internal/uring"
)

// command is what the flags of `bench bookie` fill.
type command struct {
	cfg       Config
	modes     []string
	jsonOut   bool
	keepTemp  bool
	reportDir string
}

// NewCommand builds `magnetar bench bookie`.
func NewCommand() *cobra.Command {
	b := &command{}
	c := &cobra.Command{
		Use:   "bookie",
		Short: "Durable add throughput and latency of the bookie vs a raw write+fdatasync baseline",
		RunE:  b.run,
	}
	b.flags(c)
	return c
}

func (b *command) flags(c *cobra.Command) {
	cfg := &b.cfg
	f := c.Flags()
	f.StringVar(&cfg.Dir, "dir", "", "directory to write in (default: a new temp dir, removed after)")
	f.StringVar(&cfg.LedgerDir, "ledger-dir", "", "put the bookies' ledger dirs (entry logs, index) under this directory instead of --dir, e.g. on another device; the journal and the raw baseline stay in --dir")
	f.Int64Var(&cfg.FlushBytes, "flush-entrylog-bytes", 0, "pace entry-log writeback in steps of this many bytes (flushEntrylogBytes; 0 = off)")
	f.BoolVar(&cfg.DirectIO, "direct-io", false, "write the journal with O_DIRECT in aligned groups (journalDirectIO)")
	f.BoolVar(&cfg.ZeroFill, "zero-fill", false, "zero-fill the journal ahead of the writer (--journal-zero-fill)")
	f.IntSliceVar(&cfg.Sizes, "sizes", []int{100, 1024, 16384, 65536}, "entry sizes in bytes")
	f.IntSliceVar(&cfg.Outstanding, "outstanding", []int{1, 16, 256, 4096, 16384}, "outstanding adds")
	f.StringSliceVar(&b.modes, "modes", []string{"uring", "pwrite"}, "journal write paths: uring, pwrite, auto")
	f.DurationVar(&cfg.Duration, "duration", 2*time.Second, "measured time per run")
	f.DurationVar(&cfg.Warmup, "warmup", 300*time.Millisecond, "unmeasured warmup per run")
	f.IntVar(&cfg.Runs, "runs", 3, "runs per cell (medians reported), interleaved with the raw loop's")
	f.BoolVar(&cfg.NoSync, "nosync", false, "skip fdatasync (NOT DURABLE; labelled in the output)")
	f.BoolVar(&cfg.Raw, "raw", true, "include the raw write+fdatasync baseline")
	f.BoolVar(&cfg.HalfPeak, "half-peak", true, "per size, a paced cell at half the best rate")
	f.IntVar(&cfg.HalfPeakOutstanding, "half-peak-outstanding", 4096, "most adds outstanding in the half-peak cell (its raw baseline runs at this depth)")
	f.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the whole run")
	f.StringVar(&cfg.Trace, "trace", "", "write a Go execution trace of the whole run (go tool trace)")
	f.DurationVar(&cfg.GroupWait, "group-wait", 0, "journal max group wait (0: write as soon as the queue drains)")
	f.IntVar(&cfg.Batch, "batch", 1, "adds of one ledger per AddEntries call, a power of two up to 64 (the bookie server's path: the adds of one network read); paced runs send a batch every batch intervals; 1 = one AddEntry per add")
	f.Int64Var(&cfg.WriteCacheSize, "write-cache", 64<<20, "bookie write cache in bytes, both halves (default: the bookie's default)")
	f.DurationVar(&cfg.CheckpointSpread, "checkpoint-spread", 0, "spread each background checkpoint's entry-log writes over up to this long (0: the bookie's default, half the checkpoint interval; negative: not paced)")
	f.IntVar(&cfg.StageSampling, "stages", 64, "trace the stages of one add in this many (0: none; the report and table show where the time goes)")
	f.DurationVar(&cfg.Window, "window", 100*time.Millisecond, "window of the report's timelines")
	f.StringVar(&b.reportDir, "report", "", "write an HTML report (charts over time, percentile curves, stages, machine and settings) into this directory")
	f.BoolVar(&b.jsonOut, "json", false, "print results as JSON")
	f.BoolVar(&b.keepTemp, "keep", false, "keep the temp dir")
}

// parseModes turns the --modes names into journal write modes.
func parseModes(names []string) ([]uring.Mode, error) {
	var out []uring.Mode
	for _, m := range names {
		switch strings.ToLower(m) {
		case "uring", "io_uring":
			out = append(out, uring.ModeUring)
		case "pwrite":
			out = append(out, uring.ModePwrite)
		case "auto":
			out = append(out, uring.ModeAuto)
		default:
			return nil, fmt.Errorf("unknown mode %q (uring, pwrite, auto)", m)
		}
	}
	return out, nil
}

// workDir makes cfg.Dir (a new temp dir when none is given) and returns
// what removes it after the run (nothing with --keep or a given --dir).
func (b *command) workDir() (func(), error) {
	if b.cfg.Dir != "" {
		return func() {}, os.MkdirAll(b.cfg.Dir, 0o755)
	}
	d, err := os.MkdirTemp("", "magnetar-bench-")
	if err != nil {
		return nil, err
	}
	b.cfg.Dir = d
	if b.keepTemp {
		return func() {}, nil
	}
	return func() { os.RemoveAll(d) }, nil
}

func (b *command) run(cmd *cobra.Command, _ []string) error {
	cfg := &b.cfg
	modes, err := parseModes(b.modes)
	if err != nil {
		return err
	}
	cfg.Modes = append(cfg.Modes, modes...)
	if err := cfg.Validate(); err != nil {
		return err
	}
	cleanup, err := b.workDir()
	if err != nil {
		return err
	}
	defer cleanup()
	cfg.Progress = cmd.ErrOrStderr()
	fmt.Fprintf(cfg.Progress, "bench bookie in %s (ledger dirs in %s, journal O_DIRECT %v, zero fill %v): sizes %v, outstanding %v, modes %v, %v per run (+%v warmup), %d runs each (medians, interleaved with the raw loop), group wait %v, load average %s\n",
		cfg.Dir, cmp.Or(cfg.LedgerDir, cfg.Dir), cfg.DirectIO, cfg.ZeroFill, cfg.Sizes, cfg.Outstanding, b.modes, cfg.Duration, cfg.Warmup, cfg.Runs, cfg.GroupWait, report.LoadAverage())
	if cfg.Batch > 1 {
		fmt.Fprintf(cfg.Progress, "adds in AddEntries batches of up to %d per ledger\n", cfg.Batch)
	}
	machine := report.Probe(cfg.Dir)
	started := time.Now()
	rs, err := Run(cmd.Context(), *cfg)
	if b.reportDir != "" && len(rs) > 0 {
		rep := Report(*cfg, rs, machine, strings.Join(os.Args, " "), started, time.Now())
		p, werr := rep.Write(b.reportDir)
		if werr != nil {
			return werr
		}
		fmt.Fprintln(cfg.Progress, "report:", p)
	}
	if b.jsonOut {
		if jerr := json.NewEncoder(cmd.OutOrStdout()).Encode(rs); jerr != nil {
			return jerr
		}
	} else {
		PrintTable(cmd.OutOrStdout(), rs)
	}
	return err
}
