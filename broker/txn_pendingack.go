package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"slices"
	"time"

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
	holds   map[position]*ackHold
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
	whole   map[position]struct{}
	partial map[position]*partialAck
	cum     *position
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
	parked *pendingEntry
}

func newPendingAcks(log *ackLog) *pendingAcks {
	now := time.Now()
	return &pendingAcks{log: log, txns: map[txn.ID]*txnAcks{}, holds: map[position]*ackHold{}, ended: map[txn.ID]txn.Action{},
		recoverStart: now, recoverEnd: now}
}

func (pa *pendingAcks) txn(id txn.ID) *txnAcks {
	ta := pa.txns[id]
	if ta == nil {
		ta = &txnAcks{whole: map[position]struct{}{}, partial: map[position]*partialAck{}, started: time.Now()}
		pa.txns[id] = ta
	}
	return ta
}

func (pa *pendingAcks) hold(pos position) *ackHold {
	h := pa.holds[pos]
	if h == nil {
		h = &ackHold{numMsgs: 1}
		pa.holds[pos] = h
	}
	return h
}

func (pa *pendingAcks) dropHoldIfEmpty(pos position) {
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
func pendingAckKey(tn topicName, sub string) string {
	return pendingAckPath + "/" + tn.Tenant + "/" + tn.Namespace + "/" + tn.Domain + "/" + escapeLocal(tn.Local) + "/" + escapeLocal(sub)
}

// pendingAckLogName is the managed ledger of a subscription's log.
func pendingAckLogName(t *topic, sub string) string {
	return t.full + "-" + sub + pendingAckSuffix
}

// pendingAckLog returns the subscription's pending-ack log, creating it.
func (t *topic) pendingAckLog(ctx context.Context, sub string) (*ackLog, error) {
	if !t.persistent() {
		return nil, reason(ErrNotAllowed, "Transactions need a persistent topic")
	}
	t.txnInit.Lock()
	defer t.txnInit.Unlock()
	if l := t.txnAckLogs[sub]; l != nil {
		return l, nil
	}
	if t.isClosed() {
		return nil, reason(ErrClosed, "Topic is being unloaded")
	}
	if _, err := t.b.deps.Metadata.Put(ctx, pendingAckKey(t.name, sub), nil, metadata.AnyVersion); err != nil {
		return nil, err
	}
	ml, err := t.b.deps.OpenLedger(ctx, pendingAckLogName(t, sub))
	if err != nil {
		return nil, fmt.Errorf("broker: open the pending-ack log of %s/%s: %w", t.full, sub, err)
	}
	cur, err := ml.OpenCursor(pendingAckStateCursor, initialEarliest)
	if err != nil {
		ml.Close()
		return nil, fmt.Errorf("broker: open the pending-ack log cursor of %s/%s: %w", t.full, sub, err)
	}
	l := &ackLog{ml: ml, trim: newAckLogTrim(cur, t.b.cfg.TransactionPendingAckTrimRecords)}
	if t.txnAckLogs == nil {
		t.txnAckLogs = map[string]*ackLog{}
	}
	t.txnAckLogs[sub] = l
	return l, nil
}

// txnClose snapshots the transaction buffer and closes the pending-ack
// logs (topic close).
func (t *topic) txnClose() {
	if tb := t.txnBuf.Load(); tb != nil {
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		if err := tb.snapshot(ctx); err != nil {
			t.log.Warn("transaction buffer snapshot at close", "topic", t.full, "err", err)
		}
		cancel()
	}
	t.closeTxnLogs()
}

// closeTxnLogs closes the pending-ack logs.
func (t *topic) closeTxnLogs() {
	t.txnInit.Lock()
	logs := t.txnAckLogs
	t.txnAckLogs = nil
	t.txnInit.Unlock()
	for sub, l := range logs {
		if err := l.ml.Close(); err != nil {
			t.log.Warn("close pending-ack log", "topic", t.full, "sub", sub, "err", err)
		}
	}
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
	l.ml.AddEntry(buf, mledger.EntryHeadroom, 1, func(p position, err error) {
		if err == nil {
			l.trim.note(id, p, rec.Op == "ack")
		}
		cb(err)
	})
}

// handleTxnAck is handleAck for an ACK carrying a txn id: answered with
// ACK_RESPONSE once held and logged, or refused (TransactionConflict).
func (c *conn) handleTxnAck(cc *connConsumer, m *pb.CommandAck, ids []ackID) {
	consumerID, reqID := m.GetConsumerId(), m.GetRequestId()
	reply := func(code int32, msg string) {
		if m.RequestId != nil {
			c.sendAckResponse(consumerID, reqID, code, msg)
		}
	}
	if c.b.tc == nil {
		reply(codeNotAllowed, errTxnDisabled.Error())
		return
	}
	if len(ids) == 0 {
		reply(0, "")
		return
	}
	id := txn.ID{Most: m.GetTxnidMostBits(), Least: m.GetTxnidLeastBits()}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	l, err := cc.topic.pendingAckLog(ctx, cc.sub.name)
	if err != nil {
		reply(txnErrorCode(err), err.Error())
		return
	}
	cumulative := m.GetAckType() == pb.CommandAck_Cumulative
	s := cc.sub
	if !s.do(func() { s.txnAckLocked(cc.c, l, id, cumulative, ids, reply) }) {
		reply(codeConsumerNotFound, "Consumer is closed")
	}
}

// txnAckLocked checks and holds a transactional ack, then logs it.
func (s *subscription) txnAckLocked(c *consumer, l *ackLog, id txn.ID, cumulative bool, ids []ackID, reply func(int32, string)) {
	if s.txnAcks == nil {
		s.txnAcks = newPendingAcks(l)
	}
	pa := s.txnAcks
	if a, ok := pa.ended[id]; ok {
		reply(codeInvalidTxnStatus, fmt.Sprintf("Transaction %s is already %s", id, pastTense(a)))
		return
	}
	rec := &pendingAckRecord{Op: "ack", Most: id.Most, Least: id.Least, Cum: cumulative}
	if cumulative {
		if s.typ == SubShared || s.typ == SubKeyShared {
			reply(codeNotAllowed, "Cumulative acknowledgement in a transaction needs an Exclusive or Failover subscription")
			return
		}
		target := ids[0].pos
		if len(ids[0].ackSet) > 0 {
			target = position{target.LedgerID, target.EntryID - 1}
		}
		if target.Compare(s.cur.MarkDelete()) <= 0 {
			reply(codeTransactionConflict, fmt.Sprintf("Transaction %s acknowledges cumulatively up to %s, within what the subscription already acknowledged", id, target))
			return
		}
		if pa.cum != nil && *pa.cum != id {
			reply(codeTransactionConflict, fmt.Sprintf("Transaction %s acknowledges cumulatively while transaction %s holds a cumulative acknowledgement", id, *pa.cum))
			return
		}
		rec.Pos = []pendingAckPos{{Ledger: target.LedgerID, Entry: target.EntryID}}
	} else {
		for _, a := range ids {
			if msg := s.txnAckConflict(id, a); msg != "" {
				reply(codeTransactionConflict, msg)
				return
			}
		}
		for _, a := range ids {
			p := pendingAckPos{Ledger: a.pos.LedgerID, Entry: a.pos.EntryID, NumMsgs: s.entryMsgs(a.pos, a.batchSize)}
			if len(a.ackSet) > 0 {
				p.Size = max(a.batchSize, p.NumMsgs)
				p.Acked = ackedMask(a.ackSet, p.Size)
			}
			rec.Pos = append(rec.Pos, p)
		}
	}
	s.applyTxnAck(id, rec)
	if c != nil {
		s.lastAck = time.Now().UnixMilli()
		c.lastAck = s.lastAck
	}
	appendRecord(l, rec, func(err error) {
		if err != nil {
			s.do(func() { s.undoTxnAck(id, rec) })
			reply(codePersistenceError, "Pending ack not stored: "+err.Error())
			return
		}
		reply(0, "")
	})
}

// entryMsgs is the message count of a delivered entry (for redelivery
// after an abort).
func (s *subscription) entryMsgs(pos position, batchSize int) int {
	if pe := s.pending[pos]; pe != nil {
		return pe.numMsgs
	}
	return max(batchSize, 1)
}

// txnAckConflict returns why transaction id may not acknowledge a, or "".
func (s *subscription) txnAckConflict(id txn.ID, a ackID) string {
	pa := s.txnAcks
	if s.cur.IsAcked(a.pos) {
		return fmt.Sprintf("Transaction %s acknowledges %s, which is already acknowledged", id, a.pos)
	}
	h := pa.holds[a.pos]
	if len(a.ackSet) == 0 {
		if h == nil {
			return ""
		}
		if h.whole && h.wholeTxn != id {
			return fmt.Sprintf("Transaction %s acknowledges %s, which transaction %s acknowledged", id, a.pos, h.wholeTxn)
		}
		for o := range h.partial {
			if o != id {
				return fmt.Sprintf("Transaction %s acknowledges %s, of which transaction %s acknowledged messages", id, a.pos, o)
			}
		}
		return ""
	}
	size := max(a.batchSize, s.entryMsgs(a.pos, a.batchSize))
	mask := ackedMask(a.ackSet, size)
	if cur := s.cur.BatchAckSet(a.pos); cur != nil && overlaps(mask, ackedMask(cur, size)) {
		return fmt.Sprintf("Transaction %s acknowledges batch indexes of %s that are already acknowledged", id, a.pos)
	}
	if h == nil {
		return ""
	}
	if h.whole && h.wholeTxn != id {
		return fmt.Sprintf("Transaction %s acknowledges %s, which transaction %s acknowledged", id, a.pos, h.wholeTxn)
	}
	for o, m := range h.partial {
		if o != id && overlaps(mask, m) {
			return fmt.Sprintf("Transaction %s acknowledges batch indexes of %s that transaction %s acknowledged", id, a.pos, o)
		}
	}
	return ""
}

// applyTxnAck holds what rec acknowledges (also used by recovery, which
// does no conflict checks: the log holds only accepted acks).
func (s *subscription) applyTxnAck(id txn.ID, rec *pendingAckRecord) {
	pa := s.txnAcks
	ta := pa.txn(id)
	if rec.Cum {
		p := position{rec.Pos[0].Ledger, rec.Pos[0].Entry}
		if ta.cum == nil || ta.cum.Compare(p) < 0 {
			ta.cum = &p
		}
		pa.cum = &id
		return
	}
	for _, rp := range rec.Pos {
		pos := position{rp.Ledger, rp.Entry}
		h := pa.hold(pos)
		h.numMsgs = max(h.numMsgs, rp.NumMsgs)
		if len(rp.Acked) == 0 {
			ta.whole[pos] = struct{}{}
			h.whole, h.wholeTxn = true, id
			s.parkHeld(pos, h)
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

// parkHeld takes a whole-held entry out of its consumer's unacked set and
// the replay set: it is not redelivered while its transaction is open.
func (s *subscription) parkHeld(pos position, h *ackHold) {
	if h.parked != nil {
		return
	}
	if pe := s.pending[pos]; pe != nil {
		if o := pe.owner; o != nil {
			if _, ok := o.pending[pos]; ok {
				delete(o.pending, pos)
				s.addUnacked(o, -pe.numMsgs)
			}
			pe.owner = nil
		}
		delete(s.pending, pos)
		pe.data = nil
		h.parked = pe
		s.refreshBlocked()
		return
	}
	if i := slices.IndexFunc(s.replay, func(pe *pendingEntry) bool { return pe.pos == pos }); i >= 0 {
		pe := s.replay[i]
		s.setReplay(slices.Delete(s.replay, i, i+1))
		pe.data = nil
		h.parked = pe
	}
}

// txnHeldRead reports whether a freshly read entry is held whole by an
// open transaction (after a reload or seek); it is parked, not
// dispatched.
func (s *subscription) txnHeldRead(pos position, numMsgs int) bool {
	if s.txnAcks == nil {
		return false
	}
	h := s.txnAcks.holds[pos]
	if h == nil || !h.whole {
		return false
	}
	if h.parked == nil {
		h.parked = &pendingEntry{pos: pos, numMsgs: max(numMsgs, 1)}
	}
	return true
}

// undoTxnAck forgets an ack whose log write failed.
func (s *subscription) undoTxnAck(id txn.ID, rec *pendingAckRecord) {
	pa := s.txnAcks
	ta := pa.txns[id]
	if pa == nil || ta == nil {
		return
	}
	if rec.Cum {
		ta.cum = nil
		if pa.cum != nil && *pa.cum == id {
			pa.cum = nil
		}
	} else {
		for _, rp := range rec.Pos {
			pos := position{rp.Ledger, rp.Entry}
			s.releaseHold(id, ta, pos)
		}
	}
	s.dispatch()
}

// releaseHold drops id's hold on pos, returning a parked entry for
// redelivery.
func (s *subscription) releaseHold(id txn.ID, ta *txnAcks, pos position) {
	pa := s.txnAcks
	delete(ta.whole, pos)
	delete(ta.partial, pos)
	h := pa.holds[pos]
	if h == nil {
		return
	}
	if h.whole && h.wholeTxn == id {
		h.whole = false
		if pe := h.parked; pe != nil {
			h.parked = nil
			if !s.cur.IsAcked(pos) {
				s.insertReplay(pe)
			}
		}
	}
	delete(h.partial, id)
	if pe := s.pending[pos]; pe != nil && len(h.partial) == 0 && !h.whole {
		s.requeue(pe) // a partially acked batch goes back whole
	}
	pa.dropHoldIfEmpty(pos)
}

// endTxnAcks ends transaction id on s: the end is logged durably first,
// then applied (a crash in between replays the end at load).
func (s *subscription) endTxnAcks(ctx context.Context, id txn.ID, a txn.Action) error {
	var l *ackLog
	var known, done bool
	var conflict error
	if !s.call(func() {
		pa := s.txnAcks
		if pa == nil {
			return
		}
		l = pa.log
		if how, ok := pa.ended[id]; ok {
			done = true
			if how != a {
				conflict = reason(ErrTransactionConflict, fmt.Sprintf("Transaction %s was already %s on %s", id, pastTense(how), s.name))
			}
			return
		}
		_, known = pa.txns[id]
	}) {
		return reason(ErrClosed, "Subscription is closed")
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
			return fmt.Errorf("broker: log the %s of %s on %s: %w", op, id, s.name, err)
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	if !s.call(func() { s.applyTxnEnd(id, a) }) {
		// Logged: the next load applies it.
		return nil
	}
	return nil
}

// applyTxnEnd commits (acks to the cursor) or aborts (releases) id.
func (s *subscription) applyTxnEnd(id txn.ID, a txn.Action) {
	pa := s.txnAcks
	if pa == nil {
		return
	}
	defer pa.noteEnded(id, a)
	if pa.log != nil {
		// After the end is applied (deferred calls run last first).
		defer s.maybeTrimAckLog(pa.log.trim)
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
			s.releaseHold(id, ta, pos)
		}
		for pos := range ta.partial {
			s.releaseHold(id, ta, pos)
		}
		s.refreshBlocked()
		s.dispatch()
		return
	}
	pa.nCommit++
	var whole []position
	for pos := range ta.whole {
		h := pa.holds[pos]
		if h != nil && h.whole && h.wholeTxn == id {
			h.whole = false
			h.parked = nil
			s.ackedN += int64(h.numMsgs)
		}
		pa.dropHoldIfEmpty(pos)
		delete(s.redelivered, pos)
		if !s.cur.IsAcked(pos) {
			whole = append(whole, pos)
		}
	}
	slices.SortFunc(whole, position.Compare)
	if len(whole) > 0 {
		if err := s.cur.Ack(whole...); err != nil {
			s.ackFailLog.log(s.log, slog.LevelWarn, "transaction ack failed", "topic", s.topic, "sub", s.name, "txn", id.String(), "err", err)
		}
	}
	for pos, pk := range ta.partial {
		if h := pa.holds[pos]; h != nil {
			delete(h.partial, id)
			pa.dropHoldIfEmpty(pos)
		}
		if s.cur.IsAcked(pos) {
			continue
		}
		full, err := s.cur.AckBatchIndexes(pos, ackSetOf(pk.mask, pk.size), pk.size)
		if err != nil {
			s.ackFailLog.log(s.log, slog.LevelWarn, "transaction batch ack failed", "topic", s.topic, "sub", s.name, "txn", id.String(), "err", err)
			continue
		}
		s.ackedN += int64(popcount(pk.mask))
		if pe := s.pending[pos]; pe != nil && full {
			s.dropPending(pe)
		}
	}
	if ta.cum != nil {
		target := *ta.cum
		if target.Compare(s.cur.MarkDelete()) > 0 {
			if err := s.cur.AckCumulative(target); err != nil {
				s.ackFailLog.log(s.log, slog.LevelWarn, "transaction cumulative ack failed", "topic", s.topic, "sub", s.name, "txn", id.String(), "err", err)
			}
		}
		for pos, pe := range s.pending {
			if pos.Compare(target) <= 0 {
				s.dropPending(pe)
			}
		}
		s.setReplay(slices.DeleteFunc(s.replay, func(pe *pendingEntry) bool { return pe.pos.Compare(target) <= 0 }))
	}
	s.refreshBlocked()
	s.afterMarkDeleteLocked()
	s.dispatch()
}

// recoverPendingAcks replays the pending-ack logs of t's subscriptions at
// load (before any consumer attaches).
func (t *topic) recoverPendingAcks(ctx context.Context) error {
	dir := pendingAckPath + "/" + t.name.Tenant + "/" + t.name.Namespace + "/" + t.name.Domain + "/" + escapeLocal(t.name.Local)
	names, err := t.b.deps.Metadata.Children(ctx, dir)
	if errors.Is(err, metadata.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, n := range names {
		sub := unescapeLocal(n)
		t.mu.Lock()
		s := t.mu.subs[sub]
		t.mu.Unlock()
		if s == nil {
			continue // the subscription is gone; its log stays until the topic is deleted
		}
		start := time.Now()
		l, err := t.pendingAckLog(ctx, sub)
		if err != nil {
			return err
		}
		type logged struct {
			rec *pendingAckRecord
			pos position
		}
		var recs []logged
		for _, li := range l.ml.Stats().Ledgers {
			for e := int64(0); e < li.Entries; e++ {
				data, err := l.ml.ReadEntry(position{li.LedgerID, e})
				if err != nil {
					if errors.Is(err, errEntryGone) {
						break
					}
					return fmt.Errorf("broker: read the pending-ack log of %s/%s: %w", t.full, sub, err)
				}
				var r pendingAckRecord
				if err := json.Unmarshal(data, &r); err != nil {
					return fmt.Errorf("broker: pending-ack log of %s/%s at %d:%d: %w", t.full, sub, li.LedgerID, e, err)
				}
				recs = append(recs, logged{&r, position{li.LedgerID, e}})
			}
		}
		s.call(func() {
			s.txnAcks = newPendingAcks(l)
			for _, lr := range recs {
				r := lr.rec
				id := txn.ID{Most: r.Most, Least: r.Least}
				switch r.Op {
				case "ack":
					_, ended := s.txnAcks.ended[id]
					live := !ended && len(r.Pos) > 0
					l.trim.note(id, lr.pos, live)
					if live {
						s.applyTxnAck(id, r)
					}
				case "commit":
					l.trim.note(id, lr.pos, false)
					s.applyTxnEnd(id, txn.Commit)
				case "abort":
					l.trim.note(id, lr.pos, false)
					s.applyTxnEnd(id, txn.Abort)
				default:
					l.trim.note(id, lr.pos, false)
				}
			}
			s.txnAcks.recoverStart, s.txnAcks.recoverEnd = start, time.Now()
		})
	}
	return nil
}
