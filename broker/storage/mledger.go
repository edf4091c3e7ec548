package storage

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// Timeout bounds one storage call made on behalf of a subscription or
// request.
const Timeout = 30 * time.Second

// Opener returns a broker.Deps.OpenLedger that opens topics as managed
// ledgers of f with configuration cfg, under the ledger policies the
// context carries (WithLedgerPolicies).
func Opener(f *mledger.Factory, cfg mledger.Config) func(ctx context.Context, name string) (ManagedLedger, error) {
	return func(ctx context.Context, name string) (ManagedLedger, error) {
		cfg := cfg
		applyRetention(ctx, &cfg)   // the topic's retention policy (policies.go)
		applyPersistence(ctx, &cfg) // and persistence policy (policies.go)
		ml, err := f.Open(ctx, name, cfg)
		if err != nil {
			return nil, err
		}
		return &Ledger{ml: ml}, nil
	}
}

// Ledger adapts *mledger.ManagedLedger to ManagedLedger.
type Ledger struct{ ml *mledger.ManagedLedger }

// Managed returns the managed ledger behind l.
func (l *Ledger) Managed() *mledger.ManagedLedger { return l.ml }

func storageCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), Timeout)
}

func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, mledger.ErrTerminated):
		return errors.Join(ErrTerminated, err)
	case errors.Is(err, mledger.ErrNoEntries):
		return errors.Join(ErrNoEntries, err)
	case errors.Is(err, mledger.ErrCursorNotFound):
		return errors.Join(ErrCursorNotFound, err)
	case errors.Is(err, mledger.ErrClosed):
		return errors.Join(ErrClosed, err)
	case errors.Is(err, mledger.ErrInvalidPosition):
		return errors.Join(ErrEntryGone, err)
	}
	return err
}

func (a *Ledger) AddEntry(buf []byte, off int, numMessages int, cb func(Position, error)) {
	a.ml.AddEntryHeadroom(buf, off, int32(numMessages), func(p mledger.Position, err error) { cb(p, mapErr(err)) })
}

func (a *Ledger) LastConfirmed() (Position, bool) {
	p, ok := a.ml.LastConfirmed()
	return p, ok
}

func (a *Ledger) ReadEntry(p Position) ([]byte, error) {
	ctx, cancel := storageCtx()
	defer cancel()
	e, err := a.ml.ReadEntry(ctx, p)
	return e.Data, mapErr(err)
}

func (a *Ledger) OpenCursor(name string, initial InitialPosition) (Cursor, error) {
	ctx, cancel := storageCtx()
	defer cancel()
	ip := mledger.InitialLatest
	if initial == InitialEarliest {
		ip = mledger.InitialEarliest
	}
	c, err := a.ml.OpenCursor(ctx, name, ip)
	if err != nil {
		return nil, mapErr(err)
	}
	return &LedgerCursor{c: c, ml: a.ml}, nil
}

func (a *Ledger) NewNonDurableCursor(name string, start Position) (Cursor, error) {
	c, err := a.ml.NewNonDurableCursor(name, start)
	if err != nil {
		return nil, mapErr(err)
	}
	return &LedgerCursor{c: c, ml: a.ml}, nil
}

func (a *Ledger) DeleteCursor(name string) error {
	ctx, cancel := storageCtx()
	defer cancel()
	return mapErr(a.ml.DeleteCursor(ctx, name))
}

func (a *Ledger) CursorNames() []string {
	var out []string
	for _, c := range a.ml.Cursors() {
		if c.IsDurable() {
			out = append(out, c.Name())
		}
	}
	return out
}

