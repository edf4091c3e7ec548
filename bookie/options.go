package bookie

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/magnetar-mq/magnetar/internal/uring"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// DefaultCheckpointInterval is the default CheckpointInterval
// (flushInterval). BookKeeper ships 60 s and relies on the write cache
// filling; here a checkpoint every 250 ms keeps each one's entry-log
// flush small: the journal's syncs on the same disk queue behind it, and
// at 10k msgs/s a once-a-second checkpoint (~2 MB) set the broker's
// publish p99 (bench/latency/NOTES.md, "Checkpoint interval").
const DefaultCheckpointInterval = 250 * time.Millisecond

// DefaultDeleteRate is Options.DeleteRate's default: 64 MiB of deleted
// files freed per second (a 1 GiB entry log in 16 s), in 4 MiB steps.
const DefaultDeleteRate = 64 << 20

// Options configures a Bookie. The zero value of every field but JournalDir
// and LedgerDirs means "use the default"; call EnsureDefaults, then Validate
// (Open does both).
type Options struct {
	// FS is the file system for every file (default: the OS).
	FS vfs.FS
	// JournalDir holds the journal files. Required.
	JournalDir string
	// LedgerDirs hold entry logs and the index (one entry log per
	// directory, the index in the first one). At least one is required; on
	// real deployments they sit on another device than JournalDir.
	LedgerDirs []string

	// JournalMaxGroupWait bounds how long an add waits for company before
	// its group is written and synced. Zero (the default) and negative
	// mean no wait: a group is written as soon as the previous one is
	// durable, and adds that arrive during a sync form the next group, so
	// groups grow with the load by themselves (journal doc, "Group
	// commit"). A fixed wait only adds latency at low rates.
	JournalMaxGroupWait time.Duration
	// JournalMaxGroupBytes flushes a group once this many bytes are
	// buffered (default 512 KiB).
	JournalMaxGroupBytes int
	// JournalMaxGroupEntries flushes a group at this many records (default
	// 0 = no count limit).
	JournalMaxGroupEntries int
	// JournalMaxFileSize rolls the journal file at this size (default 2 GiB).
	JournalMaxFileSize int64
	// JournalNoSync skips fdatasync: acks follow the page-cache write.
	// NOT DURABLE; for benchmarks only.
	JournalNoSync bool
	// JournalWriteMode picks io_uring or pwrite+fdatasync (default auto).
	JournalWriteMode uring.Mode
	// JournalDirectIO writes the journal with O_DIRECT in aligned, padded
	// groups (journal.Options.DirectIO), so it does not share the page
	// cache with entry-log writeback; JournalAlignment is the alignment
	// (default 4096; BookKeeper's journalAlignmentSize).
	JournalDirectIO  bool
	JournalAlignment int
	// JournalZeroFill zero-fills the journal's preallocated space ahead
	// of the writer (journal.Options.ZeroFill).
	JournalZeroFill bool

	// WriteCacheSize is the total size of the two write-cache halves
	// (default 64 MiB). A checkpoint starts early when the active half
	// passes half of it.
	WriteCacheSize int64
	// WriteCacheMaxWait bounds how long an add waits for write-cache space
	// when both halves are full (default 10 s); then ErrTooManyRequests.
	WriteCacheMaxWait time.Duration
	// CheckpointInterval is the period of the background checkpoint (write
	// cache flush, index flush, journal checkpoint; default
	// DefaultCheckpointInterval).
	CheckpointInterval time.Duration
	// CheckpointSpread spreads a background checkpoint's writing of the
	// frozen write-cache half over up to this long, in steps written back
	// to the device as they go (doc.go, "Paced checkpoints"), instead of
	// as fast as it can: the journal's syncs on the same device then wait
	// behind one step, not behind the whole half, and the checkpoint's CPU
	// does not come in a burst. A checkpoint spreads over at most half the
	// time its half took to fill, and runs at full speed once the active
	// half is half full or a Checkpoint call, ledger delete or Close waits
	// for it. Default: half of CheckpointInterval; negative: off.
	// Explicit checkpoints are never paced.
	CheckpointSpread time.Duration

	// ReadCacheSize is the read-ahead cache size (default 32 MiB).
	ReadCacheSize int64
	// ReadAheadEntries is how many following entries of the same ledger a
	// read miss pulls in (default 100; negative disables read-ahead).
	ReadAheadEntries int
	// ReadAheadBytes caps the bytes of one read-ahead (default 4 MiB).
	ReadAheadBytes int

	// EntryLogMaxSize rolls an entry log at this size (default 1 GiB).
	EntryLogMaxSize int64
	// EntryLogFlushBytes paces checkpoint writeback of the entry log in
	// steps of this many bytes (entrylog.Options.FlushBytes; BookKeeper's
	// flushEntrylogBytes). 0: no pacing.
	EntryLogFlushBytes int64
	// IndexSlotsPerPage and IndexPagesPerSegment shape a new index (0: the
	// index package's defaults, 4 KiB pages in 64 MiB segment files).
	IndexSlotsPerPage, IndexPagesPerSegment int

	// DiskUsageThreshold: above this used fraction of any journal or ledger
	// directory's volume the bookie turns read-only (default 0.95).
	DiskUsageThreshold float64
	// DiskUsageLWM: a read-only bookie turns writable again once every
	// directory is below this fraction (default 0.90; must be <=
	// DiskUsageThreshold).
	DiskUsageLWM float64
	// DiskCheckInterval is the period of the disk usage check (default
	// 10 s). Negative disables the background check (tests call
	// CheckDisks).
	DiskCheckInterval time.Duration
	// MinFreeForRecoveryAdds: recovery adds are still accepted while the
	// bookie is read-only for disk usage, as long as every directory has
	// at least this many free bytes (default 64 MiB).
	MinFreeForRecoveryAdds uint64

	// LedgerStateIdle is the period of the sweep that drops the cached
	// state (metadata and last entry) of ledgers not used since the
	// previous sweep; they are loaded from the index again on their next
	// use (default 1 min; negative keeps every state).
	LedgerStateIdle time.Duration

	// GCInterval is the period of entry-log garbage collection and
	// compaction (default 1 min; negative disables it).
	GCInterval time.Duration
	// CompactionThreshold: entry logs whose live fraction falls below it
	// are compacted (default 0.5). Logs with no live data are deleted.
	CompactionThreshold float64
	// CompactionRateBytes limits compaction copying to this many payload
	// bytes per second (default 0: unlimited).
	CompactionRateBytes int64
	// GCReserve is the space each ledger directory sets aside for GC on
	// a full disk (reserve.go; default 0: 1/64 of the volume, 1 to 64 MiB;
	// negative: none).
	GCReserve int64
	// DeleteRate bounds how fast the files the bookie deletes (entry logs
	// GC removed, journal files a checkpoint left behind) free their
	// space, in bytes per second: each is renamed aside and cut in steps
	// (vfs.Remover), so that a file system mounted with online discard
	// does not hold the journal's syncs behind the discards of a whole
	// file. 0: DefaultDeleteRate; negative: delete at once. A full disk
	// deletes at once whatever the rate.
	DeleteRate int64

	// StageSampling, above 0, traces the stages of one add in every
	// StageSampling (doc.go, "Stage tracing") into Stats.AddStages and
	// OnAddStages; 0 (the default) traces none, and the add path then pays
	// one nil check.
	StageSampling int
	// OnAddStages, when set and StageSampling is on, receives each traced
	// add's stages, on the journal's completion goroutine, before the
	// add's callback: it must be quick and must not block.
	OnAddStages func(AddStages)
	// OnCheckpoint, when set, receives the timing of every checkpoint that
	// flushed something, on the goroutine that ran it.
	OnCheckpoint func(CheckpointStages)

	// Logger receives the bookie's logs (default: discard).
	Logger *slog.Logger
}

