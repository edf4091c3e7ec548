package mledger

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/metadata"
)

// Cursor is a subscription's position in a managed ledger: a mark-delete
// position plus individually acknowledged entries and partially
// acknowledged batches beyond it, and an in-memory read position.
//
// Durable cursors persist their ack state (see the package documentation);
// non-durable cursors live in memory only.
//
// Safe for concurrent use, except that ReadEntries / ReadEntriesOrWait must
// not run concurrently on one cursor (one dispatcher owns the reads).
type Cursor struct {
	ml      *ManagedLedger
	name    string
	durable bool
	path    string

	// persistMu serialises persistence I/O. Lock order: see doc.go.
	persistMu   sync.Mutex
	pl          *cursorLedger // current cursor ledger; nil until the first snapshot
	nodeVersion metadata.Version
	staleLedger int64 // recovered cursor ledger to delete after the next snapshot, or -1

	mu           sync.Mutex
	st           *ackState
	readPos      Position
	seekGen      uint64
	pendingAcks  []Position            // acked since the last persist
	pendingBatch map[Position]struct{} // batch sets changed since the last persist
	needSnapshot bool
	dirty        bool
	lastPersist  time.Time
	// persistedMD is the mark-delete of the last successful persist (or
	// recovery); trimming uses it, so a crash can never revert a cursor
	// into a deleted ledger.
	persistedMD Position
	closed      bool
	// props are the cursor's properties (Pulsar's cursor properties:
	// subscription properties and flags such as a replicated
	// subscription's), written with the cursor node. Never modified in
	// place: SetProperties swaps the map.
	props map[string]string
}

func newCursor(ml *ManagedLedger, name string, durable bool, md Position) *Cursor {
	c := &Cursor{
		ml:          ml,
		name:        name,
		durable:     durable,
		path:        ml.path + "/" + escapeName(name),
		st:          newAckState(md),
		readPos:     Position{md.LedgerID, md.EntryID + 1},
		persistedMD: md,
		staleLedger: -1,
	}
	return c
}

// Name returns the cursor name.
func (c *Cursor) Name() string { return c.name }

// IsDurable reports whether the cursor's state is persisted.
func (c *Cursor) IsDurable() bool { return c.durable }

// OpenCursor opens the durable cursor name, creating it at initial if it
// does not exist (an existing cursor ignores initial).
func (ml *ManagedLedger) OpenCursor(ctx context.Context, name string, initial InitialPosition) (*Cursor, error) {
	ml.mu.Lock()
	if ml.state == stateClosed {
		ml.mu.Unlock()
		return nil, ErrClosed
	}
	if c := ml.cursors.get(name); c != nil {
		ml.mu.Unlock()
		if !c.durable {
			return nil, fmt.Errorf("cursor %q: %w", name, ErrCursorExists)
		}
		return c, nil
	}
	md := ml.endLocked()
	if initial == InitialEarliest {
		md = ml.beforeFirstLocked()
	}
	ml.mu.Unlock()
	c := newCursor(ml, name, true, md)
	node := appendCursorNode(nil, &cursorNode{ledgerID: -1, markDelete: md})
	v, err := ml.meta.Put(ctx, c.path, node, metadata.NotExists)
	if err != nil {
		return nil, fmt.Errorf("create cursor %q: %w", name, err)
	}
	c.nodeVersion = v
	c.lastPersist = ml.f.opts.Now()
	ml.mu.Lock()
	defer ml.mu.Unlock()
	if other := ml.cursors.get(name); other != nil {
		return other, nil
	}
	ml.cursors.put(c)
	return c, nil
}

// NewNonDurableCursor creates an in-memory cursor whose first entry is
// start (inclusive); Earliest and Latest are accepted.
func (ml *ManagedLedger) NewNonDurableCursor(name string, start Position) (*Cursor, error) {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	if ml.state == stateClosed {
		return nil, ErrClosed
	}
	if ml.cursors.get(name) != nil {
		return nil, fmt.Errorf("cursor %q: %w", name, ErrCursorExists)
	}
	var md Position
	switch start {
	case Earliest:
		md = ml.beforeFirstLocked()
	case Latest:
		md = ml.endLocked()
	default:
		start = ml.clampStartLocked(start)
		md = Position{start.LedgerID, start.EntryID - 1}
		if start.EntryID < 0 {
			md.EntryID = -1
		}
	}
	c := newCursor(ml, name, false, md)
	ml.cursors.put(c)
	return c, nil
}

