package server

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

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/storage"
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
//   - State is snapshotted to the metadata store (bufferKey) and
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
	// bufferPath holds one snapshot per topic that used transactions.
	bufferPath = "/transactions/buffer"
	// txnSnapshotEvery and txnSnapshotInterval: a snapshot is taken after
	// this many transaction ends, or at a stats tick this long after the
	// previous one when the topic moved on.
	txnSnapshotEvery    = 100
	txnSnapshotInterval = 10 * time.Second
	// txnRecentCommitted bounds the committed ids remembered to refuse
	// late sends for them.
	txnRecentCommitted = 4096
)

// txnOpen is an open transaction on a topic.
type txnOpen struct {
	first storage.Position
	// provisional: no entry of the transaction is stored yet; first is a
	// lower bound (the position after the last confirmed entry when its
	// first add was submitted).
	provisional bool
	pending     int   // adds submitted, not yet completed
	entries     int64 // entries stored
	started     time.Time
}

// buffer is a topic's transaction buffer. Lock order: topicTxn.mu >
// buffer.snapMu > buffer.mu > managed-ledger locks; managed-ledger
// callbacks take buffer.mu (never the other way round: mu is not held
// while calling into the ledger, except LastConfirmed-free paths).
type buffer struct {
	s *Server
	t broker.Topic

	mu         sync.Mutex
	ongoing    map[txn.ID]*txnOpen
	aborted    map[txn.ID]storage.Position // abort marker position
	committed  map[txn.ID]struct{}         // recent, bounded by txnRecentCommitted
	commitRing []txn.ID
	inflight   int              // txn adds and markers submitted, not completed
	applied    storage.Position // last position whose effect is in the state
	nCommitted int64
	nAborted   int64
	sinceSnap  int
	lastSnap   time.Time
	snapAt     storage.Position // applied at the last snapshot
	// recoverStart, recoverEnd: when the buffer was rebuilt at load (both
	// its creation time for a buffer started by a first transaction); set
	// before the buffer is published.
	recoverStart, recoverEnd time.Time

	// bound is the read bound (exclusive) or nil; read lock-free by the
	// managed ledger under its own lock.
	bound atomic.Pointer[storage.Position]

	snapMu sync.Mutex
}

func newBuffer(s *Server, t broker.Topic) *buffer {
	now := time.Now()
	return &buffer{s: s, t: t, ongoing: map[txn.ID]*txnOpen{}, aborted: map[txn.ID]storage.Position{}, committed: map[txn.ID]struct{}{}, lastSnap: now,
		recoverStart: now, recoverEnd: now}
}

func (tb *buffer) readBound() (storage.Position, bool) {
	if p := tb.bound.Load(); p != nil {
		return *p, true
	}
	return storage.Position{}, false
}

// recomputeLocked sets the bound to the first position of the oldest open
// transaction.
func (tb *buffer) recomputeLocked() {
	var min *storage.Position
	for _, o := range tb.ongoing {
		if min == nil || o.first.Compare(*min) < 0 {
			f := o.first
			min = &f
		}
	}
	tb.bound.Store(min)
}

func (tb *buffer) isAborted(id txn.ID) bool {
	tb.mu.Lock()
	_, ok := tb.aborted[id]
	tb.mu.Unlock()
	return ok
}

// ended reports how id ended here, if it is known to have.
func (tb *buffer) ended(id txn.ID) (txn.Action, bool) {
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
func (tb *buffer) beforeAdd(id txn.ID, lac storage.Position) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.inflight++
	o := tb.ongoing[id]
	if o == nil {
		o = &txnOpen{first: storage.Position{LedgerID: lac.LedgerID, EntryID: lac.EntryID + 1}, provisional: true, started: time.Now()}
		tb.ongoing[id] = o
		tb.recomputeLocked()
	}
	o.pending++
}

