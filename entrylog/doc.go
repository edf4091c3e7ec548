// Package entrylog stores ledger entries in large append-only files shared
// by all ledgers, and reads them back by location.
//
// # Usage
//
//	l, err := entrylog.Open(entrylog.Options{FS: vfs.NewOS(), Dirs: dirs})
//	loc, err := l.Add(ledger, entry, payload) // buffered
//	loc, err = l.AddRecord(rec)               // rec framed by the caller (PutRecordHeader)
//	locs, err := l.AddRecords(recs, locs)     // many, under one lock (checkpoint)
//	err = l.Sync()                            // checkpoint: flush + fdatasync
//	payload, err := l.Read(loc, ledger, entry)
//	buf, err = l.ReadRun(buf, loc, ledger, entry, fn) // the record and those after it, one read
//	usage, err := l.Usage(isLive)             // GC
//	st, err := l.Compact(ctx, id, isLive, relocate)
//	err = l.RemoveLog(id)                     // after relocations are durable
//
// # Files
//
// Logs are named "<8 hex digit id>.log" and spread round robin over the
// ledger directories; ids are unique across directories and grow by one. A
// Log never appends to a file that existed when it was opened: the first
// Add creates a new log. The active log is preallocated ahead of the write
// offset (Options.PreallocateSize) and rolled once the next record would
// pass Options.LogSizeLimit (default 1 GiB, at most 3 GiB so that offsets
// fit in 32 bits). While a log is active, the next one is created,
// preallocated and made durable (header, directory entry) by a goroutine
// the Log owns, so a roll only seals; Close deletes the unused prepared
// log. After a crash it may remain as a log without records (usage Total
// 0), which GC removes.
//
// All integers are little-endian. A file starts with a HeaderSize (1 KiB)
// header:
//
//	+--------+------+----------------------------------------------+
//	| offset | size | field                                        |
//	+--------+------+----------------------------------------------+
//	|      0 |    4 | magic "MGEL"                                 |
//	|      4 |    4 | version (1)                                  |
//	|      8 |    8 | ledgers-map offset (0: no map, not sealed)   |
//	|     16 |    4 | ledger count in the map                      |
//	|     20 |    4 | ledgers-map length in bytes                  |
//	|     24 |    4 | CRC-32C (Castagnoli) of bytes [0, 24)        |
//	|     28 |    8 | synced end (0: unknown)                      |
//	|     36 |    4 | CRC-32C of bytes [28, 36)                    |
//	|     40 |  984 | zero                                         |
//	+--------+------+----------------------------------------------+
//
// Records follow the header back to back:
//
//	+--------+------+----------------------------------------------+
//	| offset | size | field                                        |
//	+--------+------+----------------------------------------------+
//	|      0 |    4 | payload length n                             |
//	|      4 |    4 | CRC-32C of bytes [0,4) ++ [8, 24+n)          |
//	|      8 |    8 | ledger id (int64, >= 0; -1 = ledgers map)    |
//	|     16 |    8 | entry id (int64)                             |
//	|     24 |    n | payload                                      |
//	+--------+------+----------------------------------------------+
//
// An entry's location is one uint64: (log id << 32) | offset of its record
// (the length field). Location and SplitLocation convert.
//
// # Ledgers map
//
// When a log is sealed (rolled, Roll, or Close) the bytes each ledger
// occupies (record headers included) are appended as records with ledger id
// -1 and entry ids 0, 1, 2, ...; each payload is up to 4096 pairs of
// (ledger int64, bytes uint64), sorted by ledger. The header is then
// rewritten with the map's offset, pair count and length (covered by the
// header CRC) and the file is fsynced. GC reads usage from the map without
// scanning. A log without a map (crash, or a torn header patch: header CRC
// mismatch) has its usage computed by one scan, cached in memory.
//
// In memory a sealed log keeps its map as a slice of pairs sorted by
// ledger, each ledger once, with no spare capacity: 16 B a ledger (a Go
// map took 22–37 B, and a million single-message topics leave about one
// pair each). Decoding sorts a map read out of order and sums a ledger
// listed twice. Only the active log counts its bytes in a map, to add to
// them.
//
// # Durability and recovery
//
// Add buffers (Options.WriteBufferSize); Flush writes the buffer; Sync
// flushes and fdatasyncs the active file. A record too large for the
// buffer, or one of at least DirectWriteMin bytes added with AddRecord, is
// written at once from the caller's memory, after the buffered records
// and in the same vectored write (pwritev(2) through internal/uring's
// pwrite writer; WriteAt per buffer on file systems without descriptors),
// so neither is copied nor needs a fresh buffer. AddRecord takes a record
// framed by the caller (the bookie's write cache holds entries that way):
// PutRecordHeader folds the CRC-32C of the payload, which the caller
// computed anyway, into the record checksum (crc(A ++ B) from crc(A) and
// crc(B), crc.go) without reading the payload again; PutRecordFields and
// SetRecordCRC compute it in one pass, cheaper below FoldMin bytes. The
// bytes on disk are those Add writes. Creating a log syncs its header
// and the directory; sealing syncs the map and the patched header. So after
// Sync returns, every entry added before is durable.
//
// After each Sync of the active log, the offset it synced up to is written
// into the header's synced-end field (its own CRC, outside the map's). That
// write is not synced itself: it becomes durable with the next Sync or the
// seal (which records the map offset), so the durable value never exceeds
// what was synced; a torn or zero field means unknown. Files written
// before the field existed read as unknown.
//
// A scan (ScanFile, Scan, usage of map-less logs) stops quietly at a torn
// tail: a zeroed, truncated or checksum-failing record after which no valid
// record can be found at any later offset. An invalid record followed by a
// valid one is mid-file corruption: an error wrapping ErrCorrupt with the
// path and offset, except in a log that was never sealed (the active log
// at a crash), where unsynced pages can reach the disk out of order (a
// lost page, or the lost rewrite of a page's end, before surviving ones).
// There an invalid stretch that starts at or after the synced end is a
// torn tail: nothing from there on was covered by a Sync, so the journal
// still holds it. One that starts before the synced end is corruption
// (those bytes were fsynced). With the synced end unknown (a crash before
// the log's first Sync) the stretch is a torn tail when it contains a
// whole 4 KiB-aligned zero page. The scan then ends there quietly too. A log whose header is entirely zero (crash before the
// header was synced) holds nothing durable and is removed by Open; any
// other bad header fails Open with ErrCorrupt.
//
// Read verifies the checksum and that the record holds the requested
// (ledger, entry); a mismatch is ErrCorrupt with path and offset. ReadRun
// checks its first record the same way and reads the following records
// in the same read, into the spare capacity of the caller's buffer (no
// clearing: only a first record larger than that capacity grows it); a
// later record that is cut off or fails its checksum only ends the run. A
// location in a log that no longer exists (compacted and removed) is
// ErrNotFound. A zeroed record, or one past the end of the data, is
// ErrNotFound in a log recovered without a ledgers map (its unsynced tail
// may legitimately be gone after a crash) and ErrCorrupt in a sealed or
// active log, where every location handed out holds a record. Likewise a
// checksum mismatch in a recovered log is ErrNotFound when the record
// overlaps an aligned all-zero page (lost in the crash).
//
// # Writeback pacing
//
// With Options.FlushBytes a checkpoint's writes reach the disk in steps:
// after each FlushBytes written to the active log, writeback of them is
// started (sync_file_range WRITE) and the writer waits until the previous
// step's writeback finished. Without it, a checkpoint leaves tens of MiB
// of dirty pages that the final fsync (or the kernel's flusher) sends to
// the device at once, and a journal fdatasync on the same device queues
// behind them. Pacing changes when bytes reach the disk, not what is
// durable: entries are durable in the log only after Sync, as before.
//
// Writeback is started in pieces of at most 256 KiB, one sync_file_range
// each, and a Sync of a paced log starts its remainder the same way before
// the fsync: one call over MiB would reach a virtio disk as requests of
// max_sectors_kb (4 MiB), and a journal write queued behind such a request
// waits for all of it.
//
// # Write errors
//
// A failed write, preallocation, roll or fsync fails every later Add,
// Flush and Sync (sticky), except a write that found no space (ENOSPC,
// EDQUOT; IsNoSpace): it changes nothing (offsets are not advanced, the
// append buffer is kept, a half-written seal is rewound) and the next
// call retries it. A failed fsync is sticky whatever its errno, as the
// kernel may have dropped the dirty pages. Close on a full disk leaves the
// active log unsealed, as after a crash, without failing. Near a full disk
// preallocation shrinks to what a write needs, and a log prepared while
// the disk was full is prepared again at the roll.
//
// A log opened without a valid ledgers map (the process died while it was
// active: each crash leaves the active log and the prepared next one) is
// scanned and sealed by Open itself: its records are synced, the map is
// written at the end of its valid records and the header patched, in
// sealLocked's order, so later opens neither scan it nor mention it; a
// log with no record at all (the prepared one) is removed. Open logs one
// line with the counts. A read at or past the end of such a log's valid
// records (where the crash's unsynced tail was, and the map is now) is
// ErrNotFound. (Before, sealing waited for the first GC, a minute after
// the start: a bookie killed again before then kept the log unsealed, and
// every start warned about all of them.)
//
// # Concurrency
//
// The set of open logs is an immutable snapshot behind an atomic pointer,
// replaced (copy on write) under the writer lock when a log is created or
// removed. Each file is reference counted: the snapshot holds one
// reference and each read takes one, so a log removed after compaction is
// closed and deleted only when the last in-flight read releases it. Reads
// thus never wait for a roll, compaction or removal; a read of a record
// still in the append buffer copies it under the writer lock.
//
// Compact scans a sealed log without locks and re-adds each live entry
// through Add, taking the writer lock once per entry, so it interleaves
// with normal Adds. One Compact runs at a time.
package entrylog
