package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
	"github.com/magnetar-mq/magnetar/txn"
)

// The broker is the participant of the transactions that touch its
// topics: a coordinator in the same process calls these methods (through
// remoteEnds, which forwards what another broker owns); one elsewhere
// sends END_TXN_ON_PARTITION / END_TXN_ON_SUBSCRIPTION.

// EndOnPartition implements txn.Participant: it appends the commit or
// abort marker to topic's ledger and applies it (durable before it
// returns). A topic that does not exist, or never stored a transactional
// entry, has nothing to end: that succeeds.
func (s *Server) EndOnPartition(ctx context.Context, topic string, id txn.ID, a txn.Action) error {
	t, ok, err := s.endTarget(ctx, topic, a)
	if !ok {
		return err
	}
	tt := s.topics.Get(t)
	if tt == nil {
		return nil // not persistent
	}
	return s.endOnTopic(ctx, tt, id, a)
}

// EndOnSubscription implements txn.Participant: it applies (Commit) or
// releases (Abort) the transaction's pending acknowledgements on the
// subscription, after logging the end durably. A subscription without
// pending acknowledgements of the transaction succeeds.
func (s *Server) EndOnSubscription(ctx context.Context, topic, subscription string, id txn.ID, a txn.Action) error {
	t, ok, err := s.endTarget(ctx, topic, a)
	if !ok {
		return err
	}
	sub, ok := t.Subscription(subscription)
	if !ok {
		return nil
	}
	return s.endOnSubscription(ctx, sub, id, a)
}

// endTarget checks an end's action and loads its topic: ok false means
// there is nothing to end (err nil: the topic does not exist) or the end
// fails with err.
func (s *Server) endTarget(ctx context.Context, topic string, a txn.Action) (broker.Topic, bool, error) {
	if a != txn.Commit && a != txn.Abort {
		return broker.Topic{}, false, broker.Reason(broker.ErrPreconditionFailed, fmt.Sprintf("Unknown transaction action %d", a))
	}
	t, err := s.b.Topic(ctx, topic)
	if errors.Is(err, broker.ErrTopicNotFound) {
		return broker.Topic{}, false, nil
	}
	return t, err == nil, err
}

// endTxnOnPartition answers END_TXN_ON_PARTITION from a coordinator. The
// work (a durable write) runs off the reader goroutine; the answer
// carries the request id.
func (s *Server) endTxnOnPartition(c broker.Conn, cmd *pb.BaseCommand) error {
	m := cmd.EndTxnOnPartition
	if m == nil {
		return nil
	}
	rid, id := m.GetRequestId(), txn.ID{Most: m.GetTxnidMostBits(), Least: m.GetTxnidLeastBits()}
	topic, a := m.GetTopic(), txn.Action(m.GetTxnAction())
	s.answer(c, func(ctx context.Context) *pb.BaseCommand {
		r := &pb.CommandEndTxnOnPartitionResponse{RequestId: &rid, TxnidMostBits: &id.Most, TxnidLeastBits: &id.Least}
		if err := s.EndOnPartition(ctx, topic, id, a); err != nil {
			msg := err.Error()
			r.Error, r.Message = errorCode(err).Enum(), &msg
		}
		return &pb.BaseCommand{Type: pb.BaseCommand_END_TXN_ON_PARTITION_RESPONSE.Enum(), EndTxnOnPartitionResponse: r}
	})
	return nil
}

// endTxnOnSubscription answers END_TXN_ON_SUBSCRIPTION from a coordinator.
func (s *Server) endTxnOnSubscription(c broker.Conn, cmd *pb.BaseCommand) error {
	m := cmd.EndTxnOnSubscription
	if m == nil {
		return nil
	}
	rid, id := m.GetRequestId(), txn.ID{Most: m.GetTxnidMostBits(), Least: m.GetTxnidLeastBits()}
	topic, sub, a := m.GetSubscription().GetTopic(), m.GetSubscription().GetSubscription(), txn.Action(m.GetTxnAction())
	s.answer(c, func(ctx context.Context) *pb.BaseCommand {
		r := &pb.CommandEndTxnOnSubscriptionResponse{RequestId: &rid, TxnidMostBits: &id.Most, TxnidLeastBits: &id.Least}
		if err := s.EndOnSubscription(ctx, topic, sub, id, a); err != nil {
			msg := err.Error()
			r.Error, r.Message = errorCode(err).Enum(), &msg
		}
		return &pb.BaseCommand{Type: pb.BaseCommand_END_TXN_ON_SUBSCRIPTION_RESPONSE.Enum(), EndTxnOnSubscriptionResponse: r}
	})
	return nil
}
