package compact

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// compactedCursor is the cursor of a read_compacted subscription: while
// its read position is at or before the compaction horizon it serves the
// compacted ledger's entries (those at or after the read position, not
// yet acknowledged), then it moves the inner cursor to the horizon and
// reads the topic after it. Acknowledgements and backlog are the inner
// cursor's (compacted entries keep their topic positions). Used only by
// the subscription loop.
type compactedCursor struct {
	storage.Cursor                 // the subscription's cursor on the topic
	mc             *mledger.Cursor // its managed-ledger cursor
	cl             ledger

	r       mledger.ReadLedger // nil: reading the tail
	horizon position
	idx     int64 // next compacted entry to read
	skipTo  position
	skip    bool     // drop tail entries at or before skipTo (after the switch)
	next    position // compacted phase: search key after the last entry served
	out     []storage.LedgerEntry
}

func newCompactedCursor(inner storage.Cursor, mc *mledger.Cursor, cl ledger) *compactedCursor {
	c := &compactedCursor{Cursor: inner, mc: mc, cl: cl}
	c.load(mc.ReadPosition())
	return c
}

// Unwrap returns the subscription's cursor on the topic (the core finds
// the durable cursor through it).
func (c *compactedCursor) Unwrap() storage.Cursor { return c.Cursor }

// storageTimeout bounds one storage call made for a cursor read.
const storageTimeout = 30 * time.Second

func storageCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), storageTimeout)
}

