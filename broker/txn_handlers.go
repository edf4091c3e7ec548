package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
	"github.com/magnetar-mq/magnetar/txn"
)

// The broker is the participant of the transactions that touch its
// topics: a coordinator in the same process calls these methods; one
// elsewhere sends END_TXN_ON_PARTITION / END_TXN_ON_SUBSCRIPTION.
var _ txn.Participant = (*Broker)(nil)

const (
	codeTransactionConflict = int32(pb.ServerError_TransactionConflict)
	codeInvalidTxnStatus    = int32(pb.ServerError_InvalidTxnStatus)
)

// EndOnPartition implements txn.Participant: it appends the commit or
// abort marker to topic's ledger and applies it (durable before it
// returns). A topic that does not exist, or never stored a transactional
// entry, has nothing to end: that succeeds.
func (b *Broker) EndOnPartition(ctx context.Context, topic string, id txn.ID, a txn.Action) error {
	if a != txn.Commit && a != txn.Abort {
		return reason(ErrPreconditionFailed, fmt.Sprintf("Unknown transaction action %d", a))
	}
	t, err := b.loadedOrLoad(ctx, topic)
	if errors.Is(err, ErrTopicNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !t.persistent() {
		return nil
	}
	return t.endTxn(ctx, id, a)
}

// EndOnSubscription implements txn.Participant: it applies (Commit) or
// releases (Abort) the transaction's pending acknowledgements on the
// subscription, after logging the end durably. A subscription without
// pending acknowledgements of the transaction succeeds.
func (b *Broker) EndOnSubscription(ctx context.Context, topic, subscription string, id txn.ID, a txn.Action) error {
	if a != txn.Commit && a != txn.Abort {
		return reason(ErrPreconditionFailed, fmt.Sprintf("Unknown transaction action %d", a))
	}
	t, err := b.loadedOrLoad(ctx, topic)
	if errors.Is(err, ErrTopicNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	t.mu.Lock()
	s := t.mu.subs[subscription]
	t.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.endTxnAcks(ctx, id, a)
}

// handleTxnSend stores a SEND that carries a txn id: stamped with the id,
// registered with the topic's transaction buffer, invisible until the
// transaction commits.
func (c *conn) handleTxnSend(p *producer, m *pb.CommandSend, f *pulsarproto.Frame, n int) error {
	c.sendStarted() // answered by exactly one sendReceipt or sendSendError
	seq := m.GetSequenceId()
	id := txn.ID{Most: m.GetTxnidMostBits(), Least: m.GetTxnidLeastBits()}
	if c.b.tc == nil {
		// As Pulsar's disabled transaction buffer: refused, nothing
		// stored, no buffer created.
		c.sendSendError(p.id, seq, codeNotAllowed, errTxnDisabled.Error())
		return nil
	}
	t := p.topic
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	tb, err := t.txnBuffer(ctx)
	if err != nil {
		c.sendSendError(p.id, seq, txnErrorCode(err), err.Error())
		return nil
	}
	if how, ended := tb.ended(id); ended {
		c.sendSendError(p.id, seq, codeInvalidTxnStatus, fmt.Sprintf("Transaction %s is already %s", id, pastTense(how)))
		return nil
	}
	e, err := stampTxnID(stripClientEntryMeta(sendEntry(f)), id)
	if err != nil {
		c.sendSendError(p.id, seq, codeUnknownError, "Bad message metadata: "+err.Error())
		return nil
	}
	e.txn = &txnSend{id: id, tb: tb}
	c.b.policyPublish(p, seq, m.GetHighestSequenceId(), n, e)
	if d := t.publishThrottle(n, len(f.Payload)); d > 0 {
		c.pauseReads(d)
	}
	return nil
}

// txnErrorCode maps an error of the participant side to a ServerError.
func txnErrorCode(err error) int32 {
	switch {
	case errors.Is(err, ErrTransactionConflict):
		return codeTransactionConflict
	case errors.Is(err, ErrNotAllowed):
		return codeNotAllowed
	case errors.Is(err, ErrTopicNotFound):
		return codeTopicNotFound
	case errors.Is(err, ErrSubscriptionNotFound):
		return int32(pb.ServerError_SubscriptionNotFound)
	case errors.Is(err, ErrClosed), errors.Is(err, context.DeadlineExceeded):
		return codeServiceNotReady
	}
	return codeUnknownError
}

// handleEndTxnOn answers END_TXN_ON_PARTITION / END_TXN_ON_SUBSCRIPTION
// from a coordinator. The work (a durable write) runs off the reader
// goroutine; the answer carries the request id.
func (c *conn) handleEndTxnOn(typ pb.BaseCommand_Type, cmd *pb.BaseCommand) {
	switch typ {
	case pb.BaseCommand_END_TXN_ON_PARTITION:
		m := cmd.EndTxnOnPartition
		if m == nil {
			return
		}
		rid, id := m.GetRequestId(), txn.ID{Most: m.GetTxnidMostBits(), Least: m.GetTxnidLeastBits()}
		topic, a := m.GetTopic(), txn.Action(m.GetTxnAction())
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
			defer cancel()
			r := &pb.CommandEndTxnOnPartitionResponse{RequestId: &rid, TxnidMostBits: &id.Most, TxnidLeastBits: &id.Least}
			if err := c.b.EndOnPartition(ctx, topic, id, a); err != nil {
				r.Error, r.Message = pb.ServerError(txnErrorCode(err)).Enum(), ptr(err.Error())
			}
			c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_END_TXN_ON_PARTITION_RESPONSE.Enum(), EndTxnOnPartitionResponse: r})
		}()
	case pb.BaseCommand_END_TXN_ON_SUBSCRIPTION:
		m := cmd.EndTxnOnSubscription
		if m == nil {
			return
		}
		rid, id := m.GetRequestId(), txn.ID{Most: m.GetTxnidMostBits(), Least: m.GetTxnidLeastBits()}
		topic, sub, a := m.GetSubscription().GetTopic(), m.GetSubscription().GetSubscription(), txn.Action(m.GetTxnAction())
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
			defer cancel()
			r := &pb.CommandEndTxnOnSubscriptionResponse{RequestId: &rid, TxnidMostBits: &id.Most, TxnidLeastBits: &id.Least}
			if err := c.b.EndOnSubscription(ctx, topic, sub, id, a); err != nil {
				r.Error, r.Message = pb.ServerError(txnErrorCode(err)).Enum(), ptr(err.Error())
			}
			c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_END_TXN_ON_SUBSCRIPTION_RESPONSE.Enum(), EndTxnOnSubscriptionResponse: r})
		}()
	}
}