// Cursor returns the open cursor name, or nil.
func (ml *ManagedLedger) Cursor(name string) *Cursor {
	ml.mu.RLock()
	defer ml.mu.RUnlock()
	return ml.cursors.get(name)
}

// Cursors returns the open cursors sorted by name.
func (ml *ManagedLedger) Cursors() []*Cursor {
	ml.mu.RLock()
	defer ml.mu.RUnlock()
	return ml.cursorListLocked()
}

// DeleteCursor removes a cursor; a durable one loses its node and ledger.
func (ml *ManagedLedger) DeleteCursor(ctx context.Context, name string) error {
	ml.mu.Lock()
	c := ml.cursors.del(name)
	ml.mu.Unlock()
	if c == nil {
		return fmt.Errorf("cursor %q: %w", name, ErrCursorNotFound)
	}
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	if !c.durable {
		return nil
	}
	c.persistMu.Lock()
	defer c.persistMu.Unlock()
	if err := ml.meta.Delete(ctx, c.path, metadata.AnyVersion); err != nil && !isNotFound(err) {
		return err
	}
	if c.pl != nil {
		_ = c.pl.w.Close(ctx)
		_ = ml.store.Delete(ctx, c.pl.w.ID())
		c.pl = nil
	}
	if c.staleLedger >= 0 {
		_ = ml.store.Delete(ctx, c.staleLedger)
	}
	return nil
}

// withLedgers runs fn with the ledger list under ml.mu (read).
func (c *Cursor) withLedgers(fn func(ls ledgerList)) {
	c.ml.mu.RLock()
	defer c.ml.mu.RUnlock()
	fn(c.ml.ledgers)
}

// readStartLocked is the read position, never at or before mark-delete.
func (c *Cursor) readStartLocked() Position {
	md := c.st.markDelete
	if !md.Less(c.readPos) {
		return Position{md.LedgerID, md.EntryID + 1}
	}
	return c.readPos
}

// MarkDeletePosition returns the mark-delete position.
func (c *Cursor) MarkDeletePosition() Position {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.markDelete
}

// ReadPosition returns the next position to read (it may not exist yet).
func (c *Cursor) ReadPosition() Position {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.readStartLocked()
	c.withLedgers(func(ls ledgerList) {
		if q, ok := ls.ceil(p); ok {
			p = q
		}
	})
	return p
}

// ReadEntries reads up to n entries from the read position, skipping
// acknowledged ones, and advances the read position. It returns no entries
// (and no error) when none is available.
func (c *Cursor) ReadEntries(ctx context.Context, n int) ([]Entry, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	start := c.readStartLocked()
	var ps []Position
	seen := Position{start.LedgerID, start.EntryID - 1}
	c.withLedgers(func(ls ledgerList) {
		p, ok := ls.ceil(start)
		bound, bounded := c.ml.readBoundNow()
		for ok && len(ps) < n && (!bounded || p.Less(bound)) {
			if bm := c.st.acked[p.LedgerID]; bm != nil && p.EntryID <= math.MaxUint32 && bm.Contains(uint32(p.EntryID)) {
				last := min(runEnd(bm, uint32(p.EntryID)), ls.entries(p.LedgerID)-1)
				seen = Position{p.LedgerID, last}
				p, ok = ls.next(seen)
				continue
			}
			ps = append(ps, p)
			seen = p
			p, ok = ls.next(p)
		}
	})
	gen := c.seekGen
	c.mu.Unlock()
	var es []Entry
	var err error
	if len(ps) > 0 {
		if es, err = c.ml.readPositions(ctx, ps); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	if gen == c.seekGen && c.readPos.Less(Position{seen.LedgerID, seen.EntryID + 1}) {
		c.readPos = Position{seen.LedgerID, seen.EntryID + 1}
	}
	c.mu.Unlock()
	return es, nil
}

var closedCh = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

// WaitForEntries returns a channel that is closed once the cursor may have
// entries to read (immediately if it has some now), so dispatchers wait
// without polling. It is also closed when an add completes, when the read
// position of any cursor is moved (Reset, Rewind, SetReadPosition) and when
// the managed ledger closes; wake-ups may be spurious.
func (c *Cursor) WaitForEntries() <-chan struct{} {
	c.mu.Lock()
	start := c.readStartLocked()
	c.mu.Unlock()
	c.ml.mu.Lock()
	defer c.ml.mu.Unlock()
	if c.ml.state == stateClosed {
		return closedCh
	}
	if _, ok := c.ml.ledgers.ceil(start); ok {
		return closedCh
	}
	return c.ml.waitChLocked()
}

// HasMoreEntries reports whether entries exist at or after the read
// position (acknowledged ones included).
func (c *Cursor) HasMoreEntries() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ok bool
	c.withLedgers(func(ls ledgerList) { _, ok = ls.ceil(c.readStartLocked()) })
	return ok
}

