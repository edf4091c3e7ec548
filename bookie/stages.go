package bookie

import (
	"sync/atomic"

	"github.com/magnetar-mq/magnetar/journal"
)

// AddStage is one stage of a durable add, in the order an add goes
// through them; an add's stages add up to its whole latency, from the
// AddEntry (AddEntries) call to its callback. See doc.go, "Stage tracing".
type AddStage int

const (
	// StageCache runs from the call to the entry being in the write
	// cache: the checks, the ledger's lock, the payload CRC, the copy
	// into the cache, and any wait for cache space.
	StageCache AddStage = iota
	// StageQueue runs to the journal record being in a group: the
	// journal's queue lock, and any wait for queue space
	// (MaxQueuedBytes).
	StageQueue
	// StageBehind is the part of the wait for the group to be written
	// spent behind the group in flight when the record joined (the
	// pipeline: a group is written only after the one before it synced).
	StageBehind
	// StageGroup is the rest of that wait: the committer waking up and
	// taking the group (formation), after the sync it waited behind.
	StageGroup
	// StageWrite is the writer's Submit of the group (io_uring: queueing
	// the write and its fdatasync; pwrite: the write and the fdatasync).
	StageWrite
	// StageSync runs from Submit to the committer seeing the write and
	// fdatasync done. It includes the previous group's completions when
	// they took longer than the disk (the committer waits after running
	// them; journal Stats.SyncWait tells the two apart).
	StageSync
	// StageComplete runs from then to this add's callback: the callbacks
	// of the records before it in its group (fan-out).
	StageComplete
	// NumAddStages counts the stages.
	NumAddStages
)

var addStageNames = [NumAddStages]string{"cache", "queue", "behind", "group", "write", "sync", "complete"}

// String returns the stage's short name ("cache", "queue", "behind",
// "group", "write", "sync", "complete").
func (s AddStage) String() string {
	if s >= 0 && s < NumAddStages {
		return addStageNames[s]
	}
	return "stage?"
}

// AddStages is the time one sampled add spent in each stage.
type AddStages struct {
	// Start is the journal.Nanotime of the call.
	Start int64
	// D holds the nanoseconds spent in each stage, indexed by AddStage.
	D [NumAddStages]int64
}

// Total returns the whole latency: the sum of the stages.
func (s AddStages) Total() int64 {
	var t int64
	for _, d := range s.D {
		t += d
	}
	return t
}

// CheckpointStage is one step of a checkpoint (checkpointLocked).
type CheckpointStage int

const (
	// CkptAppend appends the frozen write-cache half to the entry log.
	CkptAppend CheckpointStage = iota
	// CkptLogSync flushes and fdatasyncs the entry log.
	CkptLogSync
	// CkptIndex sets the index locations of the frozen half.
	CkptIndex
	// CkptIndexFlush makes the index durable.
	CkptIndexFlush
	// CkptJournal waits for the journal mark and trims the journal.
	CkptJournal
	// NumCheckpointStages counts the steps.
	NumCheckpointStages
)

var ckptStageNames = [NumCheckpointStages]string{"entrylog-append", "entrylog-sync", "index-put", "index-flush", "journal"}

// String returns the step's short name.
func (s CheckpointStage) String() string {
	if s >= 0 && s < NumCheckpointStages {
		return ckptStageNames[s]
	}
	return "step?"
}

// CheckpointStages is the timing of one checkpoint that flushed a
// write-cache half or index metadata.
type CheckpointStages struct {
	// Start is the journal.Nanotime at which it began.
	Start int64
	// Entries and Bytes are what it flushed from the write cache.
	Entries int
	Bytes   int64
	// D holds the nanoseconds of each step; Total those of the whole
	// (steps plus what lies between them).
	D     [NumCheckpointStages]int64
	Total int64
	// Paced is the part of D[CkptAppend] the pacer slept to spread the
	// appends over Options.CheckpointSpread (0: not paced).
	Paced int64
	// Err is the failure, if the checkpoint failed.
	Err error
}

// stageTracer samples adds' stages (Options.StageSampling).
type stageTracer struct {
	every uint64
	n     atomic.Uint64 // adds seen
	hist  [NumAddStages]*journal.Histogram
	total *journal.Histogram
	hook  func(AddStages)
}

func newStageTracer(every int, hook func(AddStages)) *stageTracer {
	t := &stageTracer{every: uint64(every), total: journal.NewHistogram(journal.LatencyBounds), hook: hook}
	for i := range t.hist {
		t.hist[i] = journal.NewHistogram(journal.LatencyBounds)
	}
	return t
}

// sample counts k adds and reports whether one of them is to be traced.
func (t *stageTracer) sample(k int) bool {
	v := t.n.Add(uint64(k))
	return v/t.every != (v-uint64(k))/t.every
}

// stageStamps are the times an add's owner takes for a traced add.
type stageStamps struct {
	start, cached int64
	appended      int64 // written by the journal (journal.Record.Appended)
}

// record finishes a traced add at now, in its completion, with the
// times of its group (journal.Journal.CompletingGroup).
func (t *stageTracer) record(st *stageStamps, g journal.GroupTimes, now int64) {
	s := AddStages{Start: st.start}
	s.D[StageCache] = st.cached - st.start
	s.D[StageQueue] = st.appended - st.cached
	wait := g.Written - st.appended
	if g.PrevSynced > st.appended {
		s.D[StageBehind] = min(g.PrevSynced, g.Written) - st.appended
	}
	s.D[StageGroup] = wait - s.D[StageBehind]
	s.D[StageWrite] = g.Submitted - g.Written
	s.D[StageSync] = g.Synced - g.Submitted
	s.D[StageComplete] = now - g.Synced
	for i, d := range s.D {
		t.hist[i].Observe(d)
	}
	t.total.Observe(s.Total())
	if t.hook != nil {
		t.hook(s)
	}
}

// groupTimer is the wal's view of the group being completed
// (journal.Journal.CompletingGroup); wals without it are not traced.
type groupTimer interface {
	CompletingGroup() journal.GroupTimes
}

// AddStageStats are the sampled adds' stage histograms (Stats.AddStages).
type AddStageStats struct {
	// Stages is indexed by AddStage; Total is the whole latency of the
	// same adds, so the stages' sums add up to its sum.
	Stages [NumAddStages]HistogramSnapshot
	Total  HistogramSnapshot
}

func (t *stageTracer) stats() *AddStageStats {
	if t == nil {
		return nil
	}
	s := &AddStageStats{Total: t.total.Snapshot()}
	for i, h := range t.hist {
		s.Stages[i] = h.Snapshot()
	}
	return s
}

// checkpointTimer times one checkpoint's steps.
type checkpointTimer struct {
	s    CheckpointStages
	last int64
}

func startCheckpointTimer() checkpointTimer {
	now := journal.Nanotime()
	return checkpointTimer{s: CheckpointStages{Start: now}, last: now}
}

// step ends step st now.
func (c *checkpointTimer) step(st CheckpointStage) {
	now := journal.Nanotime()
	c.s.D[st] += now - c.last
	c.last = now
}

// skip restarts the clock without charging a step.
func (c *checkpointTimer) skip() { c.last = journal.Nanotime() }

func (c *checkpointTimer) done(err error) CheckpointStages {
	c.s.Total = journal.Nanotime() - c.s.Start
	c.s.Err = err
	return c.s
}
