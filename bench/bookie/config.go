package bookie

import (
	"errors"
	"io"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	bk "github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/internal/uring"
)

// Config says what to measure.
type Config struct {
	// Dir is where the bookies and the raw baseline write (one disk).
	Dir string
	// LedgerDir, if set, holds the bookies' ledger dirs (a second device).
	LedgerDir string
	// DirectIO runs the journal with O_DIRECT.
	DirectIO bool
	// ZeroFill zero-fills the journal ahead of the writer.
	ZeroFill bool
	// FlushBytes is the bookie's EntryLogFlushBytes.
	FlushBytes  int64
	Sizes       []int
	Outstanding []int
	Modes       []uring.Mode
	// Duration of each measured run, after Warmup.
	Duration, Warmup time.Duration
	// Runs per cell; results are medians. The runs of the cells of one
	// size and outstanding count are interleaved: raw, then each mode,
	// Runs times over.
	Runs int
	// NoSync runs the journal without fdatasync (and the raw baseline
	// without it too): results are labelled "not durable".
	NoSync bool
	// Raw adds the raw-disk baseline; HalfPeak adds, per size, a paced
	// cell at half the best measured rate with HalfPeakOutstanding adds
	// outstanding at most, interleaved with raw runs at that depth.
	Raw, HalfPeak       bool
	HalfPeakOutstanding int
	// GroupWait is the journal's MaxGroupWait; 0 writes a group as soon
	// as the queue drains (records still batch behind an in-flight sync).
	GroupWait time.Duration
	// CPUProfile, if set, profiles the whole run into this file.
	CPUProfile string
	// Trace, if set, writes an execution trace of the whole run here.
	Trace string
	// WriteCacheSize is the bookie's write cache (both halves).
	WriteCacheSize int64
	// CheckpointSpread is the bookie's CheckpointSpread (0: its default;
	// negative: checkpoints not paced).
	CheckpointSpread time.Duration
	// Batch, above 1, hands the bookie this many adds of one ledger per
	// AddEntries call (as its server does with the adds of one network
	// read), paced runs a batch every Batch intervals; 1 calls AddEntry
	// per add.
	Batch int
	// StageSampling traces one add in this many (bookie
	// Options.StageSampling; 0: none).
	StageSampling int
	// Window is the length of the windows of the timelines (default
	// 100 ms).
	Window time.Duration
	// Progress receives one line per finished cell (nil: none).
	Progress io.Writer
}

// EnsureDefaults fills unset fields.
func (c *Config) EnsureDefaults() {
	if c.Runs < 1 {
		c.Runs = 1
	}
	if c.Window <= 0 {
		c.Window = 100 * time.Millisecond
	}
	if c.HalfPeakOutstanding <= 0 {
		c.HalfPeakOutstanding = 4096
	}
}

// Validate reports a configuration with nothing to run.
func (c *Config) Validate() error {
	if len(c.Sizes) == 0 || len(c.Outstanding) == 0 || (len(c.Modes) == 0 && !c.Raw) {
		return errors.New("bench bookie: nothing to run")
	}
	if c.Duration <= 0 || c.Warmup < 0 || c.StageSampling < 0 {
		return errors.New("bench bookie: duration must be positive, warmup and stage sampling not negative")
	}
	return nil
}

