package server

import (
	"context"
	"slices"
	"sync"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/txn"
)

// The pending-ack log of a subscription is trimmed behind the oldest
// transaction that still holds acks on it (docs/transactions.md, "Pending
// acks"). The log has one durable cursor, pendingAckStateCursor, whose
// mark-delete position is the trim point: the managed ledger deletes the
// ledgers wholly behind it (and, with no durable cursor at all, it would
// delete every closed ledger, so the cursor exists from the log's
// creation on, at the log's start).
//
// Invariants:
//   - the trim point is never at or past the first record of a
//     transaction whose end is not yet applied to the subscription's
//     cursor (its acks are still needed to rebuild the holds);
//   - before the trim point moves past a commit record, the
//     subscription's cursor is flushed, so the acks that commit applied
//     are durable in the cursor before the record that would replay them
//     goes;
//   - records are noted in log order (add callbacks run in add order), so
//     pos is ascending and a record still in flight lies past every noted
//     one.

// pendingAckStateCursor names the pending-ack log's trim cursor (Pulsar's
// name for the pending-ack store's cursor).
const pendingAckStateCursor = "__pending_ack_state"

// defaultPendingAckTrimRecords: the log is trimmed after this many new
// records (Config.TransactionPendingAckTrimRecords).
const defaultPendingAckTrimRecords = 1000

// ackLog is an open pending-ack log with its trim state.
type ackLog struct {
	ml   storage.ManagedLedger
	trim *ackLogTrim
}

type ackLogTrim struct {
	cur   storage.Cursor
	every int // records between trims

	mu    sync.Mutex
	pos   []storage.Position          // records not yet trimmed, ascending
	first map[txn.ID]storage.Position // first record of each transaction not yet ended here
	since int                         // records noted since the last trim
	busy  bool                        // a trim is running
}

func newAckLogTrim(cur storage.Cursor, every int) *ackLogTrim {
	if every <= 0 {
		every = defaultPendingAckTrimRecords
	}
	return &ackLogTrim{cur: cur, every: every, first: map[txn.ID]storage.Position{}}
}

// note records that the record at p (of transaction id; ack says it is
// an ack record) is durable.
func (tr *ackLogTrim) note(id txn.ID, p storage.Position, ack bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.pos = append(tr.pos, p)
	tr.since++
	if _, ok := tr.first[id]; ack && !ok {
		tr.first[id] = p
	}
}

// ended forgets id: its end is applied to the subscription's cursor.
func (tr *ackLogTrim) ended(id txn.ID) {
	tr.mu.Lock()
	delete(tr.first, id)
	tr.mu.Unlock()
}

// start reports whether a trim is due and, if so, marks one running.
func (tr *ackLogTrim) start() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.busy || tr.since < tr.every || len(tr.pos) == 0 {
		return false
	}
	tr.busy, tr.since = true, 0
	return true
}

// target returns the last record the log may drop: the one before the
// oldest open transaction's first record, or the last record when none
// is open; false when nothing may go.
func (tr *ackLogTrim) target() (storage.Position, bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.pos) == 0 {
		return storage.Position{}, false
	}
	i := len(tr.pos) // records before index i may go
	for _, f := range tr.first {
		j, _ := slices.BinarySearchFunc(tr.pos, f, func(a, b storage.Position) int { return a.Compare(b) })
		i = min(i, j)
	}
	if i == 0 {
		return storage.Position{}, false
	}
	return tr.pos[i-1], true
}

// done ends a trim that moved the trim point to w (ok) or failed.
func (tr *ackLogTrim) done(w storage.Position, ok bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.busy = false
	if ok {
		n, _ := slices.BinarySearchFunc(tr.pos, w, func(a, b storage.Position) int { return a.Compare(b) })
		if n < len(tr.pos) && tr.pos[n] == w {
			n++
		}
		tr.pos = append(tr.pos[:0], tr.pos[n:]...)
	}
}

// maybeTrimAckLog starts a trim of a subscription's pending-ack log when
// one is due. It runs off the subscription's loop: flushing the cursor is
// storage I/O. The server's Close waits for it.
func (s *Server) maybeTrimAckLog(sub broker.Subscription, tr *ackLogTrim) {
	if tr == nil || !tr.start() {
		return
	}
	if !s.spawn(func() {
		w, ok := tr.target()
		if ok {
			ctx, cancel := context.WithTimeout(s.life, requestTimeout)
			if err := sub.FlushCursor(ctx); err != nil {
				s.log.Warn("flush cursor before trimming the pending-ack log", "sub", sub.Name(), "err", err)
				ok = false
			}
			cancel()
		}
		if ok {
			if err := tr.cur.AckCumulative(w); err != nil {
				s.log.Warn("trim pending-ack log", "sub", sub.Name(), "err", err)
				ok = false
			}
		}
		tr.done(w, ok)
	}) {
		tr.done(storage.Position{}, false) // closing: no trim
	}
}
