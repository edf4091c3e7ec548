package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"time"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
	"github.com/magnetar-mq/magnetar/txn"
)

// Pending acks: the participant side of transactional acknowledgement on
// a subscription (docs/transactions.md, "Participants").
//
// An ACK with a txn id is checked for conflicts, held in memory (the
// message leaves its consumer's unacked set and is neither redelivered
// nor dispatched again), logged durably, then answered with
// ACK_RESPONSE. Committing applies the held acks to the cursor; aborting
// releases them (the messages are redelivered). The log is a managed
// ledger named "<topic>-<subscription>__transaction_pending_ack" (as in
// Pulsar), one JSON record per entry (pendingAckRecord); the node
// /transactions/pending-ack/<topic path>/<subscription> says it exists,
// so topic load opens only the logs that exist and replays them.

const (
	pendingAckPath   = "/transactions/pending-ack"
	pendingAckSuffix = "__transaction_pending_ack"
	// pendingAckRecentEnded bounds the ended ids remembered per
	// subscription for idempotent ends and late acks.
	pendingAckRecentEnded = 4096
)

// pendingAckRecord is one entry of the pending-ack log.
type pendingAckRecord struct {
	Op    string          `json:"op"` // "ack", "commit", "abort"
	Most  uint64          `json:"most"`
	Least uint64          `json:"least"`
	Cum   bool            `json:"cumulative,omitempty"`
	Pos   []pendingAckPos `json:"positions,omitempty"`
}

type pendingAckPos struct {
	Ledger int64 `json:"ledgerId"`
	Entry  int64 `json:"entryId"`
	// Acked is the mask of the batch indexes acknowledged (set bits);
	// empty: the whole entry.
	Acked   []uint64 `json:"acked,omitempty"`
	Size    int      `json:"batchSize,omitempty"`
	NumMsgs int      `json:"numMessages,omitempty"`
}

// pendingAcks is a subscription's pending-ack state; its loop owns it.
type pendingAcks struct {
	log     *ackLog
	txns    map[txn.ID]*txnAcks
	holds   map[storage.Position]*ackHold
	cum     *txn.ID // the transaction holding a pending cumulative ack
	ended   map[txn.ID]txn.Action
	endRing []txn.ID
	nCommit int64
	nAbort  int64
	// recoverStart, recoverEnd: when the log was replayed at load (both
	// the creation time for a store started by a first transactional ack).
	recoverStart, recoverEnd time.Time
}

// txnAcks is what one transaction acknowledged on the subscription.
type txnAcks struct {
	whole   map[storage.Position]struct{}
	partial map[storage.Position]*partialAck
	cum     *storage.Position
	started time.Time
}

type partialAck struct {
	mask []uint64 // acked indexes
	size int
}

// ackHold is what transactions hold on one entry.
type ackHold struct {
	numMsgs  int
	whole    bool
	wholeTxn txn.ID
	partial  map[txn.ID][]uint64
	// parked is the entry withheld from dispatch while held whole.
	parked *broker.Withheld
}

func newPendingAcks(log *ackLog) *pendingAcks {
	now := time.Now()
	return &pendingAcks{log: log, txns: map[txn.ID]*txnAcks{}, holds: map[storage.Position]*ackHold{}, ended: map[txn.ID]txn.Action{},
		recoverStart: now, recoverEnd: now}
}

func (pa *pendingAcks) txn(id txn.ID) *txnAcks {
	ta := pa.txns[id]
	if ta == nil {
		ta = &txnAcks{whole: map[storage.Position]struct{}{}, partial: map[storage.Position]*partialAck{}, started: time.Now()}
		pa.txns[id] = ta
	}
	return ta
}

func (pa *pendingAcks) hold(pos storage.Position) *ackHold {
	h := pa.holds[pos]
	if h == nil {
		h = &ackHold{numMsgs: 1}
		pa.holds[pos] = h
	}
	return h
}

