package broker

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
)

// storageTimeout bounds one storage call made on behalf of a subscription
// or request.
const storageTimeout = 30 * time.Second

// LedgerOpener returns a Deps.OpenLedger that opens topics as managed
// ledgers of f with configuration cfg.
func LedgerOpener(f *mledger.Factory, cfg mledger.Config) func(ctx context.Context, name string) (ManagedLedger, error) {
	return func(ctx context.Context, name string) (ManagedLedger, error) {
		cfg := cfg
		applyRetention(ctx, &cfg)   // the topic's retention policy (policy.go)
		applyPersistence(ctx, &cfg) // and persistence policy (policy.go)
		ml, err := f.Open(ctx, name, cfg)
		if err != nil {
			return nil, err
		}
		return &mlAdapter{ml: ml}, nil
	}
}

// mlAdapter adapts *mledger.ManagedLedger to ManagedLedger.
type mlAdapter struct{ ml *mledger.ManagedLedger }

func toPos(p mledger.Position) position { return position{p.LedgerID, p.EntryID} }
func fromPos(p position) mledger.Position {
	return mledger.Position{LedgerID: p.LedgerID, EntryID: p.EntryID}
}
func storageCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), storageTimeout)
}

func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, mledger.ErrTerminated):
		return errors.Join(ErrTerminated, err)
	case errors.Is(err, mledger.ErrNoEntries):
		return errors.Join(errNoEntries, err)
	case errors.Is(err, mledger.ErrCursorNotFound):
		return errors.Join(errCursorNotFound, err)
	case errors.Is(err, mledger.ErrClosed):
		return errors.Join(ErrClosed, err)
	case errors.Is(err, mledger.ErrInvalidPosition):
		return errors.Join(errEntryGone, err)
	}
	return err
}

func (a *mlAdapter) AddEntry(buf []byte, off int, numMessages int, cb func(position, error)) {
	a.ml.AddEntryHeadroom(buf, off, int32(numMessages), func(p mledger.Position, err error) { cb(toPos(p), mapErr(err)) })
}

func (a *mlAdapter) LastConfirmed() (position, bool) {
	p, ok := a.ml.LastConfirmed()
	return toPos(p), ok
}

func (a *mlAdapter) ReadEntry(p position) ([]byte, error) {
	ctx, cancel := storageCtx()
	defer cancel()
	e, err := a.ml.ReadEntry(ctx, fromPos(p))
	return e.Data, mapErr(err)
}

func (a *mlAdapter) OpenCursor(name string, initial initialPosition) (cursor, error) {
	ctx, cancel := storageCtx()
	defer cancel()
	ip := mledger.InitialLatest
	if initial == initialEarliest {
		ip = mledger.InitialEarliest
	}
	c, err := a.ml.OpenCursor(ctx, name, ip)
	if err != nil {
		return nil, mapErr(err)
	}
	return &cursorAdapter{c: c, ml: a.ml}, nil
}

func (a *mlAdapter) NewNonDurableCursor(name string, start position) (cursor, error) {
	c, err := a.ml.NewNonDurableCursor(name, fromPos(start))
	if err != nil {
		return nil, mapErr(err)
	}
	return &cursorAdapter{c: c, ml: a.ml}, nil
}

func (a *mlAdapter) DeleteCursor(name string) error {
	ctx, cancel := storageCtx()
	defer cancel()
	return mapErr(a.ml.DeleteCursor(ctx, name))
}

func (a *mlAdapter) CursorNames() []string {
	var out []string
	for _, c := range a.ml.Cursors() {
		if c.IsDurable() {
			out = append(out, c.Name())
		}
	}
	return out
}

func (a *mlAdapter) TailEntries(max int) ([][]byte, error) {
	ls := a.ml.Stats().Ledgers
	var out [][]byte
	ctx, cancel := storageCtx()
	defer cancel()
	for i := len(ls) - 1; i >= 0 && len(out) < max; i-- {
		for e := ls[i].Entries - 1; e >= 0 && len(out) < max; e-- {
			en, err := a.ml.ReadEntry(ctx, mledger.Position{LedgerID: ls[i].LedgerID, EntryID: e})
			if err != nil {
				if errors.Is(err, mledger.ErrInvalidPosition) {
					break // trimmed or not readable: stop at this ledger
				}
				return nil, mapErr(err)
			}
			out = append(out, en.Data)
		}
	}
	slices.Reverse(out)
	return out, nil
}

func (a *mlAdapter) Size() (entries, bytes int64) { return a.ml.Size() }

func (a *mlAdapter) Terminate() (position, error) {
	ctx, cancel := storageCtx()
	defer cancel()
	p, err := a.ml.Terminate(ctx)
	return toPos(p), mapErr(err)
}

func (a *mlAdapter) Stats() mledger.Stats { return a.ml.Stats() }

func (a *mlAdapter) SetInfoPropertiesHook(fn func(map[string]string)) {
	a.ml.SetInfoPropertiesHook(fn)
}
func (a *mlAdapter) InfoProperties() map[string]string { return a.ml.InfoProperties() }

