package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
	"github.com/magnetar-mq/magnetar/txn"
)

// Transaction buffer: the participant side of transactional produce on a
// persistent topic. docs/transactions.md ("Participants") has the model;
// in short:
//
//   - A SEND with a txn id is stored at once in the topic's managed ledger
//     with the id in its MessageMetadata (fields 22/23, stamped by the
//     broker when the client left them out).
//   - The buffer keeps the open transactions' first positions; the read
//     bound (max read position, exclusive) is the first position of the
//     oldest open transaction. Every cursor of the topic reads and counts
//     backlog only before it (mledger.SetReadBound).
//   - Ending a transaction appends a marker entry (marker_type TXN_COMMIT
//     21 / TXN_ABORT 22 with the txn id); aborted ids are kept, with the
//     abort marker's position, while the ledger holding it exists, and
//     dispatch acknowledges their entries without delivering them.
//   - State is snapshotted to the metadata store (txnBufferKey) and
//     rebuilt at load from the snapshot plus the entries after it. A
//     topic without snapshot never used transactions and gets no buffer:
//     its write and read paths are unchanged.

// Pulsar's MarkerType values for transaction markers (PulsarMarkers.proto).
const (
	markerTxnCommitting = 20
	markerTxnCommit     = 21
	markerTxnAbort      = 22
)

const (
	txnMarkerProducer = "pulsar.txn.marker"
	// txnBufferPath holds one snapshot per topic that used transactions.
	txnBufferPath = "/transactions/buffer"
	// txnSnapshotEvery and txnSnapshotInterval: a snapshot is taken after
	// this many transaction ends, or at a stats tick this long after the
	// previous one when the topic moved on.
	txnSnapshotEvery    = 100
	txnSnapshotInterval = 10 * time.Second
	// txnRecentCommitted bounds the committed ids remembered to refuse
	// late sends for them.
	txnRecentCommitted = 4096
)

// ErrTransactionConflict: a transactional acknowledgement conflicts with
// another transaction's or with an acknowledgement outside transactions,
// or a transaction is ended both ways.
var ErrTransactionConflict = errors.New("broker: transaction conflict")

// txnOpen is an open transaction on a topic.
type txnOpen struct {
	first position
	// provisional: no entry of the transaction is stored yet; first is a
	// lower bound (the position after the last confirmed entry when its
	// first add was submitted).
	provisional bool
	pending     int   // adds submitted, not yet completed
	entries     int64 // entries stored
	started     time.Time
}

// txnBuffer is a topic's transaction buffer. Lock order: topic locks >
// txnBuffer.snapMu > txnBuffer.mu > managed-ledger locks; managed-ledger
// callbacks take txnBuffer.mu (never the other way round: mu is not held
// while calling into the ledger, except LastConfirmed-free paths).
type txnBuffer struct {
	t *topic

	mu         sync.Mutex
	ongoing    map[txn.ID]*txnOpen
	aborted    map[txn.ID]position // abort marker position
	committed  map[txn.ID]struct{} // recent, bounded by txnRecentCommitted
	commitRing []txn.ID
	inflight   int      // txn adds and markers submitted, not completed
	applied    position // last position whose effect is in the state
	nCommitted int64
	nAborted   int64
	sinceSnap  int
	lastSnap   time.Time
	snapAt     position // applied at the last snapshot
	// recoverStart, recoverEnd: when the buffer was rebuilt at load (both
	// its creation time for a buffer started by a first transaction); set
	// before the buffer is published.
	recoverStart, recoverEnd time.Time

	// bound is the read bound (exclusive) or nil; read lock-free by the
	// managed ledger under its own lock.
	bound atomic.Pointer[position]

	snapMu sync.Mutex
}

// readBounder is implemented by storage that can hold cursors before a
// position (the mledger adapter).
type readBounder interface {
	SetReadBound(func() (position, bool))
}

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

func newTxnBuffer(t *topic) *txnBuffer {
	now := time.Now()
	return &txnBuffer{t: t, ongoing: map[txn.ID]*txnOpen{}, aborted: map[txn.ID]position{}, committed: map[txn.ID]struct{}{}, lastSnap: now,
		recoverStart: now, recoverEnd: now}
}

func (tb *txnBuffer) readBound() (position, bool) {
	if p := tb.bound.Load(); p != nil {
		return *p, true
	}
	return position{}, false
}

// recomputeLocked sets the bound to the first position of the oldest open
// transaction.
func (tb *txnBuffer) recomputeLocked() {
	var min *position
	for _, o := range tb.ongoing {
		if min == nil || o.first.Compare(*min) < 0 {
			f := o.first
			min = &f
		}
	}
	tb.bound.Store(min)
}

