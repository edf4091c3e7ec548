package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/protocol/bkproto"
)

// Local is the in-process bookie client: it calls a *bookie.Bookie
// directly, with no network hop (standalone, E=Qw=Qa=1). Its method set is
// the ledger package's BookieClient (plain types, bkproto sentinels), so it
// satisfies that interface without this package importing ledger.
//
// Safe for concurrent use.
type Local struct {
	b *bookie.Bookie
}

// NewLocal returns an in-process client of b.
func NewLocal(b *bookie.Bookie) *Local { return &Local{b: b} }

// Local reports true: calls return without a network round trip.
func (l *Local) Local() bool { return true }

// AddEntry stores entry; done runs once the bookie made it durable.
func (l *Local) AddEntry(ledgerID, entryID int64, masterKey, entry []byte, recovery bool, done func(error)) {
	l.b.AddEntry(ledgerID, entryID, masterKey, entry, recovery, func(err error) {
		if err != nil {
			err = ProtoError(err)
		}
		done(err)
	})
}

// ReadEntry returns the stored entry (entryID -1: the last); with fence it
// fences the ledger first.
func (l *Local) ReadEntry(ctx context.Context, ledgerID, entryID int64, fence bool, masterKey []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if fence {
		if err := l.b.Fence(ledgerID, masterKey); err != nil {
			return nil, ProtoError(err)
		}
	}
	v, err := l.b.ReadEntry(ledgerID, entryID)
	if err != nil {
		return nil, ProtoError(err)
	}
	return v, nil
}

// ReadLAC returns the explicit LAC (-1 if none) and the last stored entry
// (nil if none).
func (l *Local) ReadLAC(ctx context.Context, ledgerID int64) (int64, []byte, error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	return readLAC(l.b, ledgerID)
}

func readLAC(b *bookie.Bookie, ledgerID int64) (int64, []byte, error) {
	lac, _, err := b.ReadLAC(ledgerID)
	switch {
	case errors.Is(err, bookie.ErrNoEntry):
		lac = -1
	case err != nil:
		return 0, nil, ProtoError(err)
	}
	last, err := b.ReadEntry(ledgerID, -1)
	switch {
	case errors.Is(err, bookie.ErrNoEntry):
		last = nil
	case err != nil:
		return 0, nil, ProtoError(err)
	}
	return lac, last, nil
}

// WriteLAC stores an explicit LAC.
func (l *Local) WriteLAC(ctx context.Context, ledgerID, lac int64, masterKey, body []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := l.b.WriteLAC(ledgerID, lac, masterKey, body); err != nil {
		return ProtoError(err)
	}
	return nil
}

// DeleteLedger drops the ledger's data (ENOLEDGER is not an error).
func (l *Local) DeleteLedger(ctx context.Context, ledgerID int64) error {
	if err := l.b.DeleteLedger(ledgerID); err != nil && !errors.Is(err, bookie.ErrNoLedger) {
		return ProtoError(err)
	}
	return nil
}

var errMap = []struct{ from, to error }{
	{bookie.ErrFenced, bkproto.ErrFenced},
	{bookie.ErrUnauthorized, bkproto.ErrUnauthorized},
	{bookie.ErrReadOnly, bkproto.ErrReadOnly},
	{bookie.ErrNoLedger, bkproto.ErrNoLedger},
	{bookie.ErrNoEntry, bkproto.ErrNoEntry},
	{bookie.ErrTooManyRequests, bkproto.ErrTooManyRequests},
	{bookie.ErrBadRequest, bkproto.ErrBadRequest},
}

// ProtoError wraps a bookie error with the matching bkproto status
// sentinel (bkproto.ErrIO for anything unknown), keeping the original.
func ProtoError(err error) error {
	if err == nil {
		return nil
	}
	for _, m := range errMap {
		if errors.Is(err, m.from) {
			return fmt.Errorf("%w: %w", m.to, err)
		}
	}
	return fmt.Errorf("%w: %w", bkproto.ErrIO, err)
}
