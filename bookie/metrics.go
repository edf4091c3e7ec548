package bookie

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-mq/magnetar/journal"
)

// metrics is the bookie's instrumentation: atomics and lock-free
// histograms, read at scrape time by Stats and Collector.
type metrics struct {
	addLatency        *journal.Histogram // AddEntry call to durable callback, ns
	checkpointLatency *journal.Histogram // successful checkpoints, ns
	// checkpointStages times the steps of successful checkpoints, ns.
	checkpointStages [NumCheckpointStages]*journal.Histogram
	readCacheHits    atomic.Uint64
	readCacheMisses  atomic.Uint64
	writeCacheHits   atomic.Uint64
	writeCacheMisses atomic.Uint64
	entryLogReads    atomic.Uint64 // entries read from the entry log
	// durableAt returns the journal.Nanotime at which the record being
	// completed became durable: the journal's SyncedAt (read once per
	// group, not per add), or the clock for other wals.
	durableAt func() int64
}

// init sets up m for a bookie over j.
func (m *metrics) init(j wal) {
	m.addLatency = journal.NewHistogram(journal.LatencyBounds)
	m.checkpointLatency = journal.NewHistogram(journal.LatencyBounds)
	for i := range m.checkpointStages {
		m.checkpointStages[i] = journal.NewHistogram(journal.LatencyBounds)
	}
	m.durableAt = journal.Nanotime
	if s, ok := j.(interface{ SyncedAt() int64 }); ok {
		m.durableAt = s.SyncedAt
	}
}

// Stats are the bookie's cumulative figures since Open, for tools and
// tests; Collector exports the same on Prometheus.
type Stats struct {
	// Journal is the journal's (zero when the bookie runs on another wal).
	Journal journal.Stats
	// AddLatency is, per successful add, the time from the AddEntry call to
	// its durable callback, in nanoseconds.
	AddLatency HistogramSnapshot
	// Reads of ReadEntry: the write cache is looked up first, the read
	// cache on a write-cache miss.
	WriteCacheHits, WriteCacheMisses uint64
	ReadCacheHits, ReadCacheMisses   uint64
	// EntryLogReads counts entries read from the entry log (read misses,
	// read-ahead, LedgerStats).
	EntryLogReads uint64
	// Checkpoints counts successful checkpoints, CheckpointLatency their
	// duration in nanoseconds.
	Checkpoints       int64
	CheckpointLatency HistogramSnapshot
	// CheckpointStages times the steps of those checkpoints, indexed by
	// CheckpointStage.
	CheckpointStages [NumCheckpointStages]HistogramSnapshot
	// AddStages holds the sampled adds' stages (Options.StageSampling;
	// nil when off).
	AddStages *AddStageStats
	GCRuns    int64
	// ReadOnly is true while adds are refused; ReadOnlyReasons names each
	// cause ("disk full", "journal failed", "corruption", "ledger storage
	// failed").
	ReadOnly        bool
	ReadOnlyReasons []string
}

// HistogramSnapshot is journal.HistogramSnapshot (bucket counts).
type HistogramSnapshot = journal.HistogramSnapshot

// Stats returns the bookie's figures. Safe at any time, also after Close.
func (b *Bookie) Stats() Stats {
	s := Stats{
		AddLatency:        b.m.addLatency.Snapshot(),
		WriteCacheHits:    b.m.writeCacheHits.Load(),
		WriteCacheMisses:  b.m.writeCacheMisses.Load(),
		ReadCacheHits:     b.m.readCacheHits.Load(),
		ReadCacheMisses:   b.m.readCacheMisses.Load(),
		EntryLogReads:     b.m.entryLogReads.Load(),
		Checkpoints:       b.stats.checkpoints.Load(),
		CheckpointLatency: b.m.checkpointLatency.Snapshot(),
		GCRuns:            b.stats.gcRuns.Load(),
		AddStages:         b.tracer.stats(),
	}
	for i, h := range b.m.checkpointStages {
		s.CheckpointStages[i] = h.Snapshot()
	}
	if js, ok := b.j.(interface{ Stats() journal.Stats }); ok {
		s.Journal = js.Stats()
	}
	r := b.ro.reasons()
	s.ReadOnly = r != 0
	for x := roDiskFull; x <= roStorage; x <<= 1 {
		if r&x != 0 {
			s.ReadOnlyReasons = append(s.ReadOnlyReasons, x.String())
		}
	}
	return s
}

