// Package journal is the bookie's write-ahead log: every add, master key,
// fence and explicit LAC is appended here and acknowledged only after the
// fdatasync covering it returned. One sequential write plus one
// group-committed sync makes many adds durable at once; ledger storage is
// then flushed lazily and replay from the last checkpoint rebuilds it.
//
// # Usage
//
//	j, err := journal.Open(journal.DefaultOptions(dir))
//	err = j.Replay(j.LastMark(), func(r journal.Record, pos journal.Position) error {
//		return storage.Reapply(r) // idempotent
//	})
//	j.Append(journal.Record{Type: journal.Entry, LedgerID: l, EntryID: e, Payload: p}, req)
//	// req.AppendDone(pos, err) runs once the record is durable.
//	j.Sync(barrier) // writes nothing; barrier.AppendDone gets the position
//	                // just past every record appended before it
//	err = j.Checkpoint(pos) // after ledger storage persisted everything up to pos
//	err = j.Close()
//
// Tools read a journal directory without opening it for writing with
// ReplayDir.
//
// # Group commit
//
// Appenders encode their record straight into the current group under one
// mutex (the payload CRC is computed before taking it, or handed in with
// AppendWithCRC by a caller that computed it anyway), taking the next
// sequence number. A group's bytes live in pooled 256 KiB chunks that
// records straddle, written with one vectored write, so a group never
// copies itself to grow; completions sit in pooled blocks likewise.
// AppendRef puts a payload of at least RefMinPayload bytes into the
// group's list of buffers as it is (behind its header in a chunk) instead
// of copying it: the write reads it from the caller's memory, which the
// caller keeps unmodified until the record's completion ran. The bytes on
// disk are the same either way. AppendBatchWithCRC appends several
// records under one hold of the mutex, as far as the queue has room, and
// the rest one at a time. Append
// blocks while MaxQueuedBytes are appended but not completed. One committer goroutine hands a ready group to
// commitEnv.write (uring.Writer.Submit: write + linked fdatasync) and
// starts a new one; at most one group is in flight. A group is ready when
// its first record waited MaxGroupWait, when it holds MaxGroupBytes or
// MaxGroupEntries, or at once when MaxGroupWait is 0 — but never while
// another group is in flight: records arriving during a sync join the
// next group, which is written the moment the sync returns if it is ready
// by then (under load its first record has usually waited long enough). That pipeline
// is where the throughput comes from: the cost of a sync is shared by
// everything that arrived during the previous one.
//
// The same goroutine then waits for the written group (uring Wait), writes
// the next group if one is ready (so the disk syncs it meanwhile),
// publishes the finished group's durable end (End), then calls its
// completions in order, so every acknowledged position is a valid
// Checkpoint. When the writer would do the next group's write and sync on
// this goroutine before returning (uring.Writer.Blocking: pwrite, and the
// small groups of the hybrid writer), the completions run first instead:
// otherwise every record of a group would wait for the next group's sync
// as well. One goroutine for both, rather than a writer and a
// completer, saves two hand-offs between goroutines (thread wake-ups,
// costly in a virtual machine) per group; a record that arrives while
// completions run waits for them, as it would for the sync in flight. Sync is a barrier that writes nothing: its
// completion runs after those of every record appended before it, with
// the position just past the last of them (at once when nothing is
// pending).
// Completions therefore fire in sequence order, only after the sync
// covering them, on one goroutine.
//
// A failed write or sync is sticky: the failed group's completions, those
// of every group queued behind it and every later Append get an error
// wrapping ErrFailed and the I/O error. Nothing is written or acknowledged
// after it and nothing is retried; reopening replays what is on disk.
//
// The core (committer) only sees a commitEnv of write and wait funcs, so
// ordering, batching and failure tests drive it without a disk.
//
// # Stats
//
// Stats reports groups, records and bytes made durable and histograms
// (Histogram: fixed buckets of atomics, no lock, no allocation) of the
// per-group sync latency (from handing the group to write+fdatasync to the
// sync returning) and of group sizes in records and bytes. The committer
// goroutine updates them once per group; appenders pay nothing. SyncedAt is the
// Nanotime at which the newest group's sync returned, so a Completion can
// time its record without reading the clock. SyncWait is how long the
// committer blocked in wait (near zero when the disk finished while the
// previous completions ran) and CompleteLatency how long a group's
// completions took.
//
// For stage tracing, a record's Appended field, when set, receives the
// time the record joined its group, and a Completion may read its
// group's moments (GroupTimes: handed to the writer, Submit returned,
// wait began, wait returned, and the previous group's wait returned) with
// CompletingGroup; the committer reads the clock twice more per group
// for them.
//
// # Files
//
// Files live in the journal directory, named by a 16-digit hex id and
// ".txn" (0000000000000001.txn). Open scans the existing files and starts
// a new file with the next id; a file is rolled (a new one created) when a
// group would take it past MaxFileSize, after the previous group is
// durable. Files are preallocated in PreallocSize steps (fallocate
// KEEP_SIZE); on a nearly full disk (ENOSPC, EDQUOT) only what the group
// needs is preallocated, and a new file starts without preallocation,
// so the journal keeps working in the last few MiB below the bookie's
// disk-usage threshold. A new file's header is synced, and the directory too, before
// any record is written to it.
//
// File header, 32 bytes, little endian:
//
//	+-------+---------+---------+----------+----------+---------+
//	| magic | version | file id | base seq | reserved | crc32c  |
//	| MGJL  |  u32=1  |   u64   |   u64    | u32 = 0  |   u32   |
//	+-------+---------+---------+----------+----------+---------+
//	0       4         8         16         24         28        32
//
// crc32c (Castagnoli) covers bytes 0..28. base seq is the sequence number
// of the file's first record; it must continue the previous file's last.
//
// Each record: a 40-byte header then the payload, little endian, no
// padding or alignment between records:
//
//	+-------+--------+-----+-----------+------+----------+-----------+----------+---------+
//	| crc   | length | seq | group lag | type | reserved | ledger id | entry id | payload |
//	| u32   | u32    | u64 | u32       | u8   | 3 x 0    | i64       | i64      | length  |
//	+-------+--------+-----+-----------+------+----------+-----------+----------+---------+
//	0       4        8     16          20     21         24          32         40
//
// Fields:
//
//   - crc is CRC-32C over the payload followed by header bytes 4..40 (so the
//     payload part can be computed outside the append lock).
//   - length is the payload length, at most MaxPayloadSize.
//   - seq increases by one per record across all files, starting at 1.
//   - group lag is seq minus the seq of the first record written in the
//     same group (same write+sync); it tells replay where groups begin.
//   - type is 1 entry, 2 master key, 3 fence, 4 explicit LAC, 5 mark (an
//     internal, payload-less record Close writes alone in a last group).
//
// # Direct I/O
//
// With Options.DirectIO the group writes go through a second descriptor of
// the current file opened with O_DIRECT, so journal bytes do not sit in
// the page cache competing with entry-log writeback, and each write must
// start and end on an Alignment boundary (default 4096) from an aligned
// buffer. The format is unchanged: the writer copies the group into one
// aligned staging buffer behind the bytes of the current last, partly
// filled block (kept in memory: the file header for a new file), pads it
// with zeros to the next boundary and writes it at the block's start. The
// first bytes of that write are already durable and rewritten with the
// same values, so a torn rewrite can not change them; the zeros after the
// last record read as a torn tail, which the next group overwrites and
// replay truncates (see below) after a crash. Positions stay logical
// (just past a record), so checkpoints and replay do not change. When a
// file is left (roll, Close) it is truncated to its last record and
// synced, so only a crash leaves padding. A DirectIO file's size is also
// extended to its preallocation (zeros), so that writes do not extend it. The header is still written
// and synced through the ordinary descriptor at file creation.
//
// # Zero fill
//
// Preallocation (fallocate) reserves blocks but leaves them unwritten: the
// first write into such a block converts its extent, so a group's
// fdatasync also commits file-system metadata, through the file system's
// own journal, where it can queue behind the entry-log and index syncs of
// a checkpoint. With Options.ZeroFill a filler goroutine writes zeros into
// the current file, in chunks of 256 KiB each followed by an fdatasync,
// keeping up to zeroAhead (half a preallocation step, at most 4 MiB) of
// zeros ahead of the writer, so group writes are overwrites of written
// blocks and their fdatasync flushes data only (with NoSync there is no
// fdatasync to spare, and ZeroFill is ignored). The filler never writes
// below the writer's end, and the writer waits while the one chunk in
// flight overlaps its group, so the two never write the same bytes. Once
// the lead fell a chunk short of zeroAhead it tops it up by one chunk, so
// it wakes once per chunk the writer moved on, not per group, and its
// syncs never come in bursts that the journal's fdatasyncs would queue
// behind (refilling half the lead at once did, at 2 MB/s once a second:
// server-side publish latency clusters of 3-10 ms); the writer extends the
// preallocation that far ahead.
// When the writer overtakes it, or writes a group of 64 KiB or more
// (zeroBusyGroup: a busy journal, whose large groups gain little and for
// which the zeros would double the bytes written and the CPU spent), the
// filler pauses for a second. A failed fill is logged
// and ends filling for that file; the writer's own writes report a failing
// disk. The zeros past the last record read as a torn tail after a crash,
// as DirectIO padding does, and a file left (roll, Close) is truncated to
// its last record.
//
// # Checkpoints
//
// Checkpoint(pos) writes the file "lastMark" (magic MGLM, file id u64,
// offset u64, crc32c u32 over the first 20 bytes) via lastMark.tmp, sync,
// rename and directory sync, then removes journal files with ids below
// pos's file except the newest MaxBackups. Positions point just past a
// record, so replay from the mark yields the records after it.
//
// # Replay and torn tails
//
// Open scans from the mark's file (from its header, to check sequence
// numbers) to the end. Records stop at the first offset that does not hold
// a valid record: short, zero header, bad type, bad length, bad checksum.
// A valid checksum with the wrong sequence number is corruption. At an
// invalid record the scanner looks at every later offset of the file for a
// record with a valid checksum:
//
//   - none (zeros, garbage, the end of the file): a torn tail. Open
//     truncates the file there, syncs, and logs it. Nothing past it was
//     acknowledged, because acks follow the sync of the whole group.
//   - a valid record of a later group, or one with an older sequence
//     number: the invalid record had been synced (a group is only written
//     after the previous group's sync returned), so this is corruption:
//     an error wrapping ErrCorrupt naming the file path and offset.
//   - valid records of the same group only: the disk persisted the pages of
//     an unsynced write out of order; still a torn tail.
//
// Because of the last rule, damage inside the newest group is only
// provable if a later group exists; a clean Close therefore writes a lone
// mark record as a final group. A last file whose header is short or zero
// (crash during creation) is removed. File headers carry the base sequence
// number, so a file missing from the middle, or a torn tail in a file that
// was followed by a newer one, shows up as a sequence gap (ErrCorrupt).
package journal