// ReadEntriesOrWait is ReadEntries that blocks until at least one entry is
// returned, ctx is done, or the cursor is closed.
func (c *Cursor) ReadEntriesOrWait(ctx context.Context, n int) ([]Entry, error) {
	for {
		es, err := c.ReadEntries(ctx, n)
		if err != nil || len(es) > 0 {
			return es, err
		}
		select {
		case <-c.WaitForEntries():
			c.ml.mu.RLock()
			closed := c.ml.state == stateClosed
			c.ml.mu.RUnlock()
			if closed {
				return nil, ErrClosed
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// markDirtyLocked records that the state must be persisted.
func (c *Cursor) markDirtyLocked() { c.dirty = true }

func (c *Cursor) checkLocked(p Position, ls ledgerList) error {
	if c.closed {
		return ErrClosed
	}
	last, ok := ls.last()
	if !ok || last.Less(p) {
		return fmt.Errorf("%s beyond last entry: %w", p, ErrInvalidPosition)
	}
	return nil
}

// MarkDelete acknowledges everything up to and including p (cumulative
// ack). A p at or before the current mark-delete is a no-op.
func (c *Cursor) MarkDelete(p Position) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	c.withLedgers(func(ls ledgerList) {
		if err = c.checkLocked(p, ls); err != nil || !c.st.markDelete.Less(p) {
			return
		}
		c.st.setMarkDelete(p)
		c.st.advance(ls)
		c.markDirtyLocked()
	})
	return err
}

// Delete acknowledges individual entries; mark-delete advances over
// contiguous acknowledged entries. Positions beyond the last entry are
// skipped and reported as ErrInvalidPosition.
func (c *Cursor) Delete(ps ...Position) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	c.withLedgers(func(ls ledgerList) {
		for _, p := range ps {
			if e := c.checkLocked(p, ls); e != nil {
				err = e
				continue
			}
			if c.st.ackNext(p, ls) {
				continue
			}
			if c.st.ack(p) && c.durable {
				c.pendingAcks = append(c.pendingAcks, p)
			}
		}
		c.st.advance(ls)
		c.markDirtyLocked()
	})
	return err
}

// AckBatchIndexes records a batch-index ack of entry p: ackSet is Pulsar's
// ack_set (bit set = still unacknowledged) and is ANDed into the stored
// set; when no bit is left the entry is acknowledged.
func (c *Cursor) AckBatchIndexes(p Position, ackSet []uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	c.withLedgers(func(ls ledgerList) {
		if err = c.checkLocked(p, ls); err != nil {
			return
		}
		if c.st.ackBatch(p, ackSet) {
			if c.durable {
				c.pendingAcks = append(c.pendingAcks, p)
			}
		} else if c.durable && c.st.batch[p] != nil {
			if c.pendingBatch == nil {
				c.pendingBatch = make(map[Position]struct{}, 1)
			}
			c.pendingBatch[p] = struct{}{}
		}
		c.st.advance(ls)
		c.markDirtyLocked()
	})
	return err
}

// GetBatchAckSet returns a copy of p's stored ack set (bit set = still
// unacknowledged), or nil when the batch has no partial ack; dispatch sends
// it as MESSAGE.ack_set when redelivering p.
func (c *Cursor) GetBatchAckSet(p Position) []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.st.batchSet(p)
	if s == nil {
		return nil
	}
	return append([]uint64(nil), s...)
}

// IsAcked reports whether entry p is fully acknowledged.
func (c *Cursor) IsAcked(p Position) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.isAcked(p)
}