// added completes an add registered by beforeAdd (from the ledger
// callback, in add order).
func (tb *buffer) added(id txn.ID, pos storage.Position, err error) {
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
func (tb *buffer) applyEndLocked(id txn.ID, a txn.Action, pos storage.Position) {
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

// bufferKey is the snapshot's metadata path.
func bufferKey(t broker.Topic) string {
	return bufferPath + "/" + topicPath(t)
}

// topicPath is t's part of a metadata path: tenant/ns/domain/<local>, as
// the broker's own paths (broker.EscapeName).
func topicPath(t broker.Topic) string {
	tn := t.TopicName()
	return tn.Tenant + "/" + tn.Namespace + "/" + tn.Domain + "/" + broker.EscapeName(tn.Local)
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
func (tb *buffer) snapshot(ctx context.Context) error {
	tb.snapMu.Lock()
	defer tb.snapMu.Unlock()
	ml := tb.t.Ledger()
	lac, _ := ml.LastConfirmed()
	firstLedger := int64(-1)
	if ls := ml.Stats().Ledgers; len(ls) > 0 {
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
	if _, err := tb.s.b.Metadata().Put(ctx, bufferKey(tb.t), b, metadata.AnyVersion); err != nil {
		tb.mu.Lock()
		tb.snapAt = prev
		tb.mu.Unlock()
		return fmt.Errorf("txn/server: transaction buffer snapshot of %s: %w", tb.t.Name(), err)
	}
	return nil
}

// maybeSnapshot snapshots after many ends, or when the state has moved
// and the last snapshot is old (stats tick).
func (tb *buffer) maybeSnapshot(tick bool) {
	lac, _ := tb.t.Ledger().LastConfirmed()
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
		tb.s.log.Warn("transaction buffer snapshot", "topic", tb.t.Name(), "err", err)
	}
}

// buffer returns the topic's transaction buffer, creating it (and its
// first snapshot, which marks the topic as using transactions) if needed.
func (s *Server) buffer(ctx context.Context, tt *topicTxn) (*buffer, error) {
	if tb := tt.buf.Load(); tb != nil {
		return tb, nil
	}
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tb := tt.buf.Load(); tb != nil {
		return tb, nil
	}
	// Setting no bound tells whether the storage can bound reads, before
	// the snapshot marks the topic as using transactions.
	if err := tt.t.SetReadBound(nil); err != nil {
		return nil, broker.Reason(broker.ErrNotAllowed, "The topic's storage does not support transactions")
	}
	tb := newBuffer(s, tt.t)
	tb.applied, _ = tt.t.Ledger().LastConfirmed()
	if err := tb.snapshot(ctx); err != nil {
		return nil, err
	}
	_ = tt.t.SetReadBound(tb.readBound)
	tt.buf.Store(tb)
	return tb, nil
}

// txnSend is the publish hook of an entry sent in a transaction
// (Entry.Attach): it registers the add with the topic's buffer.
type txnSend struct {
	id txn.ID
	tb *buffer
}

func (ts *txnSend) BeforeAdd(t broker.Topic, _ *broker.Entry) {
	lac, _ := t.Ledger().LastConfirmed()
	ts.tb.beforeAdd(ts.id, lac)
}

func (ts *txnSend) AfterAdd(_ broker.Topic, _ *broker.Entry, pos storage.Position, err error) {
	ts.tb.added(ts.id, pos, err)
}

// errBadMetadata: an entry's MessageMetadata does not parse.
var errBadMetadata = errors.New("txn/server: unparsable message metadata")

// stampTxnID puts the txn id in e's MessageMetadata (fields
// txnid_least_bits 22 / txnid_most_bits 23), re-checksummed, as a new
// entry with headroom; e stays as is if it already carries that id.
func stampTxnID(e *broker.Entry, id txn.ID) error {
	md := e.Meta()
	if md == nil {
		return errBadMetadata
	}
	if md.HasTxnid && md.TxnidMostBits == id.Most && md.TxnidLeastBits == id.Least {
		return nil
	}
	metadata, payload := e.Sections()
	meta := make([]byte, 0, len(metadata)+24)
	meta = append(meta, metadata...)
	// Appended fields override earlier occurrences (protobuf: last wins).
	meta = protowire.AppendTag(meta, 22, protowire.VarintType)
	meta = protowire.AppendVarint(meta, id.Least)
	meta = protowire.AppendTag(meta, 23, protowire.VarintType)
	meta = protowire.AppendVarint(meta, id.Most)
	buf := make([]byte, mledger.EntryHeadroom, mledger.EntryHeadroom+10+len(meta)+len(payload))
	buf = pulsarproto.AppendEntry(buf, meta, payload)
	e.SetData(buf, mledger.EntryHeadroom)
	md.HasTxnid, md.TxnidMostBits, md.TxnidLeastBits = true, id.Most, id.Least
	return nil
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
// still remembered) is ErrConflict.
func (s *Server) endOnTopic(ctx context.Context, tt *topicTxn, id txn.ID, a txn.Action) error {
	tb := tt.buf.Load()
	if tb == nil {
		// No transaction ever stored an entry here: nothing to end.
		return nil
	}
	if how, ok := tb.ended(id); ok {
		if how == a {
			return nil
		}
		return broker.Reason(ErrConflict, fmt.Sprintf("Transaction %s was already %s on %s", id, pastTense(how), tt.t.Name()))
	}
	buf, err := txnMarkerEntry(id, a)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	tb.mu.Lock()
	tb.inflight++
	tb.mu.Unlock()
	err = tt.t.Append(buf, mledger.EntryHeadroom, func(pos storage.Position, err error) {
		tb.mu.Lock()
		tb.inflight--
		if err == nil {
			tb.applyEndLocked(id, a, pos)
		}
		tb.mu.Unlock()
		done <- err
	})
	if err != nil {
		tb.mu.Lock()
		tb.inflight--
		tb.mu.Unlock()
		return err
	}
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("txn/server: write %s marker of %s on %s: %w", a, id, tt.t.Name(), err)
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	tb.maybeSnapshot(false)
	return nil
}

// recoverBuffer rebuilds the buffer at topic load from its snapshot and
// the entries after it. No snapshot: the topic never used transactions.
func (s *Server) recoverBuffer(ctx context.Context, tt *topicTxn) error {
	start := time.Now()
	t := tt.t
	raw, _, err := s.b.Metadata().Get(ctx, bufferKey(t))
	if errors.Is(err, metadata.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var snap txnSnapshot
	if err := json.Unmarshal(raw, &snap); err != nil {
		return fmt.Errorf("txn/server: transaction buffer snapshot of %s: %w", t.Name(), err)
	}
	tb := newBuffer(s, t)
	tb.nCommitted, tb.nAborted = snap.Committed, snap.NAborted
	for _, o := range snap.Ongoing {
		tb.ongoing[txn.ID{Most: o.Most, Least: o.Least}] = &txnOpen{first: storage.Position{LedgerID: o.Ledger, EntryID: o.Entry}, provisional: o.Provisional, started: time.Now()}
	}
	for _, a := range snap.Aborted {
		tb.aborted[txn.ID{Most: a.Most, Least: a.Least}] = storage.Position{LedgerID: a.Ledger, EntryID: a.Entry}
	}
	from := storage.Position{LedgerID: snap.Ledger, EntryID: snap.Entry}
	tb.applied, tb.snapAt = from, from
	n, err := tb.replay(from)
	if err != nil {
		return err
	}
	tb.recomputeLocked()
	tb.recoverStart, tb.recoverEnd = start, time.Now()
	if err := t.SetReadBound(tb.readBound); err != nil {
		return fmt.Errorf("txn/server: %s has transaction state: %w", t.Name(), err)
	}
	tt.buf.Store(tb)
	if n > 0 {
		if err := tb.snapshot(ctx); err != nil {
			s.log.Warn("transaction buffer snapshot after recovery", "topic", t.Name(), "err", err)
		}
	}
	return nil
}

// replay applies the entries after from to tb (not yet published, so no
// lock is needed) and returns how many it read.
func (tb *buffer) replay(from storage.Position) (int, error) {
	n := 0
	ml := tb.t.Ledger()
	for _, l := range ml.Stats().Ledgers {
		if l.LedgerID < from.LedgerID || l.Entries == 0 {
			continue
		}
		start := int64(0)
		if l.LedgerID == from.LedgerID {
			start = from.EntryID + 1
		}
		for e := start; e < l.Entries; e++ {
			pos := storage.Position{LedgerID: l.LedgerID, EntryID: e}
			data, err := ml.ReadEntry(pos)
			if err != nil {
				if errors.Is(err, broker.ErrEntryGone) {
					break
				}
				return n, fmt.Errorf("txn/server: replay %s at %s for transactions: %w", tb.t.Name(), pos, err)
			}
			n++
			tb.replayEntry(pos, data)
		}
	}
	return n, nil
}

func (tb *buffer) replayEntry(pos storage.Position, data []byte) {
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
