package broker

import "github.com/magnetar-mq/magnetar/mledger"

// ManagedLedger is what a persistent topic needs from its storage: an
// ordered, durable log of entries with named cursors. The adapter over
// *mledger.ManagedLedger is in mledgeradapter.go; tests may supply fakes.
//
// Every method is safe for concurrent use.
type ManagedLedger interface {
	// AddEntry appends buf[off:] as the next entry. cb runs once the
	// entry is durable (or failed), in AddEntry order. buf[off:] must not
	// be modified afterwards; buf[:off] is free room handed over with it,
	// which storage may overwrite to frame the entry without copying it.
	AddEntry(buf []byte, off int, numMessages int, cb func(pos position, err error))
	// LastConfirmed returns the position of the last durable entry; ok is
	// false for an empty ledger, with pos then holding (currentLedger, -1).
	LastConfirmed() (pos position, ok bool)
	// ReadEntry reads one entry.
	ReadEntry(pos position) ([]byte, error)
	// OpenCursor opens (creating at initial if absent) a durable cursor.
	OpenCursor(name string, initial initialPosition) (cursor, error)
	// NewNonDurableCursor creates an in-memory cursor whose first entry is
	// start (inclusive), or the Earliest/Latest sentinels.
	NewNonDurableCursor(name string, start position) (cursor, error)
	// DeleteCursor removes a cursor and its persisted state.
	DeleteCursor(name string) error
	// CursorNames lists the durable cursors.
	CursorNames() []string
	// TailEntries returns up to max of the last entries, oldest first
	// (used to rebuild deduplication state at load).
	TailEntries(max int) ([][]byte, error)
	// Size returns the number of retained entries and their total bytes.
	Size() (entries, bytes int64)
	// Terminate refuses further adds and returns the last position.
	Terminate() (position, error)
	// Stats returns the ledger's internal statistics (ledgers, cursors)
	// for the admin API's internal stats.
	Stats() mledger.Stats
	// Close releases the ledger; pending adds complete first.
	Close() error
}
