package mledger

import (
	"context"
)

// LedgerStore is what a managed ledger needs from the ledger layer: create
// ledgers to write, open existing ones to read (with recovery) and delete
// them. The `ledger` client package implements it over bookies (through a
// thin adapter, since it cannot import mledger); mledger/memstore is an
// in-memory implementation for tests.
//
// Every method is safe for concurrent use.
type LedgerStore interface {
	// Create creates a new, empty, open ledger owned by the caller.
	Create(ctx context.Context) (WriteLedger, error)
	// Open opens ledger id for reading. If the ledger is still open (its
	// writer may be alive somewhere) Open runs recovery: it fences the old
	// writer, so that its further adds fail, and closes the ledger at the
	// last entry that may have been acknowledged. The returned ledger's
	// LastAddConfirmed and Length are then final.
	Open(ctx context.Context, id int64) (ReadLedger, error)
	// Delete deletes a ledger. Deleting an absent ledger is not an error.
	Delete(ctx context.Context, id int64) error
}

// WriteLedger is a ledger opened for writing by its single writer.
//
// Safe for concurrent use. AddAsync callbacks are invoked sequentially (never
// two at once) in entry-id order, never on the goroutine that called AddAsync
// before it returned (the managed ledger calls AddAsync with its lock held).
// After one add fails, every later add on the same ledger fails too.
type WriteLedger interface {
	// ID returns the ledger id.
	ID() int64
	// AddAsync appends data as the next entry. data must not be modified
	// until cb has been called. cb receives the entry id, or an error.
	AddAsync(data []byte, cb func(entryID int64, err error))
	// LastAddConfirmed returns the highest entry id such that it and all
	// before it were acknowledged; -1 if none. It already includes an
	// entry when that entry's AddAsync callback runs.
	LastAddConfirmed() int64
	// Read returns entries first..last inclusive (last <= LastAddConfirmed).
	Read(ctx context.Context, first, last int64) ([][]byte, error)
	// Close closes the ledger at LastAddConfirmed after waiting for pending
	// adds. Further adds fail.
	Close(ctx context.Context) error
}

// HeadroomWriter is optionally implemented by a WriteLedger that can frame
// an entry in free room in front of its data instead of copying it
// (*ledger.WriteHandle writes the 36-byte BookKeeper entry header there).
// The managed ledger uses it for an entry's first attempt when the entry
// came with room (AddEntryHeadroom), AddAsync otherwise.
type HeadroomWriter interface {
	// AddWithHeadroom is AddAsync for data = buf[off:]; the ledger may
	// overwrite buf[:off] and read buf until cb has been called, and the
	// caller must not use buf[:off] again. With too little room it
	// copies, as AddAsync.
	AddWithHeadroom(buf []byte, off int, cb func(entryID int64, err error))
}

// EntryHeadroom is the room in front of an entry's data that
// AddEntryHeadroom callers should leave: what the bookie-backed store needs
// (bkproto.EntryHeaderSize, the BookKeeper entry header; a literal so that
// mledger stays independent of the wire protocol, checked equal by
// the compile-time assertions in headroom_const_test.go).
const EntryHeadroom = 36

// ReadLedger is a closed (or recovered) ledger opened for reading.
type ReadLedger interface {
	// ID returns the ledger id.
	ID() int64
	// LastAddConfirmed returns the last entry id; -1 for an empty ledger.
	LastAddConfirmed() int64
	// Length returns the sum of the entries' sizes in bytes.
	Length() int64
	// Read returns entries first..last inclusive.
	Read(ctx context.Context, first, last int64) ([][]byte, error)
	// Close releases the handle.
	Close() error
}
