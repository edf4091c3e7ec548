package journal

import (
	"sync/atomic"
	"time"
)

// Histogram counts int64 observations (durations in nanoseconds, sizes)
// into fixed buckets with atomics: Observe takes no lock and allocates
// nothing, so it can sit on hot paths. The zero value is unusable; build
// one with NewHistogram.
type Histogram struct {
	bounds []int64         // upper bounds (inclusive), ascending
	counts []atomic.Uint64 // len(bounds)+1; the last is the overflow bucket
	sum    atomic.Int64
}

// NewHistogram returns a histogram with the given ascending inclusive
// upper bounds (an implicit +Inf bucket follows the last).
func NewHistogram(bounds []int64) *Histogram {
	return &Histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
}

// Observe adds one observation of v.
func (h *Histogram) Observe(v int64) {
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(v)
}

// ObserveN adds n observations of v.
func (h *Histogram) ObserveN(v int64, n uint64) {
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i].Add(n)
	h.sum.Add(v * int64(n))
}

// ObserveDuration adds one observation of d in nanoseconds.
func (h *Histogram) ObserveDuration(d time.Duration) { h.Observe(int64(d)) }

// Snapshot reads the histogram. Buckets are not read atomically together,
// so under concurrent Observe the figures may be off by the observations
// in flight; Count is the sum of the buckets read.
func (h *Histogram) Snapshot() HistogramSnapshot {
	s := HistogramSnapshot{Bounds: h.bounds, Counts: make([]uint64, len(h.counts)), Sum: h.sum.Load()}
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
		s.Count += s.Counts[i]
	}
	return s
}

// HistogramSnapshot is a histogram's state at one moment.
type HistogramSnapshot struct {
	// Bounds are the inclusive upper bounds; Counts has one more element,
	// the observations above the last bound. Counts are per bucket, not
	// cumulative.
	Bounds []int64
	Counts []uint64
	Count  uint64
	Sum    int64
}

// Cumulative returns, per bound, the observations <= it (Prometheus
// buckets), scaling bounds by scale (1e-9 turns nanoseconds into seconds).
func (s HistogramSnapshot) Cumulative(scale float64) map[float64]uint64 {
	m := make(map[float64]uint64, len(s.Bounds))
	var c uint64
	for i, b := range s.Bounds {
		c += s.Counts[i]
		m[float64(b)*scale] = c
	}
	return m
}

// LatencyBounds are the default latency bucket bounds, 50 µs to 10 s.
var LatencyBounds = []int64{
	int64(50 * time.Microsecond), int64(100 * time.Microsecond), int64(250 * time.Microsecond),
	int64(500 * time.Microsecond), int64(time.Millisecond), int64(2500 * time.Microsecond),
	int64(5 * time.Millisecond), int64(10 * time.Millisecond), int64(25 * time.Millisecond),
	int64(50 * time.Millisecond), int64(100 * time.Millisecond), int64(250 * time.Millisecond),
	int64(500 * time.Millisecond), int64(time.Second), int64(2500 * time.Millisecond),
	int64(10 * time.Second),
}

// groupEntryBounds and groupByteBounds bucket group sizes.
var (
	groupEntryBounds = []int64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
	groupByteBounds  = []int64{1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20}
)

// Stats are the journal's cumulative figures since Open.
type Stats struct {
	// Groups, Entries and Bytes count the groups written and synced
	// successfully, the records in them and their encoded bytes (headers
	// included).
	Groups, Entries, Bytes uint64
	// SyncLatency is, per group, the time from handing it to the writer
	// (write + fdatasync submitted) to the sync returning, in nanoseconds.
	SyncLatency HistogramSnapshot
	// SyncWait is, per group, how long the committer blocked waiting for
	// its write and sync (the part of SyncLatency left once the previous
	// group's completions ran): near zero when the disk finished before
	// the committer looked, that is when completions, not the disk, pace
	// the pipeline.
	SyncWait HistogramSnapshot
	// CompleteLatency is, per group, the time from its sync returning to
	// its last completion having run (the callback fan-out).
	CompleteLatency HistogramSnapshot
	// GroupEntries and GroupBytes are the group sizes in records and bytes.
	GroupEntries, GroupBytes HistogramSnapshot
	// ZeroFilledGroups counts the groups written wholly over zeros the
	// filler had synced (ZeroFill), and ZeroFillBytes the zeros it wrote.
	ZeroFilledGroups, ZeroFillBytes uint64
}