// Metric names, in BookKeeper's spirit. bookie_read_only itself is not
// exported here: the broker's /metrics already derives it (with a bookie
// label) from IsReadOnly, and one family must not come from two places.
var (
	descJournalSync     = prometheus.NewDesc("bookie_journal_sync_latency_seconds", "Journal group write+fdatasync latency.", nil, nil)
	descGroupEntries    = prometheus.NewDesc("bookie_journal_group_entries", "Journal group-commit size in records.", nil, nil)
	descGroupBytes      = prometheus.NewDesc("bookie_journal_group_bytes", "Journal group-commit size in bytes.", nil, nil)
	descJournalGroups   = prometheus.NewDesc("bookie_journal_groups_total", "Journal groups made durable.", nil, nil)
	descJournalEntries  = prometheus.NewDesc("bookie_journal_entries_total", "Journal records made durable.", nil, nil)
	descJournalBytes    = prometheus.NewDesc("bookie_journal_bytes_total", "Journal bytes made durable.", nil, nil)
	descZeroFilled      = prometheus.NewDesc("bookie_journal_zero_filled_groups_total", "Journal groups written wholly over zeros the zero filler had synced (--journal-zero-fill).", nil, nil)
	descZeroFillBytes   = prometheus.NewDesc("bookie_journal_zero_fill_bytes_total", "Zeros written ahead of the journal writer (--journal-zero-fill).", nil, nil)
	descAddLatency      = prometheus.NewDesc("bookie_add_entry_latency_seconds", "Add latency, AddEntry call to durable callback.", nil, nil)
	descRCHits          = prometheus.NewDesc("bookie_read_cache_hits_total", "Reads served by the read cache.", nil, nil)
	descRCMisses        = prometheus.NewDesc("bookie_read_cache_misses_total", "Reads that missed the read cache.", nil, nil)
	descWCHits          = prometheus.NewDesc("bookie_write_cache_hits_total", "Reads served by the write cache.", nil, nil)
	descWCMisses        = prometheus.NewDesc("bookie_write_cache_misses_total", "Reads that missed the write cache.", nil, nil)
	descEntryLogReads   = prometheus.NewDesc("bookie_read_entry_log_entries_total", "Entries read from the entry log.", nil, nil)
	descCheckpoint      = prometheus.NewDesc("bookie_checkpoint_latency_seconds", "Successful checkpoint duration.", nil, nil)
	descGCRuns          = prometheus.NewDesc("bookie_gc_runs_total", "Garbage-collection passes.", nil, nil)
	descReadOnlyReason  = prometheus.NewDesc("bookie_read_only_reason", "1 while this reason keeps the bookie read-only.", []string{"reason"}, nil)
	descSyncWait        = prometheus.NewDesc("bookie_journal_sync_wait_seconds", "Time the journal committer blocked waiting for a group's write+fdatasync.", nil, nil)
	descComplete        = prometheus.NewDesc("bookie_journal_complete_latency_seconds", "Time from a group's sync to its last completion (callback fan-out).", nil, nil)
	descCkptStage       = prometheus.NewDesc("bookie_checkpoint_stage_latency_seconds", "Duration of each step of successful checkpoints.", []string{"stage"}, nil)
	descAddStage        = prometheus.NewDesc("bookie_add_stage_latency_seconds", "Time sampled adds spent in each stage (StageSampling; stages add up to stage=\"total\").", []string{"stage"}, nil)
	bookieMetricDescs   = []*prometheus.Desc{descJournalSync, descGroupEntries, descGroupBytes, descJournalGroups, descJournalEntries, descJournalBytes, descZeroFilled, descZeroFillBytes, descAddLatency, descRCHits, descRCMisses, descWCHits, descWCMisses, descEntryLogReads, descCheckpoint, descGCRuns, descReadOnlyReason, descSyncWait, descComplete, descCkptStage, descAddStage}
	readOnlyReasonNames = func() []string {
		var n []string
		for x := roDiskFull; x <= roStorage; x <<= 1 {
			n = append(n, strings.ReplaceAll(x.String(), " ", "_"))
		}
		return n
	}()
)

// collector exports a bookie's Stats.
type collector struct{ b *Bookie }

// Collector returns a Prometheus collector of the bookie's metrics
// (constant descriptors; values read at scrape time). Register it on any
// registry; it stays valid after Close.
func (b *Bookie) Collector() prometheus.Collector { return collector{b} }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range bookieMetricDescs {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	s := c.b.Stats()
	sec := 1 / float64(time.Second)
	hist := func(d *prometheus.Desc, h HistogramSnapshot, scale float64) {
		ch <- prometheus.MustNewConstHistogram(d, h.Count, float64(h.Sum)*scale, h.Cumulative(scale))
	}
	count := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	js := s.Journal
	if js.SyncLatency.Counts != nil {
		hist(descJournalSync, js.SyncLatency, sec)
		hist(descSyncWait, js.SyncWait, sec)
		hist(descComplete, js.CompleteLatency, sec)
		hist(descGroupEntries, js.GroupEntries, 1)
		hist(descGroupBytes, js.GroupBytes, 1)
		count(descJournalGroups, js.Groups)
		count(descJournalEntries, js.Entries)
		count(descJournalBytes, js.Bytes)
		count(descZeroFilled, js.ZeroFilledGroups)
		count(descZeroFillBytes, js.ZeroFillBytes)
	}
	hist(descAddLatency, s.AddLatency, sec)
	hist(descCheckpoint, s.CheckpointLatency, sec)
	for i, h := range s.CheckpointStages {
		ch <- prometheus.MustNewConstHistogram(descCkptStage, h.Count, float64(h.Sum)*sec, h.Cumulative(sec), CheckpointStage(i).String())
	}
	if a := s.AddStages; a != nil {
		for i, h := range a.Stages {
			ch <- prometheus.MustNewConstHistogram(descAddStage, h.Count, float64(h.Sum)*sec, h.Cumulative(sec), AddStage(i).String())
		}
		ch <- prometheus.MustNewConstHistogram(descAddStage, a.Total.Count, float64(a.Total.Sum)*sec, a.Total.Cumulative(sec), "total")
	}
	count(descRCHits, s.ReadCacheHits)
	count(descRCMisses, s.ReadCacheMisses)
	count(descWCHits, s.WriteCacheHits)
	count(descWCMisses, s.WriteCacheMisses)
	count(descEntryLogReads, s.EntryLogReads)
	count(descGCRuns, uint64(s.GCRuns))
	r := c.b.ro.reasons()
	for i, x := 0, roDiskFull; x <= roStorage; i, x = i+1, x<<1 {
		v := 0.0
		if r&x != 0 {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descReadOnlyReason, prometheus.GaugeValue, v, readOnlyReasonNames[i])
	}
}
