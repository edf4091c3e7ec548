// Package mledger implements managed ledgers: a topic partition's
// unbounded log, made of a chain of ledgers, with named cursors (one per
// subscription) that keep acknowledgement state.
//
// # Usage
//
//	f, _ := mledger.NewFactory(mledger.Options{Ledgers: ls, Metadata: meta})
//	ml, _ := f.Open(ctx, "public/default/persistent/t", mledger.Config{})
//	ml.AddEntry(batch, numMessages, func(p mledger.Position, err error) { ... })
//	c, _ := ml.OpenCursor(ctx, "sub", mledger.InitialEarliest)
//	es, _ := c.ReadEntriesOrWait(ctx, 100)
//	c.Delete(es[0].Pos)                    // individual ack
//	c.AckBatchIndexes(p, ackSet)          // batch-index ack (PIP-54)
//	c.MarkDelete(p)                        // cumulative ack
//	<-c.WaitForEntries()                   // dispatcher: wait, don't poll
//	ml.Trim(ctx); ml.Terminate(ctx); ml.Delete(ctx); ml.Stats()
//
// The managed ledger's info node is RootPath + "/" + url.PathEscape(name);
// cursor nodes are its children (also path-escaped).
//
// The managed ledger sits on two interfaces: LedgerStore (declared here;
// implemented by the ledger client through an adapter, and by
// mledger/memstore for tests) and metadata.Store.
//
// # Positions
//
// A Position is (ledgerId, entryId); positions order lexicographically,
// which is append order because ledger ids only grow. (L, -1) means "before
// the first entry of L". One Pulsar batch is one entry; AddEntry takes the
// batch's message count so that backlogs are counted in entries and
// messages. Earliest (-1,-1) and Latest (MaxInt64,MaxInt64) are the Pulsar
// sentinels, accepted by NewNonDurableCursor and Cursor.Reset.
//
// # Open (recovery)
//
// Open reads the info node, opens the last listed ledger through the
// LedgerStore (which recovers it: the previous owner is fenced and the
// ledger is closed at its last entry that may have been acknowledged),
// records its final entry count and size (an empty one is dropped), creates
// a new ledger for writes and compare-and-sets the info (a version conflict
// means another owner: ErrFenced). Then every cursor node below the info
// node is loaded. A terminated managed ledger gets no new ledger.
//
// # Adds and rollover
//
// AddEntry callbacks run in add order. The current ledger is rolled over
// when, at submission, it holds MaxEntriesPerLedger entries or
// MaxSizePerLedger bytes, or is older than MaxLedgerRolloverTime (+0-5%
// random per managed ledger), and is older than MinLedgerRolloverTime; and
// always after a write error. Rollover: wait for the in-flight adds of the
// current ledger, close it, create the next, compare-and-set the info
// (with the final stats of the closed ledgers; empty ones are dropped),
// then re-send the adds that failed (each at most MaxAddRetries times) and
// the adds that were queued meanwhile, in their original order. If no
// ledger can be created the queued adds fail with ErrWriteFailed and the
// next add tries again; after a second failure in a row adds wait in the
// queue for a back-off (0.5 s doubling to 10 s, writefail.go) and one
// attempt serves them all, so a store without writable bookies sees no
// storm of creation attempts (nor clients of errors and reconnections),
// and only the first failure of a run is logged as an error. An add is acknowledged only once the ledger store
// acknowledged it, so no acknowledged entry is lost by a failed ledger.
//
// AddEntryHeadroom(buf, off, ...) adds buf[off:] and hands over the free
// room buf[:off] too: when the current ledger is a HeadroomWriter (the
// bookie-backed ledger, which writes its entry header there), the first
// attempt goes through AddWithHeadroom without copying the data; a retry on
// another ledger uses AddAsync, which copies, since the failed ledger may
// still be reading the frame it built in the room. The entry cache and
// readers only ever see buf[off:].
//
// # Entry cache
//
// One Cache per Factory with a byte budget shared by all managed ledgers.
// Entries are inserted when their add completes, so tailing cursors never
// touch the ledger store. Eviction: on overflow down to the watermark
// (oldest first), by age (CacheEvictionAge, background loop), and entries at
// or before the slowest cursor's mark-delete (background loop). Misses are
// read from the ledger store (consecutive misses in one read).
//
// # Cursor state
//
// Everything at or before the mark-delete position is acknowledged. Beyond
// it the cursor keeps individually acknowledged entries as one roaring
// bitmap of entry ids per ledger (BENCH_NOTES.md has the comparison with a
// sorted range set: roaring wins on scattered acks by 70x in memory and
// 6-130x in time), and for partially acknowledged batches the Pulsar ack_set
// (bit set = still unacknowledged); a batch ack ANDs into the stored set and
// the entry counts as acknowledged once no bit is set. Mark-delete advances
// over every contiguously acknowledged entry, across ledger boundaries and
// empty ledgers. The read position is memory only (after a restart reads
// start after mark-delete and skip acknowledged entries).
//
// # Cursor persistence
//
// A durable cursor has a metadata node (child of the info node, name
// path-escaped) and a cursor ledger. The cursor ledger holds one snapshot
// of the whole state, split into entries of at most CursorChunkSize bytes,
// followed by delta entries. Each persist (at most every
// CursorPersistInterval, from the background loop, and on Flush/Close)
// appends one delta holding only what changed since the previous persist:
// the mark-delete and the newly acknowledged ranges and changed batch sets,
// so its size follows the update, not the state (a cursor with 1M scattered
// acks writes about 11 bytes per single-ack update). A new snapshot goes
// into a fresh cursor ledger when there is none yet, after Reset (acks can
// only be forgotten by a snapshot), when the deltas since the last snapshot
// exceed max(CursorSnapshotMinBytes, last snapshot size) (so the bytes
// written stay within about twice the delta bytes), or after
// CursorMaxEntriesPerLedger entries; then the node is compare-and-set to
// the new ledger and the old ledger deleted. Recovery reads the node's
// cursor ledger: snapshot, then every delta in order.
//
// Snapshots are capped at CursorMaxStateBytes: the acks furthest from
// mark-delete are left out (kept in memory, redelivered after a restart)
// and an error is logged. If no cursor ledger can be written the state goes
// into the node itself (if it fits CursorMaxInlineBytes; else only the
// mark-delete, logged at error level).
//
// Redelivery bound: a crash loses at most the acks made since the last
// successful persist (one CursorPersistInterval, 100ms by default); those
// entries are redelivered. Acks persisted are never redelivered.
// Mark-delete is never persisted ahead of the real one.
//
// # Formats (version 1)
//
// Every encoding starts with (or, for snapshot and delta bodies, is
// wrapped in a record starting with) the format version byte 1. varint is
// zig-zag (encoding/binary.AppendVarint), uvarint is unsigned LEB128, a
// position is varint ledger, varint entry.
//
//	info node:      1 | flags(bit0 terminated, bit1 compaction) | uvarint n |
//	                n × (varint ledgerId-prev | uvarint entries |
//	                     uvarint size | uvarint messages | varint closeTimeMs)
//	                [bit1: varint compactedLedger | position horizon |
//	                       varint pendingLedger]  (compaction.go)
//	cursor node:    1 | varint cursorLedgerId (-1 none) | markDelete |
//	                uvarint len | inline snapshot (only without cursor ledger)
//	                [uvarint nProps | nProps × (uvarint len | key |
//	                 uvarint len | value)]  (cursor properties, sorted by
//	                 key; absent when there are none)
//	cursor ledger entry:
//	  snapshot chunk  1 | 1 | uvarint index | byte last | chunk bytes
//	  delta           1 | 2 | delta
//	snapshot:       markDelete | uvarint nBatch |
//	                nBatch × (position | uvarint nWords | nWords × u64 LE) |
//	                uvarint nLedgers | nLedgers × (varint ledgerId-prev |
//	                uvarint len | roaring portable serialisation)
//	delta:          markDelete | uvarint nRanges | nRanges × (varint
//	                ledger-prevLedger | uvarint first-prevLast-1 |
//	                uvarint last-first) | uvarint nBatch | nBatch × (position |
//	                uvarint nWords | nWords × u64 LE)
//
// testdata/golden/*-v1.bin pin these byte for byte (TestGoldenFormatV1).
// Integrity of entries is the ledger layer's job (digests).
//
// # Trimming
//
// Trim (also run by the background loop every TrimInterval) deletes, oldest
// first and stopping at the first kept ledger, each ledger that is not the
// last one, that every durable cursor has consumed (its last persisted
// mark-delete at or past the ledger's last entry, so a crash, which reverts
// a cursor to its persisted state, never leaves it inside a deleted ledger
// and the redelivery bound holds; with no durable cursor, all are consumed;
// non-durable cursors do not hold ledgers), and that violates a retention limit: closed
// longer than RetentionTime ago, or the managed ledger without it is still
// larger than RetentionSize (0: no retention, -1: unlimited). The info is
// compare-and-set first, then the ledgers are deleted from the store, so a
// crash in between leaks ledgers but never drops listed ones.
//
// # Tiered storage (offload.go)
//
// A closed, non-empty ledger can be copied to an object store (package
// offload) and then read from there; the ledger stays in the list, only
// its LedgerInfo.Offload changes. One offload runs per managed ledger
// at a time (ErrOffloadInProgress). Manual: Offload/StartOffload(upTo)
// take every closed, non-empty, not yet offloaded ledger before upTo's
// ledger. Automatic (each tick, with Config.Offload.Offloader set):
// walking from the newest ledger and summing sizes, a ledger is due when
// the sum exceeds ThresholdBytes or it was closed ThresholdSeconds ago;
// after a failed run the next automatic one waits 1 s doubling to 1 min.
//
// Per ledger, two phases with the info compare-and-set between them:
// (1) objects of an earlier, incomplete attempt (uid recorded, complete
// false) are deleted; if that fails the attempt stops and the old uid
// stays recorded; (2) a fresh uid is recorded, complete = false, before
// any object is written; (3) the offloader writes and verifies data and
// index; (4) complete = true with the completion time is recorded only if
// the recorded uid is still ours (else the objects are removed:
// ErrOffloadConflict); (5) the cached read handle is dropped. A crash
// anywhere leaves either no uid, an incomplete uid (reads stay on the
// bookies; the next attempt or trimming deletes its objects) or a
// complete offload. Reads then open the offloaded copy (unless
// BookkeeperFirst and the bookie copy still exists); a failed open is not
// cached, so the next read retries. Trim first deletes bookie copies
// whose DeletionLag has passed since completion: bookkeeperDeleted is
// recorded, then the ledger is deleted from the store (a crash leaks a
// bookie ledger, never a reference). Trimming a ledger and deleting the
// managed ledger delete its objects too (Delete fails, keeping the
// managed ledger, when they cannot be deleted).
//
// The info node records offload contexts after the ledger list, flagged
// by bit 1 of the flags byte (absent when no ledger has one, so such an
// info is byte-identical to version 1):
//
//	uvarint n, n × (varint ledgerId, 16 bytes uid, byte flags (bit 0
//	complete, bit 1 bookkeeperDeleted), varint completedMs, string driver,
//	uvarint nProps, nProps × (string key, string value))
//
// An older Magnetar ignores the section and would drop it on its next
// info write (downgrade after offloading loses the references).
//
// Info properties (infoprops.go) follow every other section, flagged by
// bit 3 of the flags byte (absent when there are none):
//
//	uvarint n (at most 64), n × (uvarint len, key, uvarint len, value), keys sorted
//
// A hook registered with SetInfoPropertiesHook sets them on every info
// write; later writes keep them. The broker stores its broker entry
// metadata index there ("index"), so it survives trimming.
//
// # Locking
//
// Lock order, outermost first:
//
//	Cursor.persistMu → ManagedLedger.infoMu → Cursor.mu → ManagedLedger.mu → Cache.mu
//
// ManagedLedger.off.mu (offload state) is a leaf, like Cache.mu.
//
// ManagedLedger.infoMu serialises info read-modify-write cycles and the I/O
// around them (rollover, trim, terminate, close). ManagedLedger.mu guards the
// ledger list, the add queues and the cursor map; it is never held while a
// cursor lock is taken, nor across I/O other than the non-blocking
// AddAsync. A cursor's mu guards its ack state and read position and is
// held briefly (no I/O); persistMu serialises its persistence I/O. Cache.mu
// is a leaf. Add completions run on the ledger store's callback goroutine;
// rollover runs on a goroutine owned by the managed ledger (waited for in
// Close); the Factory owns the background loop (waited for in
// Factory.Close).
//
// # Known limits
//
//   - Message backlog is exact for ledgers written by this instance and
//     estimated from each older ledger's average messages per entry.
//   - A previous owner that keeps running after being fenced can still
//     write a cursor node until its first failed add; the broker must stop
//     using a managed ledger once any call returns ErrFenced.
//   - FindByPublishTime assumes publish times do not decrease.
//   - A crash between creating a ledger and recording it in the info (or
//     between the info update and a delete) leaks that ledger.
package mledger
