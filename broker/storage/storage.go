package storage

import (
	"errors"

	"github.com/magnetar-mq/magnetar/mledger"
)

// Position addresses one entry: (ledger id, entry id), ordered
// lexicographically. It is the managed ledger's own position: this
// package adapts mledger, so the core's position is the one storage
// hands back, with no conversion between two copies of one type.
type Position = mledger.Position

// LedgerEntry is one stored entry read back (for dispatch, or by a
// feature reading a log of its own); Data is shared and must not be
// modified.
type LedgerEntry struct {
	Pos  Position
	Data []byte
}

// InitialPosition says where a new durable cursor starts.
type InitialPosition int

// Where a new durable cursor starts: after the last entry, or at the
// first retained one.
const (
	InitialLatest InitialPosition = iota
	InitialEarliest
)

// Cursor is what a subscription needs from its managed-ledger cursor
// (ManagedLedger.OpenCursor). The subscription's loop goroutine is its
// only user; a feature's cursor on a ledger of its own has one user too.
type Cursor interface {
	// ReadEntries returns up to max entries from the read Position and
	// advances it past them; none (and no error) when caught up. The
	// returned slice (not the entry data) is valid until the next call.
	ReadEntries(max int) ([]LedgerEntry, error)
	// Ack acknowledges single entries.
	Ack(pos ...Position) error
	// AckBatchIndexes acknowledges the batch indexes whose bits are clear
	// in ackSet; it reports whether the whole entry is now acknowledged.
	AckBatchIndexes(pos Position, ackSet []int64, batchSize int) (bool, error)
	// AckCumulative acknowledges every entry up to and including pos.
	AckCumulative(pos Position) error
	// BatchAckSet returns the still-unacked bits of a partially acked
	// batch entry, or nil.
	BatchAckSet(pos Position) []int64
	// MarkDelete returns the mark-delete Position.
	MarkDelete() Position
	// IsAcked reports whether pos was acknowledged (individually or
	// cumulatively).
	IsAcked(pos Position) bool
	// Seek moves the read Position to pos (inclusive), forgetting acks
	// at or after pos; Earliest/Latest sentinels are accepted.
	Seek(pos Position) error
	// SeekTime moves the cursor to the first entry published at or after
	// tsMillis.
	SeekTime(tsMillis int64) error
	// Backlog returns the entries and messages not yet acknowledged.
	Backlog() (entries, messages int64)
	// Durable reports whether the cursor persists.
	Durable() bool
	// ReadAt re-reads the entries at ps (ascending) from storage, for
	// redelivery: pending entries keep positions, not payloads. An error
	// matching ErrEntryGone means some Position is no longer stored
	// (trimmed or deleted); the caller re-reads one by one to find it.
	ReadAt(ps []Position) ([][]byte, error)
}

// ManagedLedger is what a persistent topic needs from its storage: an
// ordered, durable log of entries with named cursors. The adapter over
// *mledger.ManagedLedger is Ledger (mledger.go); tests may supply fakes.
//
// Every method is safe for concurrent use.
type ManagedLedger interface {
	// AddEntry appends buf[off:] as the next entry. cb runs once the
	// entry is durable (or failed), in AddEntry order. buf[off:] must not
	// be modified afterwards; buf[:off] is free room handed over with it,
	// which storage may overwrite to frame the entry without copying it.
	AddEntry(buf []byte, off int, numMessages int, cb func(pos Position, err error))
	// LastConfirmed returns the Position of the last durable entry; ok is
	// false for an empty ledger, with pos then holding (currentLedger, -1).
	LastConfirmed() (pos Position, ok bool)
	// ReadEntry reads one entry.
	ReadEntry(pos Position) ([]byte, error)
	// OpenCursor opens (creating at initial if absent) a durable cursor.
	OpenCursor(name string, initial InitialPosition) (Cursor, error)
	// NewNonDurableCursor creates an in-memory cursor whose first entry is
	// start (inclusive), or the Earliest/Latest sentinels.
	NewNonDurableCursor(name string, start Position) (Cursor, error)
	// DeleteCursor removes a cursor and its persisted state.
	DeleteCursor(name string) error
	// CursorNames lists the durable cursors.
	CursorNames() []string
	// TailEntries returns up to max of the last entries, oldest first
	// (used to rebuild deduplication state at load).
	TailEntries(max int) ([][]byte, error)
	// Size returns the number of retained entries and their total bytes.
	Size() (entries, bytes int64)
	// Terminate refuses further adds and returns the last Position.
	Terminate() (Position, error)
	// Stats returns the ledger's internal statistics (ledgers, cursors)
	// for the admin API's internal stats.
	Stats() mledger.Stats
	// Close releases the ledger; pending adds complete first.
	Close() error
}

// Errors of the storage the core reads and writes through (the adapter
// wraps mledger's in them; fakes return them). The broker re-exports
// the first three (broker.ErrTerminated, ErrClosed, ErrEntryGone).
var (
	// ErrTerminated: the ledger was terminated; no more adds.
	ErrTerminated = errors.New("broker: topic terminated")
	// ErrClosed: the ledger (or cursor) was closed.
	ErrClosed = errors.New("broker: closed")
	// ErrEntryGone: a position is no longer stored (trimmed or
	// deleted); final for that position.
	ErrEntryGone = errors.New("broker: entry no longer stored")
	// ErrNoEntries: there is nothing to read.
	ErrNoEntries = errors.New("broker: no entries")
	// ErrCursorNotFound: the named cursor does not exist.
	ErrCursorNotFound = errors.New("broker: cursor not found")
)