func (tb *txnBuffer) isAborted(id txn.ID) bool {
	tb.mu.Lock()
	_, ok := tb.aborted[id]
	tb.mu.Unlock()
	return ok
}

// ended reports how id ended here, if it is known to have.
func (tb *txnBuffer) ended(id txn.ID) (txn.Action, bool) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if _, ok := tb.aborted[id]; ok {
		return txn.Abort, true
	}
	if _, ok := tb.committed[id]; ok {
		return txn.Commit, true
	}
	return 0, false
}

// beforeAdd registers an add of id about to be submitted; lac is the last
// confirmed position read before the call (the entry lands after it).
func (tb *txnBuffer) beforeAdd(id txn.ID, lac position) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.inflight++
	o := tb.ongoing[id]
	if o == nil {
		o = &txnOpen{first: position{lac.LedgerID, lac.EntryID + 1}, provisional: true, started: time.Now()}
		tb.ongoing[id] = o
		tb.recomputeLocked()
	}
	o.pending++
}

// added completes an add registered by beforeAdd (from the ledger
// callback, in add order).
func (tb *txnBuffer) added(id txn.ID, pos position, err error) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.inflight--
	o := tb.ongoing[id]
	if o == nil {
		return // ended meanwhile
	}
	o.pending--
	if err != nil {
		if o.provisional && o.pending == 0 {
			delete(tb.ongoing, id)
			tb.recomputeLocked()
		}
		return
	}
	if o.provisional {
		o.first, o.provisional = pos, false
		tb.recomputeLocked()
	}
	o.entries++
	tb.applied = pos
}

// applyEndLocked records the end of id, whose marker is at pos.
func (tb *txnBuffer) applyEndLocked(id txn.ID, a txn.Action, pos position) {
	delete(tb.ongoing, id)
	if a == txn.Abort {
		tb.aborted[id] = pos
		tb.nAborted++
	} else {
		if _, ok := tb.committed[id]; !ok {
			tb.committed[id] = struct{}{}
			tb.commitRing = append(tb.commitRing, id)
			if len(tb.commitRing) > txnRecentCommitted {
				delete(tb.committed, tb.commitRing[0])
				tb.commitRing = tb.commitRing[1:]
			}
		}
		tb.nCommitted++
	}
	tb.sinceSnap++
	if tb.applied.Compare(pos) < 0 {
		tb.applied = pos
	}
	tb.recomputeLocked()
}

// txnBufferKey is the snapshot's metadata path.
func txnBufferKey(tn topicName) string {
	return txnBufferPath + "/" + tn.Tenant + "/" + tn.Namespace + "/" + tn.Domain + "/" + escapeLocal(tn.Local)
}

// txnSnapshot is the stored form of a transaction buffer: the state after
// every entry up to Position.
type txnSnapshot struct {
	Version   int            `json:"version"`
	Ledger    int64          `json:"ledgerId"`
	Entry     int64          `json:"entryId"`
	Ongoing   []txnSnapEntry `json:"ongoing,omitempty"`
	Aborted   []txnSnapEntry `json:"aborted,omitempty"`
	Committed int64          `json:"committedCount"`
	NAborted  int64          `json:"abortedCount"`
}

type txnSnapEntry struct {
	Most        uint64 `json:"most"`
	Least       uint64 `json:"least"`
	Ledger      int64  `json:"ledgerId"`
	Entry       int64  `json:"entryId"`
	Provisional bool   `json:"provisional,omitempty"`
}

// snapshot stores the buffer's state. It drops aborted ids whose marker's
// ledger is gone (every entry of theirs is gone with it).
func (tb *txnBuffer) snapshot(ctx context.Context) error {
	tb.snapMu.Lock()
	defer tb.snapMu.Unlock()
	t := tb.t
	lac, _ := t.ml.LastConfirmed()
	firstLedger := int64(-1)
	if ls := t.ml.Stats().Ledgers; len(ls) > 0 {
		firstLedger = ls[0].LedgerID
	}
	tb.mu.Lock()
	at := tb.applied
	if tb.inflight == 0 && at.Compare(lac) < 0 {
		// Nothing transactional in flight: the state covers every entry
		// confirmed before the lock was taken.
		at = lac
	}
	s := txnSnapshot{Version: 1, Ledger: at.LedgerID, Entry: at.EntryID, Committed: tb.nCommitted, NAborted: tb.nAborted}
	for id, o := range tb.ongoing {
		s.Ongoing = append(s.Ongoing, txnSnapEntry{id.Most, id.Least, o.first.LedgerID, o.first.EntryID, o.provisional})
	}
	for id, p := range tb.aborted {
		if p.LedgerID < firstLedger {
			delete(tb.aborted, id)
			continue
		}
		s.Aborted = append(s.Aborted, txnSnapEntry{Most: id.Most, Least: id.Least, Ledger: p.LedgerID, Entry: p.EntryID})
	}
	tb.sinceSnap = 0
	tb.lastSnap = time.Now()
	prev := tb.snapAt
	tb.snapAt = at
	tb.mu.Unlock()
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if _, err := t.b.deps.Metadata.Put(ctx, txnBufferKey(t.name), b, metadata.AnyVersion); err != nil {
		tb.mu.Lock()
		tb.snapAt = prev
		tb.mu.Unlock()
		return fmt.Errorf("broker: transaction buffer snapshot of %s: %w", t.full, err)
	}
	return nil
}