// Result is one cell: medians over its runs.
type Result struct {
	Kind        string `json:"kind"` // "bookie", "raw", "half-peak" ("paced-raw" in PacedRaw)
	Mode        string `json:"mode"`
	Size        int    `json:"size"`
	Outstanding int    `json:"outstanding"`
	// TargetRate is the paced rate of a half-peak cell.
	TargetRate float64       `json:"target_rate,omitempty"`
	OpsPerSec  float64       `json:"ops_per_sec"`
	MBPerSec   float64       `json:"mb_per_sec"`
	P50        time.Duration `json:"p50_ns"`
	P99        time.Duration `json:"p99_ns"`
	P999       time.Duration `json:"p999_ns"`
	Max        time.Duration `json:"max_ns"`
	AllocsOp   float64       `json:"allocs_per_op"`
	// CPUPerOp is process CPU time (user+sys, all threads) per op: what
	// binds on a shared 2-core machine.
	CPUPerOp time.Duration `json:"cpu_ns_per_op"`
	Errors   int64         `json:"errors"`
	Durable  bool          `json:"durable"`
	// SchedP99 and SchedP999 are the medians of the runs' goroutine
	// scheduling latency (time runnable before running, the runtime's
	// /sched/latencies:seconds) over the measured window: the wait for
	// a core that every stage of an add can include.
	SchedP99  time.Duration `json:"sched_p99_ns,omitempty"`
	SchedP999 time.Duration `json:"sched_p999_ns,omitempty"`
	// IssueLagP99 and IssueLagMax (paced cells, medians of the runs):
	// how late the driver issued units after their scheduled times;
	// WaitFree: units (summed over the runs) that waited because all
	// the cell's outstanding adds were in the bookie.
	IssueLagP99 time.Duration `json:"issue_lag_p99_ns,omitempty"`
	IssueLagMax time.Duration `json:"issue_lag_max_ns,omitempty"`
	WaitFree    int64         `json:"wait_free,omitempty"`
	// Raw is the baseline this cell's runs were interleaved with (the
	// raw loop at the same size and outstanding count), nil for raw
	// cells and when there is none.
	Raw *Result `json:"raw,omitempty"`
	// PacedRaw (paced cells with the raw baseline) is the paced raw loop
	// interleaved with the cell: the same arrivals, group commit with
	// nothing else on the path (pacedRawRun).
	PacedRaw *Result `json:"paced_raw,omitempty"`
	// Stages are the sampled adds' stages (bookie cells with
	// StageSampling), over all runs.
	Stages []StageSummary `json:"stages,omitempty"`
	// Journal sums up the journal's groups over the measured windows of
	// all runs (bookie cells).
	Journal *JournalSummary `json:"journal,omitempty"`
	// Detail is what the report draws.
	Detail *Detail `json:"-"`
}

// StageSummary is one stage of the sampled adds: the mean, p99 and max
// of its time, and its mean over the slowest 1 % of those adds (by their
// whole latency): where the tail's time went.
type StageSummary struct {
	Stage    string        `json:"stage"`
	Mean     time.Duration `json:"mean_ns"`
	P99      time.Duration `json:"p99_ns"`
	Max      time.Duration `json:"max_ns"`
	TailMean time.Duration `json:"tail_mean_ns"`
}

// JournalSummary is what the journal's Stats say about the measured
// windows: groups written, mean records per group, and per group the mean
// time from write to sync, the mean time the committer blocked on the
// sync, and the mean time its completions ran.
type JournalSummary struct {
	Groups       uint64        `json:"groups"`
	GroupRecords float64       `json:"group_records"`
	SyncMean     time.Duration `json:"sync_mean_ns"`
	SyncWaitMean time.Duration `json:"sync_wait_mean_ns"`
	CompleteMean time.Duration `json:"complete_mean_ns"`
}

// Detail is a cell's data for the report.
type Detail struct {
	// Runs in order; Median is the index of the run with the median rate.
	Runs   []RunDetail
	Median int
	// Latency merges the runs' latencies (ns).
	Latency *hdrhistogram.Histogram
	// Stages merges the sampled adds' stage times (ns), indexed by
	// bk.AddStage, with the whole latency last.
	Stages []*hdrhistogram.Histogram
	// Raw is the detail of the baseline the cell was interleaved with.
	Raw *Detail
	// PacedRaw is the paced raw loop's detail (paced cells).
	PacedRaw *Detail
}

// RunDetail is one run's timeline.
type RunDetail struct {
	OpsPerSec float64
	Windows   []Window
	// Checkpoints that ran during the measured window, from its start.
	Checkpoints []Span
	// StageMeans, when traced, holds per window the mean time of each
	// stage of the adds traced in it, indexed by bk.AddStage.
	StageMeans [][bk.NumAddStages]time.Duration
}

// Window is one window of a run's timeline: the ops that completed in it
// and their latency percentiles.
type Window struct {
	Start         time.Duration // from the measured window's start
	Ops           int64
	P50, P99, Max time.Duration
}

// Span is a checkpoint on a timeline.
type Span struct {
	Start, Length time.Duration
	Entries       int
	Steps         [bk.NumCheckpointStages]time.Duration
}