func (a *mlAdapter) SetOffloadPolicy(p mledger.OffloadPolicy) { a.ml.SetOffloadPolicy(p) }
func (a *mlAdapter) StartOffload(p mledger.Position) error    { return a.ml.StartOffload(p) }
func (a *mlAdapter) OffloadStatus() mledger.OffloadStatus     { return a.ml.OffloadStatus() }

func (a *mlAdapter) Close() error {
	ctx, cancel := storageCtx()
	defer cancel()
	return mapErr(a.ml.Close(ctx))
}

// cursorAdapter adapts *mledger.Cursor to cursor. Its only user is the
// subscription loop, so ReadEntries reuses one result slice.
type cursorAdapter struct {
	c   *mledger.Cursor
	ml  *mledger.ManagedLedger
	out []ledgerEntry

	// Reads share one deadline context, renewed when less than half of
	// storageTimeout is left: a read is bounded by storageTimeout/2 ..
	// storageTimeout without a context and timer per read (most reads
	// are served from the cache). The last one expires on its own.
	rctx      context.Context
	rcancel   context.CancelFunc
	rdeadline time.Time
}

func (a *cursorAdapter) readCtx() context.Context {
	if now := time.Now(); a.rctx == nil || a.rdeadline.Sub(now) < storageTimeout/2 {
		if a.rcancel != nil {
			a.rcancel()
		}
		a.rdeadline = now.Add(storageTimeout)
		a.rctx, a.rcancel = context.WithDeadline(context.Background(), a.rdeadline)
	}
	return a.rctx
}

// ReadEntries returns a slice valid until the next call.
func (a *cursorAdapter) ReadEntries(max int) ([]ledgerEntry, error) {
	es, err := a.c.ReadEntries(a.readCtx(), max)
	if err != nil {
		return nil, mapErr(err)
	}
	clear(a.out)
	out := a.out[:0]
	for _, e := range es {
		out = append(out, ledgerEntry{Pos: toPos(e.Pos), Data: e.Data})
	}
	a.out = out
	return out, nil
}

// ReadAt re-reads entries for redelivery (through the entry cache).
func (a *cursorAdapter) ReadAt(ps []position) ([][]byte, error) {
	mp := make([]mledger.Position, len(ps))
	for i, p := range ps {
		mp[i] = fromPos(p)
	}
	es, err := a.ml.ReadPositions(a.readCtx(), mp)
	if err != nil {
		return nil, mapErr(err)
	}
	out := make([][]byte, len(es))
	for i, e := range es {
		out[i] = e.Data
	}
	return out, nil
}

func (a *cursorAdapter) Ack(ps ...position) error {
	mp := make([]mledger.Position, len(ps))
	for i, p := range ps {
		mp[i] = fromPos(p)
	}
	return mapErr(a.c.Delete(mp...))
}

func (a *cursorAdapter) AckBatchIndexes(p position, ackSet []int64, _ int) (bool, error) {
	set := make([]uint64, len(ackSet))
	for i, w := range ackSet {
		set[i] = uint64(w)
	}
	if err := a.c.AckBatchIndexes(fromPos(p), set); err != nil {
		return false, mapErr(err)
	}
	return a.c.IsAcked(fromPos(p)), nil
}

func (a *cursorAdapter) AckCumulative(p position) error { return mapErr(a.c.MarkDelete(fromPos(p))) }

func (a *cursorAdapter) BatchAckSet(p position) []int64 {
	s := a.c.GetBatchAckSet(fromPos(p))
	if s == nil {
		return nil
	}
	out := make([]int64, len(s))
	for i, w := range s {
		out[i] = int64(w)
	}
	return out
}

func (a *cursorAdapter) MarkDelete() position    { return toPos(a.c.MarkDeletePosition()) }
func (a *cursorAdapter) IsAcked(p position) bool { return a.c.IsAcked(fromPos(p)) }
func (a *cursorAdapter) Seek(p position) error   { return mapErr(a.c.Reset(fromPos(p))) }
func (a *cursorAdapter) Backlog() (int64, int64) { return a.c.Backlog() }
func (a *cursorAdapter) Durable() bool           { return a.c.IsDurable() }

func (a *cursorAdapter) SeekTime(ts int64) error {
	ctx, cancel := storageCtx()
	defer cancel()
	_, err := a.c.ResetByPublishTime(ctx, ts, entryPublishTime)
	return mapErr(err)
}

// entryPublishTime extracts publish_time from a stored entry.
func entryPublishTime(data []byte) (int64, error) {
	pm, err := parseEntryMeta(data, nil)
	return pm.publishTime, err
}

// SetReadBound holds every cursor of the ledger before the position f
// returns (Topic.SetReadBound).
func (a *mlAdapter) SetReadBound(f func() (position, bool)) {
	if f == nil {
		a.ml.SetReadBound(nil)
		return
	}
	a.ml.SetReadBound(func() (mledger.Position, bool) {
		p, ok := f()
		return fromPos(p), ok
	})
}