// maybeSnapshot snapshots after many ends, or when the state has moved
// and the last snapshot is old (stats tick).
func (tb *txnBuffer) maybeSnapshot(tick bool) {
	lac, _ := tb.t.ml.LastConfirmed()
	tb.mu.Lock()
	due := tb.sinceSnap >= txnSnapshotEvery
	if tick && time.Since(tb.lastSnap) >= txnSnapshotInterval {
		due = due || tb.sinceSnap > 0 || tb.snapAt.Compare(lac) < 0
	}
	tb.mu.Unlock()
	if !due {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	if err := tb.snapshot(ctx); err != nil {
		tb.t.log.Warn("transaction buffer snapshot", "topic", tb.t.full, "err", err)
	}
}

// txnTick is the stats-loop hook: snapshot when due.
func (t *topic) txnTick() {
	if tb := t.txnBuf.Load(); tb != nil && !t.isClosed() {
		tb.maybeSnapshot(true)
	}
}

// txnBuffer returns the topic's transaction buffer, creating it (and its
// first snapshot, which marks the topic as using transactions) if needed.
func (t *topic) txnBuffer(ctx context.Context) (*txnBuffer, error) {
	if tb := t.txnBuf.Load(); tb != nil {
		return tb, nil
	}
	if !t.persistent() {
		return nil, reason(ErrNotAllowed, "Transactions need a persistent topic")
	}
	rb, ok := t.ml.(readBounder)
	if !ok {
		return nil, reason(ErrNotAllowed, "The topic's storage does not support transactions")
	}
	t.txnInit.Lock()
	defer t.txnInit.Unlock()
	if tb := t.txnBuf.Load(); tb != nil {
		return tb, nil
	}
	tb := newTxnBuffer(t)
	tb.applied, _ = t.ml.LastConfirmed()
	if err := tb.snapshot(ctx); err != nil {
		return nil, err
	}
	rb.SetReadBound(tb.readBound)
	t.txnBuf.Store(tb)
	return tb, nil
}

// txnAborted reports whether id is aborted on t (dispatch skips its
// entries).
func (t *topic) txnAborted(id txn.ID) bool {
	tb := t.txnBuf.Load()
	return tb != nil && tb.isAborted(id)
}

// txnBeforeAdd and txnAdded are the publish path's hooks for an entry
// sent in a transaction.
func (t *topic) txnBeforeAdd(ts *txnSend) {
	lac, _ := t.ml.LastConfirmed()
	ts.tb.beforeAdd(ts.id, lac)
}

func (t *topic) txnAdded(ts *txnSend, pos position, err error) {
	ts.tb.added(ts.id, pos, err)
}

// txnSend marks an entry sent in a transaction (entryBuf.txn).
type txnSend struct {
	id txn.ID
	tb *txnBuffer
}

// stampTxnID returns data with the txn id in its MessageMetadata (fields
// txnid_least_bits 22 / txnid_most_bits 23), re-checksummed, as a new
// entry with headroom; data itself if it already carries that id.
func stampTxnID(in entryBuf, id txn.ID) (entryBuf, error) {
	e, err := pulsarproto.ParseEntry(in.data())
	if err != nil {
		return entryBuf{}, err
	}
	var md pulsarproto.Metadata
	if err := pulsarproto.ParseMetadata(e.Metadata, &md); err != nil {
		return entryBuf{}, err
	}
	if md.HasTxnid && md.TxnidMostBits == id.Most && md.TxnidLeastBits == id.Least && e.BrokerEntryMetadata == nil {
		return in, nil
	}
	meta := make([]byte, 0, len(e.Metadata)+24)
	meta = append(meta, e.Metadata...)
	// Appended fields override earlier occurrences (protobuf: last wins).
	meta = protowire.AppendTag(meta, 22, protowire.VarintType)
	meta = protowire.AppendVarint(meta, id.Least)
	meta = protowire.AppendTag(meta, 23, protowire.VarintType)
	meta = protowire.AppendVarint(meta, id.Most)
	buf := make([]byte, mledger.EntryHeadroom, mledger.EntryHeadroom+10+len(meta)+len(e.Payload))
	buf = pulsarproto.AppendEntry(buf, meta, e.Payload)
	return entryBuf{buf: buf, off: mledger.EntryHeadroom}, nil
}

// txnMarkerEntry builds a TXN_COMMIT / TXN_ABORT marker entry.
func txnMarkerEntry(id txn.ID, a txn.Action) ([]byte, error) {
	typ := int32(markerTxnCommit)
	if a == txn.Abort {
		typ = markerTxnAbort
	}
	md := &pb.MessageMetadata{
		ProducerName:   proto.String(txnMarkerProducer),
		SequenceId:     proto.Uint64(0),
		PublishTime:    proto.Uint64(uint64(time.Now().UnixMilli())),
		MarkerType:     proto.Int32(typ),
		TxnidMostBits:  proto.Uint64(id.Most),
		TxnidLeastBits: proto.Uint64(id.Least),
	}
	meta, err := proto.Marshal(md)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, mledger.EntryHeadroom, mledger.EntryHeadroom+10+len(meta))
	return pulsarproto.AppendEntry(buf, meta, nil), nil
}

