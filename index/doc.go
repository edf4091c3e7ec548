// Package index maps (ledger, entry) to a 64-bit entry-log location and
// keeps per-ledger metadata (exists, fenced, master key, explicit LAC).
//
// # Usage
//
//	ix, err := index.Open(index.Options{FS: vfs.NewOS(), Dir: dir})
//	err = ix.Set(ledger, entry, loc)     // loc != 0
//	err = ix.SetRun(ledger, first, locs) // entries first, first+1, ... (checkpoint)
//	loc, ok := ix.Get(ledger, entry)
//	last, ok := ix.LastEntry(ledger)
//	err = ix.UpdateMeta(ledger, func(m *index.Meta) { m.Fenced = true })
//	err = ix.Flush()                     // checkpoint, after the entry logs are synced
//	err = ix.Delete(ledger)              // GC
//
// To rebuild an index from the entry logs, open an empty directory, Set
// every scanned record (later records of the same entry win) and Flush;
// metadata (fence, master key, LAC) comes back from journal replay.
//
// # Layout
//
// Entry ids of a ledger are dense, so a ledger's locations form an array
// indexed by entry id. The array is cut into pages of SlotsPerPage slots
// (default 512 slots = 4 KiB); a ledger's page table maps page number
// (entry / SlotsPerPage) to a physical page. Physical pages of all ledgers
// live in a few segment files of PagesPerSegment pages each (default 16384
// = 64 MiB), so 100k ledgers share a handful of files. Physical page p is
// page p % PagesPerSegment of segment p / PagesPerSegment. Page tables and
// metadata live in one metadata file.
//
// Files in Options.Dir, all integers little-endian:
//
//	00000000.seg, 00000001.seg, ...   segments, numbered densely from 0
//	INDEX-META                        metadata snapshot (INDEX-META.tmp while written)
//	INDEX-META-LOG                    changes since the snapshot (INDEX-META-LOG.tmp while created)
//
// A segment file is a 4 KiB header followed by the pages:
//
//	+--------+------+-----------------------------------------+
//	| offset | size | field                                   |
//	+--------+------+-----------------------------------------+
//	|      0 |    4 | magic "MGIX"                            |
//	|      4 |    4 | version (1)                             |
//	|      8 |    4 | slots per page                          |
//	|     12 |    4 | pages per segment                       |
//	|     16 |    4 | segment number                          |
//	|     20 |    4 | CRC-32C (Castagnoli) of bytes [0, 20)   |
//	|     24 | 4072 | zero                                    |
//	|   4096 |  ... | pages: slots of uint64 location, 0=none |
//	+--------+------+-----------------------------------------+
//
// The metadata snapshot:
//
//	+------+----------------------------------------------------------+
//	| size | field                                                    |
//	+------+----------------------------------------------------------+
//	|    4 | magic "MGIM"                                             |
//	|    4 | version (2; version 1 files, without the generation, are |
//	|      | still read, as generation 0)                             |
//	|    4 | slots per page                                           |
//	|    4 | pages per segment                                        |
//	|    4 | segment count at the flush (informational)               |
//	|    4 | ledger count L                                           |
//	|    8 | generation (version 2 only)                              |
//	|    * | L ledger records, sorted by ledger id:                   |
//	|    8 |   ledger id                                              |
//	|    1 |   flags: bit 0 fenced, bit 1 explicit LAC present        |
//	|    2 |   master key length k, then k bytes                      |
//	|    4 |   explicit LAC length m, then m bytes                    |
//	|    4 |   page-table length P, then P uint32: physical page + 1  |
//	|      |   (0 = no page)                                          |
//	|    4 | CRC-32C of everything before                             |
//	+------+----------------------------------------------------------+
//
// The last entry of a ledger is not stored: the first use of the ledger
// after Open (LastEntry, Set, SetRun) finds it from the highest non-zero
// slot of its pages. Open itself reads no ledger's pages (a random page
// read per ledger, 3.3 µs each with the segments cached, most of a cold
// start at 100,000 ledgers). Until found it is lastUnknown; a Set raises
// the last entry only after finding it, and stores its slot before, so a
// scan racing it is raised by it afterwards.
//
// # Metadata log
//
// Rewriting every ledger's record at every Flush costs in proportion to
// the ledger count (about 55 MB per checkpoint at a million ledgers), so a
// Flush appends only the records of the ledgers that changed since the
// previous one (created, given a page, metadata updated, deleted) to
// INDEX-META-LOG, and rewrites the snapshot only when the log has grown
// past Options.MetaLogLimit (default: the larger of 1 MiB and the
// snapshot's size): the snapshot is then rewritten once per its own size
// of changes, and Open reads at most about twice the snapshot.
//
// The log starts with a 24-byte header: magic "MGIL", version u32 (1),
// generation u64, zero u32, CRC-32C of the first 20 bytes. Blocks follow,
// one per Flush:
//
//	+------+----------------------------------------------------------+
//	| size | field                                                    |
//	+------+----------------------------------------------------------+
//	|    4 | magic "MGLB"                                             |
//	|    4 | body length B                                            |
//	|    4 | CRC-32C of the body                                      |
//	|    4 | body: segment count at the flush                         |
//	|    4 | change count C                                           |
//	|    * | C changes, sorted by ledger id: kind u8, then            |
//	|      |   1: the ledger record (as in the snapshot), replacing   |
//	|      |      the ledger's record                                 |
//	|      |   2: ledger id u64, the ledger is deleted                |
//	+------+----------------------------------------------------------+
//
// A log belongs to the snapshot with the same generation. Open applies
// the blocks of that log, in order, to the snapshot's records. A Flush
// that writes a snapshot gives it the next generation, then creates the
// next log (header written and synced under INDEX-META-LOG.tmp, renamed,
// directory synced); a crash in between leaves a log of the previous
// generation, which Open ignores (the snapshot holds all of it) and the
// next Flush replaces with a snapshot and a new log. An index without a
// log (new, or from version 1) writes a snapshot at its first Flush.
//
// Each block is written and synced before the Flush returns and before
// the next block is written, so an incomplete last block (short, bad
// magic, length past the end, bad checksum) is a Flush that never
// returned: Open drops it and truncates the log there. An invalid block
// followed by a valid one is corruption (ErrCorrupt naming the file and
// offset), as is a checksummed block that does not decode.
//
// # Durability
//
// Set writes a slot (an atomic 8-byte store) in the mapped page and marks
// the page dirty. Flush (1) encodes the page tables and metadata if any
// changed (a log block of the changed ledgers, or a whole snapshot), (2)
// makes the dirty pages durable: in mmap mode, per segment with dirty
// pages, the mapping is dropped (MADV_DONTNEED: the pages' dirty bits
// pass to the page cache, and the TLB is flushed once, where msync would
// write-protect each dirty page with its own shootdown) and the file is
// synced (fdatasync); in heap mode WriteAt of each dirty page and one
// Sync per segment, then (3)
// appends the block to the log and syncs it, or writes the snapshot to
// INDEX-META.tmp, syncs it, renames it over INDEX-META, syncs the
// directory and starts the next log. Every page the metadata references
// was allocated before it was encoded, so its content is durable before
// the metadata naming it. A new segment is sized, its header written and synced and the
// directory synced before any of its pages is used.
//
// Pages freed by Delete are reused only after the Flush that made the
// deletion durable, and a page is zeroed when it is reused. So after a
// crash the durable page tables never point at another ledger's
// locations: a Set not covered by a Flush reads back as its old value or
// as absent, never as a wrong location. (In mmap mode the kernel may also
// write a page back early, so a Set not yet flushed can survive; the entry
// log verifies every record it returns against the requested ledger and
// entry anyway.) Pages not referenced by the metadata file at Open are
// free. Segments beyond those the metadata file knows (created before a
// crash) are kept and their pages are free.
//
// # Modes
//
// With a file system whose files have a descriptor (vfs.Fder, the OS FS)
// segments are mmap'd MAP_SHARED (golang.org/x/sys/unix). Otherwise (MemFS
// in crash tests), or with Options.NoMmap, each segment is held in heap
// memory, read at Open and written back at Flush. Both modes share the
// code above except for how a dirty page reaches the file. Locations are
// accessed as atomic uint64 overlays, which assumes a little-endian host.
// In mmap mode at each Flush every page of the segments (written pages
// once durable) is dropped from the process's mapping (MADV_DONTNEED;
// they stay in the page cache and the next access maps them again), so
// idle ledgers' pages do not sit in the resident set: a broker with a million topics has a page
// per ledger.
//
// # Concurrency
//
// Ledgers are in 64 shards, each a map under an RWMutex. Get takes the
// read lock only for the map lookup; Set and UpdateMeta hold it for their
// whole update, and Delete takes the write lock to remove a ledger, so no
// Set can still write through a deleted ledger's page table once Delete
// returns (its pages can then safely be reused after the next Flush). A
// ledger's page table is a copy-on-write slice behind an atomic pointer,
// replaced under the ledger's mutex when a page is added; the segment list
// is likewise copy-on-write. Get is thus lock-free after the shard lookup
// and never waits for Set, Flush or segment creation. Slots are read and
// written with atomic loads and stores.
//
// # Memory
//
// Every ledger's record (metadata and page table) is in memory. Ledgers
// with the same master key (a client derives it from the ledger's
// password: one per broker, usually) share one copy of it (keys.go, at
// most 1,024 distinct keys shared): stored metadata is replaced, never
// written in place, and GetMeta returns copies. A ledger's first page
// table is exactly as long as it needs (one page, for most ledgers of a
// broker with many topics); later ones grow with room.
package index