func (pa *pendingAcks) dropHoldIfEmpty(pos storage.Position) {
	if h := pa.holds[pos]; h != nil && !h.whole && len(h.partial) == 0 {
		delete(pa.holds, pos)
	}
}

func (pa *pendingAcks) noteEnded(id txn.ID, a txn.Action) {
	if _, ok := pa.ended[id]; ok {
		return
	}
	pa.ended[id] = a
	pa.endRing = append(pa.endRing, id)
	if len(pa.endRing) > pendingAckRecentEnded {
		delete(pa.ended, pa.endRing[0])
		pa.endRing = pa.endRing[1:]
	}
}

// ackedMask returns the acked indexes of an ack set (clear bits below
// size) as a mask of set bits.
func ackedMask(ackSet []int64, size int) []uint64 {
	n := (size + 63) / 64
	m := make([]uint64, n)
	for i := range size {
		w := i / 64
		if w >= len(ackSet) || uint64(ackSet[w])&(1<<(i%64)) == 0 {
			m[w] |= 1 << (i % 64)
		}
	}
	return m
}

// ackSetOf is the inverse of ackedMask: set bits are the indexes not
// acknowledged.
func ackSetOf(mask []uint64, size int) []int64 {
	out := make([]int64, len(mask))
	for i := range size {
		if mask[i/64]&(1<<(i%64)) == 0 {
			out[i/64] |= 1 << (i % 64)
		}
	}
	return out
}

func overlaps(a, b []uint64) bool {
	for i := range min(len(a), len(b)) {
		if a[i]&b[i] != 0 {
			return true
		}
	}
	return false
}

func popcount(m []uint64) int {
	n := 0
	for _, w := range m {
		n += bits.OnesCount64(w)
	}
	return n
}

// pendingAckKey is the node that marks a subscription's pending-ack log.
func pendingAckKey(t broker.Topic, sub string) string {
	return pendingAckPath + "/" + topicPath(t) + "/" + broker.EscapeName(sub)
}

// ackLog returns the subscription's pending-ack log, creating it.
func (s *Server) ackLog(ctx context.Context, tt *topicTxn, sub string) (*ackLog, error) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if l := tt.ackLogs[sub]; l != nil {
		return l, nil
	}
	t := tt.t
	if t.Closed() {
		return nil, broker.Reason(broker.ErrClosed, "Topic is being unloaded")
	}
	if _, err := s.b.Metadata().Put(ctx, pendingAckKey(t, sub), nil, metadata.AnyVersion); err != nil {
		return nil, err
	}
	ml, err := s.b.OpenLedger(ctx, t.Name()+"-"+sub+pendingAckSuffix)
	if err != nil {
		return nil, fmt.Errorf("txn/server: open the pending-ack log of %s/%s: %w", t.Name(), sub, err)
	}
	cur, err := ml.OpenCursor(pendingAckStateCursor, storage.InitialEarliest)
	if err != nil {
		ml.Close()
		return nil, fmt.Errorf("txn/server: open the pending-ack log cursor of %s/%s: %w", t.Name(), sub, err)
	}
	l := &ackLog{ml: ml, trim: newAckLogTrim(cur, s.cfg.PendingAckTrimRecords)}
	if tt.ackLogs == nil {
		tt.ackLogs = map[string]*ackLog{}
	}
	tt.ackLogs[sub] = l
	return l, nil
}

// appendRecord logs rec; cb runs once it is durable (or failed), in
// log order. A durable record is noted for trimming.
func appendRecord(l *ackLog, rec *pendingAckRecord, cb func(error)) {
	b, err := json.Marshal(rec)
	if err != nil {
		cb(err)
		return
	}
	buf := make([]byte, mledger.EntryHeadroom, mledger.EntryHeadroom+len(b))
	buf = append(buf, b...)
	id := txn.ID{Most: rec.Most, Least: rec.Least}
	l.ml.AddEntry(buf, mledger.EntryHeadroom, 1, func(p storage.Position, err error) {
		if err == nil {
			l.trim.note(id, p, rec.Op == "ack")
		}
		cb(err)
	})
}