// endTxn ends id on t: it appends the marker and applies it once
// durable. Ending an aborted transaction again by abort succeeds without
// a new marker; committing an aborted one (or aborting a committed one
// still remembered) is ErrTransactionConflict.
func (t *topic) endTxn(ctx context.Context, id txn.ID, a txn.Action) error {
	tb := t.txnBuf.Load()
	if tb == nil {
		// No transaction ever stored an entry here: nothing to end.
		return nil
	}
	if how, ok := tb.ended(id); ok {
		if how == a {
			return nil
		}
		return reason(ErrTransactionConflict, fmt.Sprintf("Transaction %s was already %s on %s", id, pastTense(how), t.full))
	}
	buf, err := txnMarkerEntry(id, a)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	t.pub.RLock()
	if t.pub.stopped || !t.b.owns(t) {
		t.pub.RUnlock()
		return reason(ErrClosed, "Topic is being unloaded")
	}
	tb.mu.Lock()
	tb.inflight++
	tb.mu.Unlock()
	t.adds.Add(1)
	t.ml.AddEntry(buf, mledger.EntryHeadroom, 1, func(pos position, err error) {
		defer t.adds.Done()
		tb.mu.Lock()
		tb.inflight--
		if err == nil {
			tb.applyEndLocked(id, a, pos)
		}
		tb.mu.Unlock()
		if err == nil {
			t.wakeSubs()
			t.wakeReplicators()
		}
		done <- err
	})
	t.pub.RUnlock()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("broker: write %s marker of %s on %s: %w", a, id, t.full, err)
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	tb.maybeSnapshot(false)
	return nil
}

func pastTense(a txn.Action) string {
	if a == txn.Abort {
		return "aborted"
	}
	return "committed"
}

// recoverTxnBuffer rebuilds the buffer at topic load from its snapshot and
// the entries after it. No snapshot: the topic never used transactions.
func (t *topic) recoverTxnBuffer(ctx context.Context) error {
	start := time.Now()
	raw, _, err := t.b.deps.Metadata.Get(ctx, txnBufferKey(t.name))
	if errors.Is(err, metadata.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var s txnSnapshot
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("broker: transaction buffer snapshot of %s: %w", t.full, err)
	}
	rb, ok := t.ml.(readBounder)
	if !ok {
		return fmt.Errorf("broker: %s has transaction state but its storage cannot bound reads", t.full)
	}
	tb := newTxnBuffer(t)
	tb.nCommitted, tb.nAborted = s.Committed, s.NAborted
	for _, o := range s.Ongoing {
		tb.ongoing[txn.ID{Most: o.Most, Least: o.Least}] = &txnOpen{first: position{o.Ledger, o.Entry}, provisional: o.Provisional, started: time.Now()}
	}
	for _, a := range s.Aborted {
		tb.aborted[txn.ID{Most: a.Most, Least: a.Least}] = position{a.Ledger, a.Entry}
	}
	from := position{s.Ledger, s.Entry}
	tb.applied, tb.snapAt = from, from
	n, err := t.replayTxnEntries(tb, from)
	if err != nil {
		return err
	}
	tb.recomputeLocked()
	tb.recoverStart, tb.recoverEnd = start, time.Now()
	rb.SetReadBound(tb.readBound)
	t.txnBuf.Store(tb)
	if n > 0 {
		if err := tb.snapshot(ctx); err != nil {
			t.log.Warn("transaction buffer snapshot after recovery", "topic", t.full, "err", err)
		}
	}
	return nil
}

