package cliflags

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/magnetar-mq/magnetar/bookie"
)

// BookieTuning holds the bookie settings standalone and bookie share,
// named after BookKeeper's keys (diskUsageThreshold,
// diskUsageLwmThreshold, diskCheckInterval, gcWaitTime,
// journalMaxGroupWaitMSec, flushInterval).
type BookieTuning struct {
	diskUsageThreshold float64
	diskUsageLWM       float64
	diskCheckInterval  time.Duration
	gcWaitTime         time.Duration
	journalDirectIO    bool
	journalZeroFill    bool
	journalAlignment   int
	entryLogFlushBytes int64
	groupWait          time.Duration
	flushInterval      time.Duration
	checkpointSpread   time.Duration
	deleteRate         int64
	stageSampling      int
}

// Register adds the flags to fl.
func (t *BookieTuning) Register(fl *pflag.FlagSet) {
	fl.Float64Var(&t.diskUsageThreshold, "disk-usage-threshold", 0.95, "the bookie turns read-only when a journal or ledger disk is fuller than this fraction (diskUsageThreshold)")
	fl.Float64Var(&t.diskUsageLWM, "disk-usage-lwm-threshold", 0.90, "a read-only bookie turns writable again once every disk is below this fraction (diskUsageLwmThreshold)")
	fl.DurationVar(&t.diskCheckInterval, "disk-check-interval", 10*time.Second, "period of the disk usage check (diskCheckInterval); adds trigger earlier checks near the threshold")
	fl.BoolVar(&t.journalDirectIO, "journal-direct-io", false, "write the journal with O_DIRECT in aligned groups, bypassing the page cache (journalDirectIO)")
	fl.BoolVar(&t.journalZeroFill, "journal-zero-fill", true, "write zeros into the journal file a few MiB ahead of the writer, off its path, so that each group's fdatasync flushes data without file-system metadata (=false to turn off)")
	fl.IntVar(&t.journalAlignment, "journal-alignment-size", 4096, "alignment of O_DIRECT journal writes in bytes, a power of two from 512 (journalAlignmentSize)")
	fl.Int64Var(&t.entryLogFlushBytes, "flush-entrylog-bytes", 0, "pace entry-log writeback during checkpoints in steps of this many bytes, 0 = off (flushEntrylogBytes)")
	fl.DurationVar(&t.gcWaitTime, "gc-wait-time", time.Minute, "period of entry-log garbage collection and compaction (gcWaitTime); on a full disk it also runs after every ledger delete")
	fl.DurationVar(&t.flushInterval, "flush-interval", bookie.DefaultCheckpointInterval, "period of the checkpoint that moves the write cache to the entry logs and index and trims the journal (flushInterval); a full write-cache half starts one earlier")
	fl.DurationVar(&t.checkpointSpread, "checkpoint-spread", 0, "spread each background checkpoint's entry-log writes over up to this long, handing them to the disk in steps, so journal syncs on the same disk do not queue behind a whole write-cache half (0: half the flush interval; negative: not paced)")
	fl.Int64Var(&t.deleteRate, "delete-rate", bookie.DefaultDeleteRate, "free the entry logs GC deletes and the journal files a checkpoint drops at most this many bytes per second, cutting each in steps, so a file system mounted with online discard does not hold journal syncs behind a whole file's discards (0: the default; negative: delete at once); a full disk deletes at once")
	fl.IntVar(&t.stageSampling, "stage-sampling", 0, "trace the stages of one add in this many (cache, queue, behind, group, write, sync, complete) into bookie_add_stage_latency_seconds; 0 = off")
	fl.DurationVar(&t.groupWait, "journal-max-group-wait", 0, "longest an add waits for company before its journal group is written and synced (journalMaxGroupWaitMSec); 0 writes a group as soon as the previous one is durable, so groups grow with the load without adding latency at low rates")
}

// Apply copies the settings into o; Options.Validate checks them.
func (t BookieTuning) Apply(o *bookie.Options) {
	o.DiskUsageThreshold = t.diskUsageThreshold
	o.DiskUsageLWM = t.diskUsageLWM
	o.DiskCheckInterval = t.diskCheckInterval
	o.GCInterval = t.gcWaitTime
	o.JournalDirectIO = t.journalDirectIO
	o.JournalAlignment = t.journalAlignment
	o.JournalZeroFill = t.journalZeroFill
	o.EntryLogFlushBytes = t.entryLogFlushBytes
	o.JournalMaxGroupWait = t.groupWait
	o.CheckpointInterval = t.flushInterval
	o.CheckpointSpread = t.checkpointSpread
	o.DeleteRate = t.deleteRate
	o.StageSampling = t.stageSampling
}