// EnsureDefaults fills unset fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.FS == nil {
		o.FS = vfs.NewOS()
	}
	if o.JournalMaxGroupBytes == 0 {
		o.JournalMaxGroupBytes = 512 << 10
	}
	if o.JournalMaxFileSize == 0 {
		o.JournalMaxFileSize = 2 << 30
	}
	if o.WriteCacheSize == 0 {
		o.WriteCacheSize = 64 << 20
	}
	if o.WriteCacheMaxWait == 0 {
		o.WriteCacheMaxWait = 10 * time.Second
	}
	if o.CheckpointInterval == 0 {
		o.CheckpointInterval = DefaultCheckpointInterval
	}
	if o.CheckpointSpread == 0 {
		o.CheckpointSpread = o.CheckpointInterval / 2
	}
	if o.DeleteRate == 0 {
		o.DeleteRate = DefaultDeleteRate
	}
	if o.ReadCacheSize == 0 {
		o.ReadCacheSize = 32 << 20
	}
	if o.ReadAheadEntries == 0 {
		o.ReadAheadEntries = 100
	}
	if o.ReadAheadBytes == 0 {
		o.ReadAheadBytes = 4 << 20
	}
	if o.EntryLogMaxSize == 0 {
		o.EntryLogMaxSize = 1 << 30
	}
	if o.DiskUsageThreshold == 0 {
		o.DiskUsageThreshold = 0.95
	}
	if o.DiskUsageLWM == 0 {
		o.DiskUsageLWM = 0.90
	}
	if o.DiskCheckInterval == 0 {
		o.DiskCheckInterval = 10 * time.Second
	}
	if o.MinFreeForRecoveryAdds == 0 {
		o.MinFreeForRecoveryAdds = 64 << 20
	}
	if o.GCInterval == 0 {
		o.GCInterval = time.Minute
	}
	if o.LedgerStateIdle == 0 {
		o.LedgerStateIdle = time.Minute
	}
	if o.CompactionThreshold == 0 {
		o.CompactionThreshold = 0.5
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports every invalid setting, joined in one error.
func (o *Options) Validate() error {
	var errs []error
	if o.FS == nil {
		errs = append(errs, errors.New("FS is nil"))
	}
	if o.JournalDir == "" {
		errs = append(errs, errors.New("JournalDir is empty"))
	}
	if len(o.LedgerDirs) == 0 {
		errs = append(errs, errors.New("no LedgerDirs"))
	}
	seen := map[string]bool{o.JournalDir: true}
	for _, d := range o.LedgerDirs {
		if d == "" || seen[d] {
			errs = append(errs, fmt.Errorf("ledger dir %q empty or repeated (the journal dir cannot be a ledger dir)", d))
		}
		seen[d] = true
	}
	if o.JournalMaxGroupBytes < 0 || o.JournalMaxGroupEntries < 0 || o.JournalMaxFileSize < 0 {
		errs = append(errs, errors.New("negative journal limit"))
	}
	if o.WriteCacheSize < 64<<10 {
		errs = append(errs, fmt.Errorf("WriteCacheSize %d below 64 KiB", o.WriteCacheSize))
	}
	if o.CheckpointInterval < 0 || o.WriteCacheMaxWait < 0 {
		errs = append(errs, errors.New("negative CheckpointInterval or WriteCacheMaxWait"))
	}
	if o.ReadCacheSize < 0 || o.ReadAheadBytes < 0 {
		errs = append(errs, errors.New("negative read cache size"))
	}
	if o.DiskUsageThreshold <= 0 || o.DiskUsageThreshold > 1 {
		errs = append(errs, fmt.Errorf("DiskUsageThreshold %v not in (0, 1]", o.DiskUsageThreshold))
	}
	if o.DiskUsageLWM <= 0 || o.DiskUsageLWM > o.DiskUsageThreshold {
		errs = append(errs, fmt.Errorf("DiskUsageLWM %v not in (0, DiskUsageThreshold %v]", o.DiskUsageLWM, o.DiskUsageThreshold))
	}
	if o.EntryLogFlushBytes < 0 {
		errs = append(errs, errors.New("negative EntryLogFlushBytes"))
	}
	if o.StageSampling < 0 {
		errs = append(errs, errors.New("negative StageSampling"))
	}
	if o.CompactionRateBytes < 0 {
		errs = append(errs, errors.New("negative CompactionRateBytes"))
	}
	if o.CompactionThreshold < 0 || o.CompactionThreshold > 1 {
		errs = append(errs, fmt.Errorf("CompactionThreshold %v not in [0, 1]", o.CompactionThreshold))
	}
	if len(errs) > 0 {
		return fmt.Errorf("bookie: invalid options: %w", errors.Join(errs...))
	}
	return nil
}