// replayTxnEntries applies the entries after from to tb (not yet
// published, so no lock is needed) and returns how many it read.
func (t *topic) replayTxnEntries(tb *txnBuffer, from position) (int, error) {
	n := 0
	for _, l := range t.ml.Stats().Ledgers {
		if l.LedgerID < from.LedgerID || l.Entries == 0 {
			continue
		}
		start := int64(0)
		if l.LedgerID == from.LedgerID {
			start = from.EntryID + 1
		}
		for e := start; e < l.Entries; e++ {
			pos := position{l.LedgerID, e}
			data, err := t.ml.ReadEntry(pos)
			if err != nil {
				if errors.Is(err, errEntryGone) {
					break
				}
				return n, fmt.Errorf("broker: replay %s at %s for transactions: %w", t.full, pos, err)
			}
			n++
			tb.replayEntry(pos, data)
		}
	}
	return n, nil
}

func (tb *txnBuffer) replayEntry(pos position, data []byte) {
	e, err := pulsarproto.ParseEntry(data)
	if err != nil {
		return
	}
	var md pulsarproto.Metadata
	if pulsarproto.ParseMetadata(e.Metadata, &md) != nil || !md.HasTxnid {
		return
	}
	id := txn.ID{Most: md.TxnidMostBits, Least: md.TxnidLeastBits}
	switch {
	case md.HasMarkerType && md.MarkerType == markerTxnCommit:
		tb.applyEndLocked(id, txn.Commit, pos)
	case md.HasMarkerType && md.MarkerType == markerTxnAbort:
		if _, ok := tb.aborted[id]; !ok {
			tb.applyEndLocked(id, txn.Abort, pos)
		}
	case md.HasMarkerType:
	default:
		if _, ok := tb.aborted[id]; ok {
			return
		}
		if _, ok := tb.committed[id]; ok {
			return
		}
		if o := tb.ongoing[id]; o == nil {
			tb.ongoing[id] = &txnOpen{first: pos, started: time.Now(), entries: 1}
		} else {
			if o.provisional {
				o.first, o.provisional = pos, false
			}
			o.entries++
		}
		tb.applied = pos
	}
}

// txnLastMessage is lastMessage for a topic with a transaction buffer:
// the last data entry before the read bound that is neither a marker nor
// of an aborted transaction (GET_LAST_MESSAGE_ID must name a message a
// reader can get, or the client waits for it forever).
func (t *topic) txnLastMessage(tb *txnBuffer) (position, int32, bool) {
	lac, ok := t.ml.LastConfirmed()
	if !ok {
		return lac, -1, false
	}
	none := position{lac.LedgerID, -1}
	ls := t.ml.Stats().Ledgers
	p := lac
	if b, bounded := tb.readBound(); bounded && b.Compare(lac) <= 0 {
		if p, ok = prevPosition(ls, b); !ok {
			return none, -1, false
		}
	}
	for range txnLastMessageScan {
		data, err := t.ml.ReadEntry(p)
		if err != nil {
			return p, -1, true
		}
		pm, err := parseEntryMeta(data)
		if err != nil {
			return p, -1, true
		}
		if pm.marker == 0 && !(pm.hasTxn && tb.isAborted(pm.txnID)) {
			if pm.batch {
				return p, int32(pm.numMsgs - 1), true
			}
			return p, -1, true
		}
		if p, ok = prevPosition(ls, p); !ok {
			return none, -1, false
		}
	}
	return p, -1, true
}

// txnLastMessageScan bounds the entries txnLastMessage steps back over.
const txnLastMessageScan = 10000

// prevPosition returns the entry before p in ledgers ls.
func prevPosition(ls []mledger.LedgerInfo, p position) (position, bool) {
	if p.EntryID > 0 {
		for _, l := range ls {
			if l.LedgerID == p.LedgerID && l.Entries > 0 {
				return position{p.LedgerID, min(p.EntryID-1, l.Entries-1)}, true
			}
		}
	}
	for i := len(ls) - 1; i >= 0; i-- {
		if ls[i].LedgerID < p.LedgerID && ls[i].Entries > 0 {
			return position{ls[i].LedgerID, ls[i].Entries - 1}, true
		}
	}
	return position{}, false
}