// Reset moves the cursor so that p is read next and forgets every ack
// after it (Pulsar's seek / reset cursor): mark-delete becomes the entry
// before p. Earliest and Latest are accepted.
func (c *Cursor) Reset(p Position) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.ml.mu.RLock()
	switch p {
	case Earliest:
		md := c.ml.beforeFirstLocked()
		p = Position{md.LedgerID, 0}
	case Latest:
		md := c.ml.endLocked()
		p = Position{md.LedgerID, md.EntryID + 1}
	default:
		p = c.ml.clampStartLocked(p)
	}
	c.ml.mu.RUnlock()
	if p.EntryID < 0 {
		p.EntryID = 0
	}
	c.st.reset(Position{p.LedgerID, p.EntryID - 1})
	c.readPos = p
	c.seekGen++
	c.wakeLocked()
	c.pendingAcks = nil
	clear(c.pendingBatch)
	c.needSnapshot = true
	c.markDirtyLocked()
	return nil
}

// ResetByPublishTime resets the cursor to the first entry published at or
// after t (unix ms), using publishTime to read an entry's publish time.
func (c *Cursor) ResetByPublishTime(ctx context.Context, t int64, publishTime func([]byte) (int64, error)) (Position, error) {
	p, _, err := c.ml.FindByPublishTime(ctx, t, publishTime)
	if err != nil {
		return Position{}, err
	}
	return p, c.Reset(p)
}

// SetReadPosition moves only the read position (acks are kept); positions
// at or before mark-delete mean "the entry after mark-delete".
func (c *Cursor) SetReadPosition(p Position) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readPos = p
	c.seekGen++
	c.wakeLocked()
}

// Rewind moves the read position back to the entry after mark-delete, so
// every unacknowledged entry is read again.
func (c *Cursor) Rewind() {
	c.mu.Lock()
	defer c.mu.Unlock()
	md := c.st.markDelete
	c.readPos = Position{md.LedgerID, md.EntryID + 1}
	c.seekGen++
	c.wakeLocked()
}

// wakeLocked wakes WaitForEntries callers after the read position moved
// (spurious wake-ups of other cursors are harmless).
func (c *Cursor) wakeLocked() {
	c.ml.mu.Lock()
	c.ml.notifyLocked()
	c.ml.mu.Unlock()
}

// SkipEntries acknowledges the next n unacknowledged entries after
// mark-delete.
func (c *Cursor) SkipEntries(n int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.withLedgers(func(ls ledgerList) {
		p := c.st.markDelete
		for n > 0 {
			q, ok := ls.next(p)
			if !ok {
				break
			}
			if c.st.acked[q.LedgerID] == nil && len(c.st.batch) == 0 {
				// No acks in this ledger: skip a whole stretch at once.
				k := min(n, ls.entries(q.LedgerID)-q.EntryID)
				p = Position{q.LedgerID, q.EntryID + k - 1}
				n -= k
				continue
			}
			if !c.st.isAcked(q) {
				n--
			}
			p = q
		}
		if c.st.markDelete.Less(p) {
			c.st.setMarkDelete(p)
			c.st.advance(ls)
			c.markDirtyLocked()
		}
	})
	return nil
}

