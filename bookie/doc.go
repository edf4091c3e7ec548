// Package bookie is the local ledger store of a Magnetar bookie: it
// composes the journal (durability), a double-buffered write cache, the
// entry logs and the ledger index (the long-term, read-optimised copy)
// behind one API. The network server is built on top of it elsewhere.
//
// # Usage
//
//	b, err := bookie.Open(bookie.Options{JournalDir: "/disk1/journal", LedgerDirs: []string{"/disk2/ledgers"}})
//	b.AddEntry(ledger, entry, masterKey, payload, false, func(err error) { /* durable or failed */ })
//	p, err := b.ReadEntry(ledger, entry)  // entry -1: the last entry stored; p is the caller's
//	buf, err = b.AppendReadEntry(buf[:0], ledger, entry) // the same, into a buffer the caller reuses
//	err = b.Fence(ledger, masterKey)      // durable; later normal adds get ErrFenced
//	err = b.Close()
//
// # Files
//
//	JournalDir/                journal files (*.txn) and lastMark, package journal
//	LedgerDirs[i]/*.log        entry logs, package entrylog (new logs round robin)
//	LedgerDirs[0]/index/       the location index and ledger metadata, package index
//
// Open creates missing directories and syncs every ancestor, so a fresh
// bookie's directories survive a crash.
//
// # Add path
//
//  1. Check read-only mode, the master key (the first add or fence of a
//     ledger sets it, journaled as a master-key record) and fencing (normal
//     adds to a fenced ledger fail with ErrFenced, recovery adds pass).
//  2. Put the entry into the active write-cache half: readable at once.
//     The payload is copied once, into the half's arena, already framed
//     as its entry-log record (24-byte header, then payload). The
//     payload's CRC-32C is computed once, outside the locks, and serves
//     the journal's checksum and (folded, entrylog.PutRecordHeader) the
//     entry-log record's; records under entrylog.FoldMin bytes get their
//     entry-log checksum at checkpoint instead, where one pass is cheaper.
//  3. Append an entry record to the journal. The callback runs after the
//     fdatasync covering it, in journal order. A payload of at least
//     journal.RefMinPayload (64 KiB) is not copied into the journal's
//     group: the journal's vectored write reads the write cache's copy
//     (journal.AppendRef). The half holding it counts such records
//     (cacheHalf.refs) until their completions ran, and release waits
//     for that count before the half's memory is reused: an add that put
//     its entry before a checkpoint's swap may append its record only
//     after the mark.
//
// Steps 1–3 run under the ledger's mutex, and Fence takes the same mutex
// to set the flag and append its fence record. So every normal add that
// passed the fence check has its journal record before the fence record,
// and is acknowledged before Fence returns: once a fence answered, no
// normal add of that ledger is ever acknowledged again.
//
// # Ledger states
//
// The mutex of the add path belongs to the ledger's cached state
// (ledgerstate.go): its master key, fence, explicit LAC and last entry,
// loaded on first use from the index (metadata, last indexed entry) and
// the write cache (entries not checkpointed yet; read first, since a
// checkpoint sets the index before it drops a frozen half). The state is
// a copy: every metadata change is written to the index (Index.SetMeta)
// before the mutex is released. So a sweep every LedgerStateIdle (default
// 1 min) drops the states not locked since the previous sweep, and a
// bookie holding a million idle ledgers keeps only the index's part of
// each in memory. A dropped state is marked evicted under its mutex;
// whoever locks it afterwards looks the ledger up again (lockLedger), so
// at most one state of a ledger is ever changed and a fence cannot be
// missed by an add. A load holds a lock of its ledger (Bookie.loadMu, by
// id) from the lookup that missed to storing the state, so a state built
// from an earlier read is never stored after another state of the ledger
// came, changed it and was dropped. A deleted ledger's state stays in the map until the
// index has forgotten the ledger, so that no lookup reloads it meanwhile.
//
// AddEntries (addbatch.go) takes a batch of adds, as the network server
// reads them: a run of consecutive small adds (under journal.RefMinPayload)
// to one ledger with one recovery flag, at most 64, does steps 1–3 for all
// of them under one hold of the ledger's mutex, the write cache's lock
// (writeCache.putBatch, falling back to one put at a time, which may wait,
// when the active half fills) and the journal's queue lock
// (journal.AppendBatchWithCRC), with every entry of the run cached before
// any of its journal records is queued. The outcome of each add is the
// one AddEntry gives it; one pooled runOp completes the whole run.
//
// # Checkpoints
//
// Every CheckpointInterval, or when the active half passes
// WriteCacheSize/2, the checkpoint goroutine:
//
//  1. swaps the halves and, under the write-cache lock, starts a journal
//     Sync barrier (it writes no record and never blocks; it completes with
//     a position covering every record appended before it). Adds insert
//     into the cache before they append to the journal, so every record
//     before the barrier has its data in the frozen half (or in storage
//     already) and every index metadata change before it is in the index.
//     (Older bookies appended a fence record of ledger -1 as the barrier;
//     replay skips such records and readjournal labels them);
//  2. writes the frozen half sorted by (ledger, entry) into the entry log
//     (so a ledger's entries lie contiguous and read-ahead reads
//     sequentially), then Flush and Sync. The cached records go to the
//     entry log as they are (entrylog.AddRecords, 256 per call): records
//     of at least entrylog.DirectWriteMin (16 KiB) are written straight
//     from the write cache by vectored writes, smaller ones copied into
//     the entry log's append buffer;
//  3. sets the index locations, one index.SetRun per run of consecutive
//     entries of a ledger (at most 4,096), and flushes the index.
//     Between batches and runs the goroutine yields (runtime.Gosched): a
//     full half is tens of milliseconds of CPU, which it would otherwise
//     hold in 10 ms scheduler slices while goroutines queued behind it
//     (a journal committer, a connection's reader) wait;
//  4. releases the frozen half;
//  5. calls journal Checkpoint with the barrier's position (the journal
//     accepts any position it has acknowledged).
//
// Data is durable in the entry log before the index points at it, and both
// before the journal forgets it. When both halves are full, adds wait up
// to WriteCacheMaxWait, then fail with ErrTooManyRequests. A failed
// checkpoint keeps the frozen half (still readable, retried next time) and
// turns the bookie read-only until one succeeds.
//
// # Paced checkpoints
//
// The journal and the entry log often share a device. A checkpoint that
// appends a whole half at once and syncs it puts tens of MiB in the
// device's queue; every journal fdatasync issued meanwhile waits behind
// them, and a durable add's latency with it (at half of peak rate, p99
// 18 ms where one write+fdatasync took 1 ms). So a background checkpoint
// spreads step 2 over CheckpointSpread (default half the interval), at
// most half the time its half took to fill: after each batch of records it
// compares the bytes appended with a straight line over that time, and
// when ahead by a millisecond or more it hands what it appended to the
// device (entrylog Writeback: sync_file_range, waiting for the previous
// step) and sleeps. The device then writes the entry log in small steps
// between the journal's syncs, and the checkpoint's CPU comes in small
// slices too. It sleeps at most 10 ms at a time and stops pacing once the
// active half is half full (adds must never wait for a slow checkpoint),
// when a Checkpoint call, a ledger delete or Close waits for the
// checkpoint lock, or when the bookie closes; explicit checkpoints are
// never paced. A half's fill time is measured from the previous swap
// (at first, from Open). What is durable, and
// when the journal may forget it, is unchanged: the entry log is synced
// before the index points at it.
//
// # Read path
//
// Write cache (both halves) → read cache → entry log at the index's
// location. Entry -1 reads the highest entry id stored. A read copies the
// payload once, into the caller's buffer (AppendReadEntry; ReadEntry
// allocates it): the caller owns what it gets, the bookie keeps no
// reference to it.
//
// A read-cache miss reads the entry and the records after it with one
// entry-log read (entrylog.ReadRun) into a read-cache buffer, sized from
// the ledger's last run (the entry and ReadAheadEntries more, at most
// ReadAheadBytes of read-ahead and half a cache segment). The following
// entries of the same ledger, in order, stay in that buffer as the
// read-ahead, each only if the index still points at that record and it
// is not cached already; the payloads alias the buffer, nothing is copied
// into the cache. The read cache is a ring of segments owning such
// buffers; the oldest segment is dropped whole and its buffers are reused
// by later misses, so the read path neither allocates nor zeroes memory
// per entry once warm.
//
// # Restart
//
// Open replays the journal from the last checkpoint: entry records are
// re-added to the write cache (idempotent: same key, same bytes), master
// keys, fences and explicit LACs restored into the index. If the write
// cache fills during replay it is flushed to storage without a journal
// checkpoint (replay may safely run again). A checkpoint follows replay.
// DeleteLedger checkpoints at once, so replay never resurrects a deleted
// ledger from older journal records.
//
// # Read-only mode
//
// Adds fail fast with ErrReadOnly, naming the reason, while any of these
// holds; reads go on:
//
//   - disk usage of the journal or any ledger directory above
//     DiskUsageThreshold (0.95), until all are below DiskUsageLWM (0.90);
//     recovery adds still pass while every directory keeps
//     MinFreeForRecoveryAdds free, so ledgers stay recoverable;
//   - the journal failed (an fsync error is sticky): until restart;
//   - storage reported corruption: until restart;
//   - a checkpoint failed: until one succeeds (entry-log write errors are
//     sticky in package entrylog, so in practice until a restart, except
//     ENOSPC/EDQUOT, which the next checkpoint retries; the data stays in
//     the write cache and the journal meanwhile).
//
// Each switch to read-only mode is logged once, with its reason. Adds
// spend a budget of a quarter of the headroom below DiskUsageThreshold;
// when it is spent the disks are checked at once, not only every
// DiskCheckInterval. While read-only for disk usage or a failed
// checkpoint, GC runs at once and after every ledger delete, and first
// rolls the active entry log when part of it belongs to deleted ledgers,
// so their space is reclaimed even if that log never reaches its size
// limit; after GC reclaimed space the disks are checked again. Open and
// Close treat a checkpoint that found no space as read-only mode, not as
// an error (see diskfull.go).
//
// # Garbage collection
//
// Every GCInterval the entry logs' usage is computed from their ledgers
// maps: sealed logs holding only deleted ledgers are removed, logs below
// CompactionThreshold are compacted (live entries copied to the active log
// and synced, the index repointed and flushed, then the old log removed).
// Adds do not wait for it; a read that races a removal looks its location
// up again. GC only touches logs with an id below the compaction horizon,
// the entry log's ActiveLogID read at the end of the last checkpoint (under
// ckptMu, no flush running): a log sealed while a checkpoint is still
// setting the index locations of its entries is left for a later pass, so
// compaction never relocates an entry before its first index update.
// Relocations also take ckptMu and skip entries whose location changed.
//
// # Metrics
//
// Stats returns cumulative figures; Collector exports them for Prometheus
// (constant descriptors, values read at scrape time): the journal's
// bookie_journal_sync_latency_seconds, bookie_journal_group_entries and
// bookie_journal_group_bytes histograms and groups/entries/bytes counters,
// bookie_add_entry_latency_seconds (AddEntry call to durable callback,
// successful adds), bookie_checkpoint_latency_seconds, write/read cache
// hits and misses of ReadEntry, entries read from the entry log, GC runs
// and bookie_read_only_reason{reason} (0/1 per read-only reason;
// bookie_read_only itself is left to the embedder, the broker derives it
// from IsReadOnly). Updates are atomics and lock-free histograms: per add
// one clock read at AddEntry and one in the completion; per group (on the
// journal's committer goroutine) the sync latency and sizes, how long the
// committer blocked on the sync (bookie_journal_sync_wait_seconds) and
// how long the group's callbacks took
// (bookie_journal_complete_latency_seconds). Every checkpoint that flushed
// something times its steps (bookie_checkpoint_stage_latency_seconds
// {stage="entrylog-append|entrylog-sync|index-put|index-flush|journal"};
// Options.OnCheckpoint gets each one).
//
// # Stage tracing
//
// With Options.StageSampling = N, one add in N (counted over AddEntry and
// AddEntries alike; of a run, its last add) records where its latency went,
// as consecutive stages that add up to the whole, from the call to the
// callback:
//
//	cache     the call to the entry being in the write cache (checks, ledger
//	          lock, CRC, copy, waiting for cache space)
//	queue     to its record being in a journal group (queue lock, waiting
//	          for MaxQueuedBytes)
//	behind    waiting for the group in flight when it joined to sync
//	group     the committer taking its group after that (or waking up)
//	write     the writer's Submit (io_uring: queueing; pwrite: write+sync)
//	sync      to the committer seeing the write and fdatasync done
//	complete  the callbacks before its own in its group
//
// The bookie stamps the call and the cache; the journal stamps the record's
// arrival in its group (Record.Appended) and the group's moments
// (journal.GroupTimes, read by the completion with CompletingGroup); the
// completion reads the clock once more. Stats.AddStages and
// bookie_add_stage_latency_seconds{stage} hold the histograms (stage="total"
// is their sum), Options.OnAddStages gets every sample. Off (the default),
// the add path pays a nil check; on, a traced add pays three clock reads
// and an untraced one an atomic add per AddEntry call or run.
//
// # Concurrency
//
// Every exported method is safe for concurrent use. Lock order:
// Bookie.closeMu (shared) → ledgerState.mu → writeCache.mu; ckptMu is never
// taken under a ledger mutex except during replay, which is single
// threaded. The ledger-state sweep only tries a ledger's mutex
// (TryLock) and holds no other lock. Goroutines: the checkpoint loop, the
// disk checker, the GC loop and the ledger-state sweep, all waited for by
// Close.
package bookie
