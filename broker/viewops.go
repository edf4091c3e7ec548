package broker

import (
	"context"
	"errors"
	"strings"

	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// The operations on one loaded topic and its subscriptions that the
// administration layer (package brokeradmin) builds on: a topic is
// reached with Broker.Topic (loading it if it exists), a subscription by
// its name on the topic. Errors wrap ErrSubscriptionNotFound,
// ErrAlreadyExists, ErrNotAllowed or ErrPreconditionFailed, with the
// reason to give a client. Operations that move cursors tell the
// CursorObservers (a held producer may resume).

// Partition returns the topic's partition index (-1: not a partition).
func (v Topic) Partition() int { return v.t.partition }

// BundleKey returns the key of the topic's bundle in its cluster ("" on
// a single node).
func (v Topic) BundleKey() string { return v.t.bundleKey }

// FullStats returns the topic's stats as the admin API reports them:
// Stats and the storage reads (earliest message in each backlog, last
// publish time after a reload).
func (v Topic) FullStats() TopicStats { return v.t.stats() }

// CursorsMoved tells the CursorObservers that an operation moved cursors
// of the topic (a held producer may resume).
func (v Topic) CursorsMoved() { v.t.b.cursorsMoved(v.t) }

// InternalStats is Pulsar's PersistentTopicInternalStats (subset).
type InternalStats struct {
	EntriesAddedCounter int64 `json:"entriesAddedCounter"`
	NumberOfEntries     int64 `json:"numberOfEntries"`
	TotalSize           int64 `json:"totalSize"`
	// OffloadedSize and BookieSize split TotalSize (Magnetar): bytes in
	// completed offloads, bytes still on the bookies.
	OffloadedSize        int64                          `json:"offloadedSize"`
	BookieSize           int64                          `json:"bookieSize"`
	CurrentLedgerEntries int64                          `json:"currentLedgerEntries"`
	CurrentLedgerSize    int64                          `json:"currentLedgerSize"`
	LastConfirmedEntry   string                         `json:"lastConfirmedEntry"`
	State                string                         `json:"state"`
	Ledgers              []InternalLedgerInfo           `json:"ledgers"`
	Cursors              map[string]InternalCursorStats `json:"cursors"`
	// Compaction state (package compact); absent if never compacted.
	CompactedLedger         *InternalLedgerInfo `json:"compactedLedger,omitempty"`
	CompactionHorizon       string              `json:"compactionHorizon,omitempty"`
	PendingCompactionLedger *int64              `json:"pendingCompactionLedger,omitempty"`
}

// InternalLedgerInfo is one ledger of InternalStats.
type InternalLedgerInfo struct {
	LedgerID  int64 `json:"ledgerId"`
	Entries   int64 `json:"entries"`
	Size      int64 `json:"size"`
	Timestamp int64 `json:"timestamp"`
	Offloaded bool  `json:"offloaded"`
	// UnderReplicated is Pulsar's field (always false here).
	UnderReplicated bool `json:"underReplicated"`
	// BookkeeperDeleted (Magnetar): the bookie copy of the offloaded
	// ledger is gone.
	BookkeeperDeleted bool `json:"bookkeeperDeleted"`
}

// InternalCursorStats is one cursor of InternalStats.
type InternalCursorStats struct {
	MarkDeletePosition                       string `json:"markDeletePosition"`
	ReadPosition                             string `json:"readPosition"`
	CursorLedger                             int64  `json:"cursorLedger"`
	State                                    string `json:"state"`
	NumberOfEntriesSinceFirstNotAckedMessage int64  `json:"numberOfEntriesSinceFirstNotAckedMessage"`
	TotalNonContiguousDeletedMessagesRange   int64  `json:"totalNonContiguousDeletedMessagesRange"`
	MessagesConsumedCounter                  int64  `json:"messagesConsumedCounter"`
	Durable                                  bool   `json:"durable"`
	BacklogMessages                          int64  `json:"backlogMessages"`
}

// InternalStats returns Pulsar's internal stats of the topic (managed
// ledger and cursors, and what the StatsHooks add).
func (v Topic) InternalStats(ctx context.Context) InternalStats {
	t := v.t
	if !t.persistent() {
		// As Pulsar's non-persistent topic: no storage, one empty
		// cursor entry per subscription.
		out := InternalStats{EntriesAddedCounter: t.msgIn.Load(), Ledgers: []InternalLedgerInfo{}, Cursors: map[string]InternalCursorStats{}}
		for _, s := range *t.subList.Load() {
			out.Cursors[s.name] = InternalCursorStats{}
		}
		return out
	}
	out := internalStatsOf(t.ml.Stats())
	for _, h := range t.b.ext.stats {
		h.AddInternalStats(ctx, v, &out)
	}
	return out
}

// internalStatsOf is Pulsar's PersistentTopicInternalStats of a managed
// ledger.
func internalStatsOf(s mledger.Stats) InternalStats {
	out := InternalStats{
		EntriesAddedCounter: s.EntriesAddedCounter,
		NumberOfEntries:     s.NumberOfEntries,
		TotalSize:           s.TotalSize,
		OffloadedSize:       s.OffloadedSize,
		BookieSize:          s.BookieSize,
		LastConfirmedEntry:  toPos(s.LastConfirmed).String(),
		State:               "LedgerOpened",
		Ledgers:             []InternalLedgerInfo{},
		Cursors:             map[string]InternalCursorStats{},
	}
	if s.Terminated {
		out.State = "Terminated"
	}
	for _, l := range s.Ledgers {
		out.Ledgers = append(out.Ledgers, InternalLedgerInfo{LedgerID: l.LedgerID, Entries: l.Entries, Size: l.Size, Timestamp: l.Timestamp,
			Offloaded: l.Offload != nil && l.Offload.Complete, UnderReplicated: false,
			BookkeeperDeleted: l.Offload != nil && l.Offload.BookkeeperDeleted})
	}
	if n := len(s.Ledgers); n > 0 {
		out.CurrentLedgerEntries, out.CurrentLedgerSize = s.Ledgers[n-1].Entries, s.Ledgers[n-1].Size
	}
	for _, c := range s.Cursors {
		out.Cursors[c.Name] = InternalCursorStats{
			MarkDeletePosition:                       toPos(c.MarkDelete).String(),
			ReadPosition:                             toPos(c.ReadPosition).String(),
			CursorLedger:                             c.CursorLedger,
			State:                                    "Open",
			NumberOfEntriesSinceFirstNotAckedMessage: c.BacklogEntries,
			TotalNonContiguousDeletedMessagesRange:   c.IndividuallyDeletedCount,
			Durable:                                  c.Durable,
			BacklogMessages:                          c.BacklogMessages,
		}
	}
	return out
}

// LastMessageID returns the id of the topic's last message.
func (v Topic) LastMessageID() MessageID {
	t := v.t
	pos, bi, _ := t.lastMessage()
	return MessageID{LedgerID: pos.LedgerID, EntryID: pos.EntryID, Partition: t.partition, BatchIndex: bi}
}

// Terminate refuses further publishes and returns the last message id
// (ErrNotAllowed for a non-persistent topic).
func (v Topic) Terminate() (MessageID, error) {
	t := v.t
	if !t.persistent() {
		return MessageID{}, reason(ErrNotAllowed, "Termination of a non-persistent topic is not allowed")
	}
	// Close the producers before the ledger refuses adds: a client must
	// see CLOSE_PRODUCER first (its reconnect is then refused with
	// TopicTerminated and fails what it has pending with that), never a
	// SEND_ERROR TopicTerminated before it, which makes pulsar-client-go
	// forget the producer so that its pending sends time out. Adds of the
	// closed producers that still reach the terminated ledger are dropped
	// unanswered (publishFailed); a SEND on a closed producer closes the
	// connection, as in Pulsar.
	t.mu.Lock()
	t.mu.terminated = true
	ps := make([]*producer, 0, len(t.mu.producers)+len(t.mu.waiting))
	for _, pr := range t.mu.producers {
		ps = append(ps, pr)
	}
	ps = append(ps, t.mu.waiting...)
	t.mu.Unlock()
	for _, pr := range ps {
		t.removeProducer(pr)
		pr.sink.closeProducer(pr)
	}
	pos, err := t.ml.Terminate()
	if err != nil && !errors.Is(err, ErrTerminated) {
		t.mu.Lock()
		t.mu.terminated = false // producers may come back
		t.mu.Unlock()
		return MessageID{}, err
	}
	t.held.drop(heldBy(nil))
	return MessageID{LedgerID: pos.LedgerID, EntryID: pos.EntryID, Partition: t.partition, BatchIndex: -1}, nil
}

// CreateSubscription adds a durable subscription positioned at id
// (Earliest, Latest or the entry to read first).
func (v Topic) CreateSubscription(name string, id MessageID) error {
	t := v.t
	if err := pulsarproto.CheckSubscriptionName(name); err != nil {
		return reason(ErrPreconditionFailed, err.Error())
	}
	if strings.HasPrefix(name, ReplicatorPrefix+".") {
		return reason(ErrPreconditionFailed, "Subscription name "+name+" is reserved for replication")
	}
	pos := id.position()
	if !t.persistent() {
		return reason(ErrNotAllowed, "Create subscription on non-persistent topic is not supported")
	}
	t.mu.Lock()
	existing := t.mu.subs[name] != nil
	t.mu.Unlock()
	if existing {
		return reason(ErrAlreadyExists, "Subscription already exists for topic")
	}
	initial := initialLatest
	if position(mledger.Earliest) == pos {
		initial = initialEarliest
	}
	cur, err := t.ml.OpenCursor(name, initial)
	if err != nil {
		return err
	}
	if pos != position(mledger.Earliest) && pos != position(mledger.Latest) {
		if err := cur.Seek(pos); err != nil {
			return reason(ErrPreconditionFailed, "cannot position the subscription: "+err.Error())
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.subs[name] != nil {
		return reason(ErrAlreadyExists, "Subscription already exists for topic")
	}
	t.addSubLocked(name, SubExclusive, cur)
	return nil
}

// DeleteSubscription deletes a subscription; without force it refuses
// one with connected consumers (ErrPreconditionFailed).
func (v Topic) DeleteSubscription(sub string, force bool) error {
	t := v.t
	err := t.deleteSubscription(sub, force)
	var es *errSubscribe
	switch {
	case err == nil:
		return nil
	case errors.As(err, &es) && es.code == codeSubscriptionNotFound:
		return reason(ErrSubscriptionNotFound, "Subscription not found")
	case errors.As(err, &es):
		return reason(ErrPreconditionFailed, es.msg)
	}
	return err
}

// StoredSubscription returns the named subscription if its cursor is
// the managed ledger's (durable or not): ErrSubscriptionNotFound, or
// ErrNotAllowed for one the operations below cannot move.
func (v Topic) StoredSubscription(name string) (Subscription, error) {
	t := v.t
	t.mu.Lock()
	s := t.mu.subs[name]
	t.mu.Unlock()
	if s == nil {
		return Subscription{}, reason(ErrSubscriptionNotFound, "Subscription not found")
	}
	if _, ok := s.cur.(*cursorAdapter); !ok {
		return Subscription{}, reason(ErrNotAllowed, "operation not supported on this subscription")
	}
	return Subscription{s}, nil
}

// stored returns the cursor of a StoredSubscription.
func (v Subscription) stored() (*cursorAdapter, error) {
	ca, ok := v.s.cur.(*cursorAdapter)
	if !ok {
		return nil, reason(ErrNotAllowed, "operation not supported on this subscription")
	}
	return ca, nil
}

// SkipMessages skips n entries of a StoredSubscription's backlog (n < 0:
// all of it).
func (v Topic) SkipMessages(s Subscription, n int64) error {
	ca, err := s.stored()
	if err != nil {
		return err
	}
	return skipBacklog(s.s, ca, n)
}

// ResetCursor moves a StoredSubscription to id (or, byTime, to the first
// message published at or after tsMillis) and disconnects its consumers.
func (v Topic) ResetCursor(s Subscription, id MessageID, byTime bool, tsMillis int64) error {
	var err error
	done := make(chan struct{})
	v.t.seek(s.s, id.position(), byTime, tsMillis, func(e error) { err = e; close(done) })
	<-done
	return err
}

// PeekMessage returns the n-th (1-based) unacknowledged entry of a
// StoredSubscription's backlog.
func (v Topic) PeekMessage(ctx context.Context, s Subscription, n int64) (MessageID, []byte, error) {
	t := v.t
	ca, err := s.stored()
	if err != nil {
		return MessageID{}, nil, err
	}
	ml := ca.ml
	pos := ca.c.MarkDeletePosition()
	ls := ml.Stats().Ledgers
	// Walk forward from mark-delete over unacknowledged entries.
	for n > 0 {
		next, ok := nextPosition(ls, pos)
		if !ok {
			return MessageID{}, nil, reason(ErrTopicNotFound, "Message not found")
		}
		pos = next
		if !ca.c.IsAcked(pos) {
			n--
		}
	}
	data, err := ml.ReadEntry(ctx, pos)
	if err != nil {
		return MessageID{}, nil, entryReadError(t.log, err)
	}
	return MessageID{LedgerID: pos.LedgerID, EntryID: pos.EntryID, Partition: t.partition, BatchIndex: -1}, data.Data, nil
}

// nextPosition returns the entry after p among ledgers ls.
func nextPosition(ls []mledger.LedgerInfo, p mledger.Position) (mledger.Position, bool) {
	for _, l := range ls {
		switch {
		case l.LedgerID < p.LedgerID:
			continue
		case l.LedgerID == p.LedgerID:
			if p.EntryID+1 < l.Entries {
				return mledger.Position{LedgerID: l.LedgerID, EntryID: p.EntryID + 1}, true
			}
		default:
			if l.Entries > 0 {
				return mledger.Position{LedgerID: l.LedgerID, EntryID: 0}, true
			}
		}
	}
	return mledger.Position{}, false
}