// handleAck takes an ACK carrying a txn id: answered with ACK_RESPONSE
// once held and logged, or refused (TransactionConflict).
func (s *Server) handleAck(r *broker.AckRequest) {
	if len(r.IDs) == 0 {
		r.Reply(0, "")
		return
	}
	m := r.Cmd
	id := txn.ID{Most: m.GetTxnidMostBits(), Least: m.GetTxnidLeastBits()}
	tt := s.topics.Get(r.Topic)
	if tt == nil {
		r.Reply(pb.ServerError_NotAllowedError, "Transactions need a persistent topic")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	l, err := s.ackLog(ctx, tt, r.Sub.Name())
	if err != nil {
		r.Reply(errorCode(err), err.Error())
		return
	}
	cumulative := m.GetAckType() == pb.CommandAck_Cumulative
	if !r.Sub.Do(func(sl broker.SubLoop) { s.ackLocked(sl, r, l, id, cumulative) }) {
		r.Reply(pb.ServerError_ConsumerNotFound, "Consumer is closed")
	}
}

// ackLocked checks and holds a transactional ack, then logs it (on the
// subscription's loop).
func (s *Server) ackLocked(sl broker.SubLoop, r *broker.AckRequest, l *ackLog, id txn.ID, cumulative bool) {
	pa := s.subs.Get(sl)
	if pa == nil {
		pa = newPendingAcks(l)
		s.subs.Set(sl, pa)
	}
	if a, ok := pa.ended[id]; ok {
		r.Reply(pb.ServerError_InvalidTxnStatus, fmt.Sprintf("Transaction %s is already %s", id, pastTense(a)))
		return
	}
	ids := r.IDs
	rec := &pendingAckRecord{Op: "ack", Most: id.Most, Least: id.Least, Cum: cumulative}
	if cumulative {
		if typ := sl.Type(); typ == broker.SubShared || typ == broker.SubKeyShared {
			r.Reply(pb.ServerError_NotAllowedError, "Cumulative acknowledgement in a transaction needs an Exclusive or Failover subscription")
			return
		}
		target := ids[0].Pos
		if len(ids[0].AckSet) > 0 {
			target = storage.Position{LedgerID: target.LedgerID, EntryID: target.EntryID - 1}
		}
		if target.Compare(sl.MarkDelete()) <= 0 {
			r.Reply(pb.ServerError_TransactionConflict, fmt.Sprintf("Transaction %s acknowledges cumulatively up to %s, within what the subscription already acknowledged", id, target))
			return
		}
		if pa.cum != nil && *pa.cum != id {
			r.Reply(pb.ServerError_TransactionConflict, fmt.Sprintf("Transaction %s acknowledges cumulatively while transaction %s holds a cumulative acknowledgement", id, *pa.cum))
			return
		}
		rec.Pos = []pendingAckPos{{Ledger: target.LedgerID, Entry: target.EntryID}}
	} else {
		for _, a := range ids {
			if msg := pa.conflict(sl, id, a); msg != "" {
				r.Reply(pb.ServerError_TransactionConflict, msg)
				return
			}
		}
		for _, a := range ids {
			p := pendingAckPos{Ledger: a.Pos.LedgerID, Entry: a.Pos.EntryID, NumMsgs: entryMsgs(sl, a.Pos, a.BatchSize)}
			if len(a.AckSet) > 0 {
				p.Size = max(a.BatchSize, p.NumMsgs)
				p.Acked = ackedMask(a.AckSet, p.Size)
			}
			rec.Pos = append(rec.Pos, p)
		}
	}
	pa.apply(sl, id, rec)
	sl.NoteAck(r)
	appendRecord(l, rec, func(err error) {
		if err != nil {
			r.Sub.Do(func(sl broker.SubLoop) { s.undoAck(sl, id, rec) })
			r.Reply(pb.ServerError_PersistenceError, "Pending ack not stored: "+err.Error())
			return
		}
		r.Reply(0, "")
	})
}

// entryMsgs is the message count of a delivered entry (for redelivery
// after an abort).
func entryMsgs(sl broker.SubLoop, pos storage.Position, batchSize int) int {
	if n, ok := sl.PendingMessages(pos); ok {
		return n
	}
	return max(batchSize, 1)
}

// conflict returns why transaction id may not acknowledge a, or "".
func (pa *pendingAcks) conflict(sl broker.SubLoop, id txn.ID, a broker.AckID) string {
	if sl.IsAcked(a.Pos) {
		return fmt.Sprintf("Transaction %s acknowledges %s, which is already acknowledged", id, a.Pos)
	}
	h := pa.holds[a.Pos]
	if len(a.AckSet) == 0 {
		if h == nil {
			return ""
		}
		if h.whole && h.wholeTxn != id {
			return fmt.Sprintf("Transaction %s acknowledges %s, which transaction %s acknowledged", id, a.Pos, h.wholeTxn)
		}
		for o := range h.partial {
			if o != id {
				return fmt.Sprintf("Transaction %s acknowledges %s, of which transaction %s acknowledged messages", id, a.Pos, o)
			}
		}
		return ""
	}
	size := max(a.BatchSize, entryMsgs(sl, a.Pos, a.BatchSize))
	mask := ackedMask(a.AckSet, size)
	if cur := sl.BatchAckSet(a.Pos); cur != nil && overlaps(mask, ackedMask(cur, size)) {
		return fmt.Sprintf("Transaction %s acknowledges batch indexes of %s that are already acknowledged", id, a.Pos)
	}
	if h == nil {
		return ""
	}
	if h.whole && h.wholeTxn != id {
		return fmt.Sprintf("Transaction %s acknowledges %s, which transaction %s acknowledged", id, a.Pos, h.wholeTxn)
	}
	for o, m := range h.partial {
		if o != id && overlaps(mask, m) {
			return fmt.Sprintf("Transaction %s acknowledges batch indexes of %s that transaction %s acknowledged", id, a.Pos, o)
		}
	}
	return ""
}

// apply holds what rec acknowledges (also used by recovery, which does
// no conflict checks: the log holds only accepted acks).
func (pa *pendingAcks) apply(sl broker.SubLoop, id txn.ID, rec *pendingAckRecord) {
	ta := pa.txn(id)
	if rec.Cum {
		p := storage.Position{LedgerID: rec.Pos[0].Ledger, EntryID: rec.Pos[0].Entry}
		if ta.cum == nil || ta.cum.Compare(p) < 0 {
			ta.cum = &p
		}
		pa.cum = &id
		return
	}
	for _, rp := range rec.Pos {
		pos := storage.Position{LedgerID: rp.Ledger, EntryID: rp.Entry}
		h := pa.hold(pos)
		h.numMsgs = max(h.numMsgs, rp.NumMsgs)
		if len(rp.Acked) == 0 {
			ta.whole[pos] = struct{}{}
			h.whole, h.wholeTxn = true, id
			if h.parked == nil {
				// Delivered: out of its consumer's unacked set, not
				// redelivered while the transaction is open. Waiting in
				// the replay set: parked when a pass takes it
				// (heldRead).
				if w, ok := sl.Withhold(pos); ok {
					h.parked = &w
				}
			}
			continue
		}
		pk := ta.partial[pos]
		if pk == nil {
			pk = &partialAck{mask: make([]uint64, len(rp.Acked)), size: rp.Size}
			ta.partial[pos] = pk
		}
		for i := range min(len(pk.mask), len(rp.Acked)) {
			pk.mask[i] |= rp.Acked[i]
		}
		if h.partial == nil {
			h.partial = map[txn.ID][]uint64{}
		}
		h.partial[id] = pk.mask
	}
}

// heldRead reports whether an entry dispatch took (freshly read, or from
// the replay set) is held whole by an open transaction; it is parked, not
// dispatched.
func (pa *pendingAcks) heldRead(w broker.Withheld) bool {
	h := pa.holds[w.Pos()]
	if h == nil || !h.whole {
		return false
	}
	if h.parked == nil {
		h.parked = &w
	}
	return true
}

// undoAck forgets an ack whose log write failed.
func (s *Server) undoAck(sl broker.SubLoop, id txn.ID, rec *pendingAckRecord) {
	pa := s.subs.Get(sl)
	if pa == nil {
		return
	}
	ta := pa.txns[id]
	if ta == nil {
		return
	}
	if rec.Cum {
		ta.cum = nil
		if pa.cum != nil && *pa.cum == id {
			pa.cum = nil
		}
	} else {
		for _, rp := range rec.Pos {
			pa.release(sl, id, ta, storage.Position{LedgerID: rp.Ledger, EntryID: rp.Entry})
		}
	}
	sl.Dispatch()
}

// release drops id's hold on pos, returning a parked entry for
// redelivery.
func (pa *pendingAcks) release(sl broker.SubLoop, id txn.ID, ta *txnAcks, pos storage.Position) {
	delete(ta.whole, pos)
	delete(ta.partial, pos)
	h := pa.holds[pos]
	if h == nil {
		return
	}
	if h.whole && h.wholeTxn == id {
		h.whole = false
		if w := h.parked; w != nil {
			h.parked = nil
			sl.Redeliver(*w)
		}
	}
	delete(h.partial, id)
	if len(h.partial) == 0 && !h.whole {
		sl.Requeue(pos) // a partially acked batch goes back whole
	}
	pa.dropHoldIfEmpty(pos)
}

// endOnSubscription ends transaction id on a subscription: the end is
// logged durably first, then applied (a crash in between replays the end
// at load).
func (s *Server) endOnSubscription(ctx context.Context, sub broker.Subscription, id txn.ID, a txn.Action) error {
	var l *ackLog
	var known, done bool
	var conflict error
	if !sub.Call(func(sl broker.SubLoop) {
		pa := s.subs.Get(sl)
		if pa == nil {
			return
		}
		l = pa.log
		if how, ok := pa.ended[id]; ok {
			done = true
			if how != a {
				conflict = broker.Reason(ErrConflict, fmt.Sprintf("Transaction %s was already %s on %s", id, pastTense(how), sub.Name()))
			}
			return
		}
		_, known = pa.txns[id]
	}) {
		return broker.Reason(broker.ErrClosed, "Subscription is closed")
	}
	if done || !known {
		return conflict
	}
	op := "commit"
	if a == txn.Abort {
		op = "abort"
	}
	errc := make(chan error, 1)
	appendRecord(l, &pendingAckRecord{Op: op, Most: id.Most, Least: id.Least}, func(err error) { errc <- err })
	select {
	case err := <-errc:
		if err != nil {
			return fmt.Errorf("txn/server: log the %s of %s on %s: %w", op, id, sub.Name(), err)
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	// Not applied if the subscription closed meanwhile: logged, the next
	// load applies it.
	sub.Call(func(sl broker.SubLoop) { s.applyEnd(sl, id, a) })
	return nil
}

// applyEnd commits (acks to the cursor) or aborts (releases) id.
func (s *Server) applyEnd(sl broker.SubLoop, id txn.ID, a txn.Action) {
	pa := s.subs.Get(sl)
	if pa == nil {
		return
	}
	defer pa.noteEnded(id, a)
	if pa.log != nil {
		// After the end is applied (deferred calls run last first).
		defer s.maybeTrimAckLog(sl.Subscription(), pa.log.trim)
		defer pa.log.trim.ended(id)
	}
	ta := pa.txns[id]
	if ta == nil {
		return
	}
	delete(pa.txns, id)
	if pa.cum != nil && *pa.cum == id {
		pa.cum = nil
	}
	if a == txn.Abort {
		pa.nAbort++
		for pos := range ta.whole {
			pa.release(sl, id, ta, pos)
		}
		for pos := range ta.partial {
			pa.release(sl, id, ta, pos)
		}
		sl.Dispatch()
		return
	}
	pa.nCommit++
	acks := broker.Acks{Cumulative: ta.cum, Reason: "transaction " + id.String() + " ack"}
	for pos := range ta.whole {
		n := 0
		if h := pa.holds[pos]; h != nil && h.whole && h.wholeTxn == id {
			h.whole = false
			h.parked = nil
			n = h.numMsgs
		}
		pa.dropHoldIfEmpty(pos)
		acks.Whole = append(acks.Whole, broker.EntryAck{Pos: pos, Messages: n})
	}
	for pos, pk := range ta.partial {
		if h := pa.holds[pos]; h != nil {
			delete(h.partial, id)
			pa.dropHoldIfEmpty(pos)
		}
		acks.Batches = append(acks.Batches, broker.BatchAck{Pos: pos, AckSet: ackSetOf(pk.mask, pk.size), Size: pk.size, Messages: popcount(pk.mask)})
	}
	slices.SortFunc(acks.Batches, func(a, b broker.BatchAck) int { return a.Pos.Compare(b.Pos) })
	sl.Acknowledge(acks)
}

// recoverPendingAcks replays the pending-ack logs of tt's subscriptions
// at load (before any consumer attaches).
func (s *Server) recoverPendingAcks(ctx context.Context, tt *topicTxn) error {
	t := tt.t
	names, err := s.b.Metadata().Children(ctx, pendingAckPath+"/"+topicPath(t))
	if errors.Is(err, metadata.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, n := range names {
		name := broker.UnescapeName(n)
		sub, ok := t.Subscription(name)
		if !ok {
			continue // the subscription is gone; its log stays until the topic is deleted
		}
		start := time.Now()
		l, err := s.ackLog(ctx, tt, name)
		if err != nil {
			return err
		}
		type logged struct {
			rec *pendingAckRecord
			pos storage.Position
		}
		var recs []logged
		for _, li := range l.ml.Stats().Ledgers {
			for e := int64(0); e < li.Entries; e++ {
				pos := storage.Position{LedgerID: li.LedgerID, EntryID: e}
				data, err := l.ml.ReadEntry(pos)
				if err != nil {
					if errors.Is(err, broker.ErrEntryGone) {
						break
					}
					return fmt.Errorf("txn/server: read the pending-ack log of %s/%s: %w", t.Name(), name, err)
				}
				var r pendingAckRecord
				if err := json.Unmarshal(data, &r); err != nil {
					return fmt.Errorf("txn/server: pending-ack log of %s/%s at %s: %w", t.Name(), name, pos, err)
				}
				recs = append(recs, logged{&r, pos})
			}
		}
		sub.Call(func(sl broker.SubLoop) {
			pa := newPendingAcks(l)
			s.subs.Set(sl, pa)
			for _, lr := range recs {
				r := lr.rec
				id := txn.ID{Most: r.Most, Least: r.Least}
				switch r.Op {
				case "ack":
					_, ended := pa.ended[id]
					live := !ended && len(r.Pos) > 0
					l.trim.note(id, lr.pos, live)
					if live {
						pa.apply(sl, id, r)
					}
				case "commit":
					l.trim.note(id, lr.pos, false)
					s.applyEnd(sl, id, txn.Commit)
				case "abort":
					l.trim.note(id, lr.pos, false)
					s.applyEnd(sl, id, txn.Abort)
				default:
					l.trim.note(id, lr.pos, false)
				}
			}
			pa.recoverStart, pa.recoverEnd = start, time.Now()
		})
	}
	return nil
}
