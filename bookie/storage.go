package bookie

import (
	"context"

	"github.com/magnetar-mq/magnetar/entrylog"
	"github.com/magnetar-mq/magnetar/journal"
)

// The small interfaces the bookie needs from journal, entrylog and index.
// The bookie declares them (the consumer owns the interface); adapt.go
// binds them to the concrete packages, and the tests also drive the bookie
// through fakes with injected faults.

// wal is the journal: group-committed, durable appends whose completions
// run in append order after the fsync covering them. *journal.Journal
// provides it through walJournal (adapt.go).
type wal interface {
	// Append enqueues r; c.AppendDone runs exactly once: with a nil error
	// after the record is durable, or with the journal's sticky error. It
	// may block while the journal's queue is full.
	Append(r journal.Record, c journal.Completion)
	// AppendWithCRC is Append with pcrc = the CRC-32C of r.Payload
	// (entrylog.PayloadCRC), computed once by the caller.
	AppendWithCRC(r journal.Record, pcrc uint32, c journal.Completion)
	// AppendRef is AppendWithCRC for a payload the caller keeps unmodified
	// until c's completion ran: a large one is written from r.Payload
	// itself instead of being copied (journal.Journal.AppendRef).
	AppendRef(r journal.Record, pcrc uint32, c journal.Completion)
	// AppendBatchWithCRC is AppendWithCRC for rs[i], pcrcs[i], cs[i] in
	// order (journal.Journal.AppendBatchWithCRC).
	AppendBatchWithCRC(rs []journal.Record, pcrcs []uint32, cs []journal.Completion)
	// Mark starts a checkpoint mark: every record appended before Mark
	// returns lies before the position the returned wait yields, once all
	// of them are durable. The bookie calls it under the write-cache lock.
	Mark() (wait func() (journal.Position, error))
	// Checkpoint declares that everything before pos is in ledger storage;
	// the journal may drop it and replay starts there next time.
	Checkpoint(pos journal.Position) error
	// Replay calls fn for every record after the last checkpoint, in order.
	// r.Payload is only valid during the call.
	Replay(fn func(r journal.Record) error) error
	// Err returns the sticky error after a failed write or fsync.
	Err() error
	Close() error
}

// entryStore is the entry log: interleaved append-only files.
type entryStore interface {
	// Add appends one entry and returns its location. The entry may sit in
	// a buffer until Flush.
	Add(ledger, entry int64, payload []byte) (loc uint64, err error)
	// AddRecord is Add for an entry already framed as an entry-log record
	// (header with checksum, then payload): large records are written
	// from rec itself.
	// rec is not referenced after it returns.
	AddRecord(rec []byte) (loc uint64, err error)
	// AddRecords is AddRecord for each of recs in order, in one call; the
	// locations are appended to locs. On an error the records before the
	// failing one were added and their locations are in the result.
	AddRecords(recs [][]byte, locs []uint64) ([]uint64, error)
	// Flush writes buffered entries to the file; Sync makes them durable.
	Flush() error
	Sync() error
	// Writeback writes the buffer and starts writeback of what was written
	// since the last call, waiting for the previous call's (entrylog.Log.
	// Writeback): it changes when bytes reach the device, not durability.
	Writeback() error
	// AppendRead appends the payload at loc to dst, checking it holds
	// (ledger, entry).
	AppendRead(dst []byte, loc uint64, ledger, entry int64) ([]byte, error)
	// ReadRun reads the record at loc (which must hold (ledger, entry))
	// and the records after it into buf's spare capacity with one read,
	// calling fn for each until it returns false (entrylog.Log.ReadRun).
	// Payloads alias the returned buffer.
	ReadRun(buf []byte, loc uint64, ledger, entry int64, fn func(entrylog.RunRecord) bool) ([]byte, error)
	// Scan calls fn for every entry in every log, in file order, with its
	// location (for index rebuild).
	Scan(fn func(ledger, entry int64, loc uint64) error) error
	// ActiveLogID returns an id such that every log with a smaller id is
	// sealed (entrylog.Log.ActiveLogID).
	ActiveLogID() uint32
	// GC deletes logs with an id below req.horizon that hold no live
	// ledger, then compacts those whose live fraction is below
	// req.threshold: it re-appends their live entries, syncs them, and
	// reports the moves through req.relocate (which makes the index
	// durable) before it removes the old log. Logs at or above the horizon
	// are left alone: a checkpoint may still be setting index locations
	// for their entries.
	GC(ctx context.Context, req gcRequest) (gcStats, error)
	Close() error
}

// relocation is one entry moved by compaction.
type relocation struct {
	ledger, entry  int64
	oldLoc, newLoc uint64
}

// gcRequest is what one GC pass works with.
type gcRequest struct {
	live      func(ledger int64) bool
	threshold float64
	horizon   uint32
	relocate  func([]relocation) error
	// room returns how many bytes compaction may write now (free space
	// in the ledger directories less a margin); negative: unknown.
	room func() int64
}

// gcStats reports what one GC pass did.
type gcStats struct {
	LogsDeleted, LogsCompacted int
	BytesReclaimed             int64
	// Postponed counts logs not compacted for want of room; Need is the
	// live bytes the smallest of them would copy.
	Postponed int
	Need      int64
}

// ledgerMeta is the per-ledger state the index keeps.
type ledgerMeta struct {
	masterKey []byte
	fenced    bool
	hasLAC    bool
	lac       int64
	lacBody   []byte
}

// ledgerIndex maps (ledger, entry) to an entry-log location and keeps the
// per-ledger metadata.
type ledgerIndex interface {
	Put(ledger, entry int64, loc uint64) error
	// PutRun is Put(ledger, first+i, locs[i]) for every i, in one call.
	PutRun(ledger, first int64, locs []uint64) error
	// Get returns the location; ok is false when the entry is unknown.
	Get(ledger, entry int64) (loc uint64, ok bool, err error)
	// LastEntry returns the highest entry id with a location.
	LastEntry(ledger int64) (entry int64, ok bool, err error)
	// Meta returns the ledger's metadata; ok is false for an unknown ledger.
	Meta(ledger int64) (m ledgerMeta, ok bool, err error)
	// SetMeta creates or updates the ledger's metadata.
	SetMeta(ledger int64, m ledgerMeta) error
	Delete(ledger int64) error
	// Ledgers lists the known ledgers in ascending order.
	Ledgers() ([]int64, error)
	// Flush makes every Put, SetMeta and Delete so far durable.
	Flush() error
	Close() error
}