func (a *Ledger) TailEntries(max int) ([][]byte, error) {
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

func (a *Ledger) Size() (entries, bytes int64) { return a.ml.Size() }

func (a *Ledger) Terminate() (Position, error) {
	ctx, cancel := storageCtx()
	defer cancel()
	p, err := a.ml.Terminate(ctx)
	return p, mapErr(err)
}

func (a *Ledger) Stats() mledger.Stats { return a.ml.Stats() }

func (a *Ledger) SetInfoPropertiesHook(fn func(map[string]string)) {
	a.ml.SetInfoPropertiesHook(fn)
}
func (a *Ledger) InfoProperties() map[string]string { return a.ml.InfoProperties() }

func (a *Ledger) SetOffloadPolicy(p mledger.OffloadPolicy) { a.ml.SetOffloadPolicy(p) }
func (a *Ledger) StartOffload(p mledger.Position) error    { return a.ml.StartOffload(p) }
func (a *Ledger) OffloadStatus() mledger.OffloadStatus     { return a.ml.OffloadStatus() }

func (a *Ledger) Close() error {
	ctx, cancel := storageCtx()
	defer cancel()
	return mapErr(a.ml.Close(ctx))
}

// LedgerCursor adapts *mledger.Cursor to Cursor. Its only user is the
// subscription loop, so ReadEntries reuses one result slice.
type LedgerCursor struct {
	c   *mledger.Cursor
	ml  *mledger.ManagedLedger
	out []LedgerEntry

	// Reads share one deadline context, renewed when less than half of
	// Timeout is left: a read is bounded by Timeout/2 ..
	// Timeout without a context and timer per read (most reads
	// are served from the cache). The last one expires on its own.
	rctx      context.Context
	rcancel   context.CancelFunc
	rdeadline time.Time
}

// Managed returns the managed-ledger cursor behind a, and Ledger its
// managed ledger.
func (a *LedgerCursor) Managed() *mledger.Cursor       { return a.c }
func (a *LedgerCursor) Ledger() *mledger.ManagedLedger { return a.ml }

// DropReadCtx releases the shared read deadline (and its timer) while
// the cursor's subscription sleeps; the next read makes a new one.
func (a *LedgerCursor) DropReadCtx() {
	if a.rcancel != nil {
		a.rcancel()
		a.rctx, a.rcancel = nil, nil
	}
}

func (a *LedgerCursor) readCtx() context.Context {
	if now := time.Now(); a.rctx == nil || a.rdeadline.Sub(now) < Timeout/2 {
		if a.rcancel != nil {
			a.rcancel()
		}
		a.rdeadline = now.Add(Timeout)
		a.rctx, a.rcancel = context.WithDeadline(context.Background(), a.rdeadline)
	}
	return a.rctx
}

// ReadEntries returns a slice valid until the next call.
func (a *LedgerCursor) ReadEntries(max int) ([]LedgerEntry, error) {
	es, err := a.c.ReadEntries(a.readCtx(), max)
	if err != nil {
		return nil, mapErr(err)
	}
	clear(a.out)
	out := a.out[:0]
	for _, e := range es {
		out = append(out, LedgerEntry{Pos: e.Pos, Data: e.Data})
	}
	a.out = out
	return out, nil
}

// ReadAt re-reads entries for redelivery (through the entry cache).
func (a *LedgerCursor) ReadAt(ps []Position) ([][]byte, error) {
	es, err := a.ml.ReadPositions(a.readCtx(), ps)
	if err != nil {
		return nil, mapErr(err)
	}
	out := make([][]byte, len(es))
	for i, e := range es {
		out[i] = e.Data
	}
	return out, nil
}

func (a *LedgerCursor) Ack(ps ...Position) error {
	return mapErr(a.c.Delete(ps...))
}

func (a *LedgerCursor) AckBatchIndexes(p Position, ackSet []int64, _ int) (bool, error) {
	set := make([]uint64, len(ackSet))
	for i, w := range ackSet {
		set[i] = uint64(w)
	}
	if err := a.c.AckBatchIndexes(p, set); err != nil {
		return false, mapErr(err)
	}
	return a.c.IsAcked(p), nil
}

func (a *LedgerCursor) AckCumulative(p Position) error {
	return mapErr(a.c.MarkDelete(p))
}

func (a *LedgerCursor) BatchAckSet(p Position) []int64 {
	s := a.c.GetBatchAckSet(p)
	if s == nil {
		return nil
	}
	out := make([]int64, len(s))
	for i, w := range s {
		out[i] = int64(w)
	}
	return out
}

func (a *LedgerCursor) MarkDelete() Position    { return a.c.MarkDeletePosition() }
func (a *LedgerCursor) IsAcked(p Position) bool { return a.c.IsAcked(p) }
func (a *LedgerCursor) Seek(p Position) error   { return mapErr(a.c.Reset(p)) }
func (a *LedgerCursor) Backlog() (int64, int64) { return a.c.Backlog() }
func (a *LedgerCursor) Durable() bool           { return a.c.IsDurable() }

func (a *LedgerCursor) SeekTime(ts int64) error {
	ctx, cancel := storageCtx()
	defer cancel()
	_, err := a.c.ResetByPublishTime(ctx, ts, PublishTime)
	return mapErr(err)
}

// PublishTime extracts publish_time from a stored entry.
func PublishTime(data []byte) (int64, error) {
	e, err := pulsarproto.ParseEntry(data)
	if err != nil {
		return 0, err
	}
	var md pulsarproto.Metadata
	if err := pulsarproto.ParseMetadata(e.Metadata, &md); err != nil {
		return 0, err
	}
	return int64(md.PublishTime), nil
}

// SetReadBound holds every cursor of the ledger before the Position f
// returns (broker.Topic.SetReadBound).
func (a *Ledger) SetReadBound(f func() (Position, bool)) {
	a.ml.SetReadBound(f)
}

// ManagedCursor returns the managed-ledger cursor behind c if it is one
// Opener's ledgers made (OpenCursor, NewNonDurableCursor), or nil.
func ManagedCursor(c Cursor) *mledger.Cursor {
	if a, ok := c.(*LedgerCursor); ok {
		return a.c
	}
	return nil
}

// Skip skips n entries of the cursor's backlog (n < 0: all of it);
// the cursor's user only.
func (a *LedgerCursor) Skip(n int64) error {
	if n < 0 {
		return a.c.ClearBacklog()
	}
	return a.c.SkipEntries(n)
}

// FirstPublishedAt finds the first entry of the ledger published at or
// after cutoff (unix ms); found is false when every entry is older. It
// reads storage: any goroutine.
func (a *LedgerCursor) FirstPublishedAt(ctx context.Context, cutoff int64) (p Position, found bool, err error) {
	mp, found, err := a.ml.FindByPublishTime(ctx, cutoff, PublishTime)
	return mp, found, err
}

// AckBefore acknowledges every entry before p (found false: the whole
// backlog), never moving the mark-delete position back: message
// expiry, with FirstPublishedAt's answer. The cursor's user only.
func (a *LedgerCursor) AckBefore(p Position, found bool) error {
	if !found {
		return a.c.ClearBacklog()
	}
	prev, ok := positionBefore(a.ml, p)
	if ok && a.c.MarkDeletePosition().Less(prev) {
		return a.c.MarkDelete(prev)
	}
	return nil
}

// positionBefore returns the entry before p in ml.
func positionBefore(ml *mledger.ManagedLedger, p mledger.Position) (mledger.Position, bool) {
	if p.EntryID > 0 {
		return mledger.Position{LedgerID: p.LedgerID, EntryID: p.EntryID - 1}, true
	}
	var prev mledger.Position
	ok := false
	for _, l := range ml.Stats().Ledgers {
		if l.LedgerID >= p.LedgerID {
			break
		}
		if l.Entries > 0 {
			prev, ok = mledger.Position{LedgerID: l.LedgerID, EntryID: l.Entries - 1}, true
		}
	}
	return prev, ok
}

// EarliestPublish returns the publish time (unix ms) of the first entry
// the cursor has not acknowledged, 0 when there is none or it cannot be
// read (a storage read).
func (a *LedgerCursor) EarliestPublish() int64 {
	next, ok := mledger.NextPosition(a.ml.Stats().Ledgers, a.c.MarkDeletePosition())
	if !ok {
		return 0
	}
	ctx, cancel := storageCtx()
	defer cancel()
	e, err := a.ml.ReadEntry(ctx, next)
	if err != nil {
		return 0
	}
	pt, err := PublishTime(e.Data)
	if err != nil {
		return 0
	}
	return pt
}
