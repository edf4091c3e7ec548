package broker

import (
	"errors"

	"github.com/magnetar-mq/magnetar/mledger"
)

// The operations on one loaded topic and its subscriptions that the
// administration layer (package brokeradmin) builds on: a topic is
// reached with Broker.Topic (loading it if it exists), a subscription by
// its name on the topic. Errors wrap ErrSubscriptionNotFound,
// ErrAlreadyExists, ErrNotAllowed or ErrPreconditionFailed, with the
// reason to give a client. Operations that move cursors tell the
// CursorObservers (a held producer may resume).

// Partition returns the topic's partition index (-1: not a partition).
func (v Topic) Partition() int { return v.t.name.PartitionIndex }

// BundleKey returns the key of the topic's bundle in its cluster ("" on
// a single node).
func (v Topic) BundleKey() string { return v.t.bundleKey }

// CursorsMoved tells the CursorObservers that an operation moved cursors
// of the topic (a held producer may resume).
func (v Topic) CursorsMoved() { v.t.b.cursorsMoved(v.t) }

// LastMessageID returns the id of the topic's last message.
func (v Topic) LastMessageID() MessageID {
	t := v.t
	pos, bi, _ := t.lastMessage()
	return MessageID{LedgerID: pos.LedgerID, EntryID: pos.EntryID, Partition: t.name.PartitionIndex, BatchIndex: bi}
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
	return MessageID{LedgerID: pos.LedgerID, EntryID: pos.EntryID, Partition: t.name.PartitionIndex, BatchIndex: -1}, nil
}

// CreateSubscription adds a durable subscription to a persistent topic,
// its cursor at id (Earliest, Latest or the entry to read first), set up
// as every subscription is (addSubLocked): ErrAlreadyExists if the topic
// has one of that name. The name's checks are the caller's.
func (v Topic) CreateSubscription(name string, id MessageID) error {
	t := v.t
	if !t.persistent() {
		return reason(ErrNotAllowed, "Create subscription on non-persistent topic is not supported")
	}
	if _, ok := v.Subscription(name); ok {
		return reason(ErrAlreadyExists, "Subscription already exists for topic")
	}
	pos := id.position()
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
	if t.mu.subs.get(name) != nil {
		return reason(ErrAlreadyExists, "Subscription already exists for topic")
	}
	t.addSubLocked(name, SubExclusive, cur)
	return nil
}

// DeleteSubscription deletes a subscription (or a durable cursor no
// subscription holds); without force it refuses one with connected
// consumers (ErrPreconditionFailed), with force it disconnects them.
func (v Topic) DeleteSubscription(sub string, force bool) error {
	t := v.t
	s, ok := v.Subscription(sub)
	if !ok {
		if t.persistent() && t.ml.DeleteCursor(sub) == nil {
			return nil
		}
		return reason(ErrSubscriptionNotFound, "Subscription not found")
	}
	var es *errSubscribe
	switch err := t.unsubscribe(s.s, nil, force); {
	case errors.As(err, &es) && es.code == codeSubscriptionNotFound:
		return reason(ErrSubscriptionNotFound, "Subscription not found")
	case errors.As(err, &es):
		return reason(ErrPreconditionFailed, es.msg)
	default:
		return err
	}
}

// ResetCursor moves the subscription s of the topic to id (or, byTime,
// to the first message published at or after tsMillis), disconnecting
// its consumers first as a SEEK does.
func (v Topic) ResetCursor(s Subscription, id MessageID, byTime bool, tsMillis int64) error {
	var err error
	done := make(chan struct{})
	v.t.seek(s.s, id.position(), byTime, tsMillis, func(e error) { err = e; close(done) })
	<-done
	return err
}