// load opens the current compacted ledger and positions idx at the first
// entry at or after from; with nothing to serve it switches to the tail.
func (c *compactedCursor) load(from position) {
	if c.r != nil {
		c.r.Close()
		c.r = nil
	}
	ctx, cancel := storageCtx()
	defer cancel()
	r, st, err := c.cl.openCompacted(ctx)
	if err != nil {
		if !errors.Is(err, mledger.ErrNoEntries) {
			c.toTail(position{}, false)
		}
		return
	}
	c.horizon = st.Horizon
	c.next = from
	if from.Compare(c.horizon) > 0 && from != earliest {
		r.Close()
		return
	}
	// Binary search for the first entry at or after from.
	lo, hi := int64(0), r.LastAddConfirmed()+1
	for lo < hi {
		mid := (lo + hi) / 2
		es, err := r.Read(ctx, mid, mid)
		if err != nil || len(es) != 1 {
			r.Close()
			c.toTail(position{}, false)
			return
		}
		p, _, err := splitCompacted(es[0])
		if err != nil || p.Compare(from) >= 0 {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	c.r, c.idx = r, lo
}

// reload switches to a newly committed compacted ledger: in the
// compacted phase it continues after the last position served.
func (c *compactedCursor) reload() {
	if c.r == nil {
		return
	}
	c.load(c.next)
}

// toTail moves the inner cursor to just after the horizon.
func (c *compactedCursor) toTail(h position, skip bool) {
	if c.r != nil {
		c.r.Close()
		c.r = nil
	}
	if skip {
		c.mc.SetReadPosition(h)
		c.skipTo, c.skip = h, true
	}
}

func (c *compactedCursor) ReadEntries(max int) ([]storage.LedgerEntry, error) {
	for c.r != nil {
		last := c.r.LastAddConfirmed()
		if c.idx > last {
			c.toTail(c.horizon, true)
			break
		}
		ctx, cancel := storageCtx()
		es, err := c.r.Read(ctx, c.idx, min(c.idx+int64(max)-1, last))
		cancel()
		if err != nil {
			return nil, err
		}
		clear(c.out)
		c.out = c.out[:0]
		for _, raw := range es {
			c.idx++
			pos, data, err := splitCompacted(raw)
			if err != nil {
				return nil, err
			}
			if c.mc.IsAcked(pos) {
				continue
			}
			c.out = append(c.out, storage.LedgerEntry{Pos: pos, Data: data})
		}
		if len(c.out) > 0 {
			lp := c.out[len(c.out)-1].Pos
			c.next = position{LedgerID: lp.LedgerID, EntryID: lp.EntryID + 1}
			return c.out, nil
		}
	}
	es, err := c.Cursor.ReadEntries(max)
	if err != nil || !c.skip {
		return es, err
	}
	out := es[:0]
	for _, e := range es {
		if e.Pos.Compare(c.skipTo) > 0 {
			out = append(out, e)
		}
	}
	if len(es) > 0 {
		c.skip = false
		if len(out) == 0 {
			return c.ReadEntries(max)
		}
	}
	return out, nil
}

func (c *compactedCursor) Seek(p position) error {
	if err := c.Cursor.Seek(p); err != nil {
		return err
	}
	c.skip = false
	c.load(c.mc.ReadPosition())
	return nil
}

func (c *compactedCursor) SeekTime(ts int64) error {
	if err := c.Cursor.SeekTime(ts); err != nil {
		return err
	}
	c.skip = false
	c.load(c.mc.ReadPosition())
	return nil
}

// ledger is the compaction side of a topic's managed ledger.
type ledger struct{ ml *mledger.ManagedLedger }

func (a ledger) compactionState() (mledger.Compaction, bool) { return a.ml.CompactionState() }

func (a ledger) beginCompaction(ctx context.Context) (mledger.WriteLedger, error) {
	return a.ml.BeginCompaction(ctx)
}

func (a ledger) commitCompaction(ctx context.Context, w mledger.WriteLedger, h position) (int64, error) {
	return a.ml.CommitCompaction(ctx, w, h)
}

func (a ledger) abortCompaction(ctx context.Context, w mledger.WriteLedger) error {
	return a.ml.AbortCompaction(ctx, w)
}

func (a ledger) deleteCompacted(ctx context.Context, id int64) error {
	return a.ml.DeleteCompactedLedger(ctx, id)
}

func (a ledger) openCompacted(ctx context.Context) (mledger.ReadLedger, mledger.Compaction, error) {
	return a.ml.OpenCompactedLedger(ctx)
}

func (a ledger) readAfter(ctx context.Context, from, to position, fn func(position, []byte) error) error {
	start := earliest
	if from != earliest {
		start = position{LedgerID: from.LedgerID, EntryID: from.EntryID + 1}
	}
	name := fmt.Sprintf("__compactor-%d", compactorReads.Add(1))
	cur, err := a.ml.NewNonDurableCursor(name, start)
	if err != nil {
		return err
	}
	defer a.ml.DeleteCursor(context.Background(), name)
	for {
		es, err := cur.ReadEntries(ctx, 100)
		if err != nil && !errors.Is(err, mledger.ErrNoEntries) {
			return err
		}
		if len(es) == 0 {
			return nil
		}
		for _, e := range es {
			p := e.Pos
			if p.Compare(to) > 0 {
				return nil
			}
			if err := fn(p, e.Data); err != nil {
				return err
			}
			if p == to {
				return nil
			}
		}
	}
}

var compactorReads atomic.Int64

// LastReadable implements broker.LastReadableCursor: it returns, when lac is at or before the compaction horizon,
// the position and batch index (-1: no batch) of the compacted ledger's
// last entry (ok false: the compacted ledger is empty). applies is false
// when lac is after the horizon (the topic's last entry is readable).
// Safe off the loop: it touches no cursor state.
func (c *compactedCursor) LastReadable(lac position) (pos position, batchIndex int32, ok, applies bool) {
	st, has := c.cl.compactionState()
	if !has || lac.Compare(st.Horizon) > 0 {
		return position{}, -1, false, false
	}
	ctx, cancel := storageCtx()
	defer cancel()
	r, _, err := c.cl.openCompacted(ctx)
	if err != nil {
		return position{}, -1, false, false
	}
	defer r.Close()
	n := r.LastAddConfirmed()
	if n < 0 {
		return st.Horizon, -1, false, true
	}
	es, err := r.Read(ctx, n, n)
	if err != nil || len(es) != 1 {
		return position{}, -1, false, false
	}
	p, data, err := splitCompacted(es[0])
	if err != nil {
		return position{}, -1, false, false
	}
	if e, err := pulsarproto.ParseEntry(data); err == nil {
		var md pulsarproto.Metadata
		if pulsarproto.ParseMetadata(e.Metadata, &md) == nil && md.Batch {
			return p, int32(md.NumMessages() - 1), true, true
		}
	}
	return p, -1, true, true
}