// ClearBacklog acknowledges every entry.
func (c *Cursor) ClearBacklog() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.withLedgers(func(ls ledgerList) {
		if last, ok := ls.last(); ok && c.st.markDelete.Less(last) {
			c.st.setMarkDelete(last)
			c.markDirtyLocked()
		}
	})
	return nil
}

// NumberOfEntriesInBacklog returns the entries after mark-delete that are
// not acknowledged.
func (c *Cursor) NumberOfEntriesInBacklog() int64 {
	e, _ := c.Backlog()
	return e
}

// Backlog returns the unacknowledged entries and messages after
// mark-delete. Message counts are exact for ledgers written by this
// instance and estimated from per-ledger averages for older ones.
func (c *Cursor) Backlog() (entries, messages int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.withLedgers(func(ls ledgerList) {
		last, ok := ls.last()
		if bound, bounded := c.ml.readBoundNow(); bounded && ok {
			last, ok = ls.before(bound, last)
		}
		if !ok {
			return
		}
		md := c.st.markDelete
		entries = ls.entriesBetween(md, last)
		for _, l := range c.st.ledgers {
			// Acks in ledgers that no longer exist (a non-durable cursor
			// behind trimming) do not count.
			if ls.entries(l) > 0 {
				entries -= int64(c.st.acked[l].GetCardinality())
			}
		}
		messages = c.ml.messagesBetweenLocked(md, last)
		for _, l := range c.st.ledgers {
			bm := c.st.acked[l]
			if ls.entries(l) == 0 {
				continue
			}
			sums := c.ml.msgSums.get(l)
			if int64(len(sums)) == ls.entries(l) && len(sums) > 0 {
				it := bm.Iterator()
				for it.HasNext() {
					e := int64(it.Next())
					if e < int64(len(sums)) {
						messages -= msgAt(sums, e)
					}
				}
			} else {
				messages -= c.ml.avgMessagesLocked(l, int64(bm.GetCardinality()))
			}
		}
		for p, set := range c.st.batch {
			var remaining int64
			for _, w := range set {
				remaining += int64(bits.OnesCount64(w))
			}
			total := c.ml.messagesBetweenLocked(Position{p.LedgerID, p.EntryID - 1}, p)
			if total > remaining {
				messages -= total - remaining
			}
		}
		entries = max(entries, 0)
		messages = max(messages, entries)
	})
	return entries, messages
}

func msgAt(sums []int64, e int64) int64 {
	if e == 0 {
		return sums[0]
	}
	return sums[e] - sums[e-1]
}

// messagesBetweenLocked counts messages in (from, to]; ml.mu held.
func (ml *ManagedLedger) messagesBetweenLocked(from, to Position) int64 {
	var n int64
	for _, l := range ml.ledgers {
		if l.LedgerID < from.LedgerID || l.LedgerID > to.LedgerID || l.Entries == 0 {
			continue
		}
		lo, hi := int64(0), l.Entries-1
		if l.LedgerID == from.LedgerID {
			lo = max(lo, from.EntryID+1)
		}
		if l.LedgerID == to.LedgerID {
			hi = min(hi, to.EntryID)
		}
		if hi < lo {
			continue
		}
		if sums := ml.msgSums.get(l.LedgerID); int64(len(sums)) == l.Entries {
			n += sums[hi]
			if lo > 0 {
				n -= sums[lo-1]
			}
		} else {
			n += ml.avgMessagesLocked(l.LedgerID, hi-lo+1)
		}
	}
	return n
}

// avgMessagesLocked estimates the messages in k entries of ledger id.
func (ml *ManagedLedger) avgMessagesLocked(id, k int64) int64 {
	i := ml.ledgers.find(id)
	if i >= len(ml.ledgers) || ml.ledgers[i].LedgerID != id || ml.ledgers[i].Entries == 0 {
		return k
	}
	l := ml.ledgers[i]
	return int64(math.Round(float64(k) * float64(l.Messages) / float64(l.Entries)))
}

// persistedMarkDelete returns the mark-delete position as last persisted.
func (c *Cursor) persistedMarkDelete() Position {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.persistedMD
}

func (c *Cursor) lastPersistTime() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastPersist
}