// commitStats is the committer's instrumentation, updated once per group
// by the committer goroutine.
type commitStats struct {
	groups, entries, bytes atomic.Uint64
	syncedAt               atomic.Int64 // Nanotime when the last group's sync returned
	syncLatency            *Histogram
	syncWait               *Histogram
	completeLatency        *Histogram
	groupEntries           *Histogram
	groupBytes             *Histogram
}

func newCommitStats() commitStats {
	return commitStats{
		syncLatency:     NewHistogram(LatencyBounds),
		syncWait:        NewHistogram(LatencyBounds),
		completeLatency: NewHistogram(LatencyBounds),
		groupEntries:    NewHistogram(groupEntryBounds),
		groupBytes:      NewHistogram(groupByteBounds),
	}
}

// synced records one group made durable.
func (s *commitStats) synced(g *group, took time.Duration) {
	s.groups.Add(1)
	s.entries.Add(uint64(g.n))
	s.bytes.Add(uint64(g.size))
	s.syncLatency.ObserveDuration(took)
	s.groupEntries.Observe(int64(g.n))
	s.groupBytes.Observe(int64(g.size))
}

// epoch is the origin of Nanotime.
var epoch = time.Now()

// Nanotime is a monotonic clock in nanoseconds (one clock read, cheaper
// than time.Now, which also reads the wall clock).
func Nanotime() int64 { return int64(time.Since(epoch)) }

// SyncedAt returns the Nanotime at which the sync of the newest durable
// group returned. Called from a Completion, it is the time the record
// being completed became durable, without reading the clock per record.
func (j *Journal) SyncedAt() int64 { return j.c.stats.syncedAt.Load() }

// GroupTimes are the moments, in Nanotime, one group went through the
// committer: the stages of every record in it after it joined the group.
type GroupTimes struct {
	// Written is when the committer handed the group to the writer (its
	// records stopped gathering), Submitted when the writer's Submit
	// returned (pwrite: after the write and the fdatasync; io_uring: once
	// both were queued), WaitFrom when the committer began waiting for
	// the write and sync (after the previous group's completions ran),
	// Synced when that wait returned.
	Written, Submitted, WaitFrom, Synced int64
	// PrevSynced is when the wait for the group written before this one
	// returned (0 for a journal's first group): a record that joined the
	// group before it waited for that sync; one that joined after, for
	// the committer to get round to the group.
	PrevSynced int64
}

// CompletingGroup returns the GroupTimes of the group whose completions
// are running (zero for a Sync's or a refusal's). Call it only from a
// Completion's AppendDone: the committer goroutine owns the group, and a
// call from another goroutine races with it.
func (j *Journal) CompletingGroup() GroupTimes {
	g := j.c.completing
	if g == nil {
		return GroupTimes{}
	}
	return GroupTimes{Written: g.written, Submitted: g.submitted, WaitFrom: g.waitFrom, Synced: g.synced, PrevSynced: g.prevSynced}
}

// Stats returns the journal's figures (see Stats). Safe at any time,
// including after Close.
func (j *Journal) Stats() Stats {
	s := &j.c.stats
	st := Stats{
		Groups: s.groups.Load(), Entries: s.entries.Load(), Bytes: s.bytes.Load(),
		SyncLatency:     s.syncLatency.Snapshot(),
		SyncWait:        s.syncWait.Snapshot(),
		CompleteLatency: s.completeLatency.Snapshot(),
		GroupEntries:    s.groupEntries.Snapshot(),
		GroupBytes:      s.groupBytes.Snapshot(),
	}
	if z := j.zero; z != nil {
		st.ZeroFilledGroups, st.ZeroFillBytes = z.filledGroups.Load(), z.zeroBytes.Load()
	}
	return st
}
