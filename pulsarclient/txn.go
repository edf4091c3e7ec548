package pulsarclient

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// EndTxnOnPartition sends END_TXN_ON_PARTITION for transaction
// (most, least) to the broker serving topic (found by lookup) and waits
// for its answer: what a transaction coordinator sends to a topic owner
// elsewhere. An error answer is a *ServerError.
func (cl *Client) EndTxnOnPartition(ctx context.Context, topic string, most, least uint64, action pb.TxnAction) error {
	c, err := cl.lookup(ctx, topic)
	if err != nil {
		return err
	}
	rid := cl.id()
	resp, err := c.request(ctx, rid, &pb.BaseCommand{Type: pb.BaseCommand_END_TXN_ON_PARTITION.Enum(), EndTxnOnPartition: &pb.CommandEndTxnOnPartition{
		RequestId: proto.Uint64(rid), TxnidMostBits: proto.Uint64(most), TxnidLeastBits: proto.Uint64(least),
		Topic: proto.String(topic), TxnAction: action.Enum()}})
	if err != nil {
		return fmt.Errorf("pulsarclient: end transaction on %s: %w", topic, err)
	}
	r := resp.GetEndTxnOnPartitionResponse()
	if r == nil {
		return fmt.Errorf("pulsarclient: end transaction on %s: unexpected %s", topic, resp.GetType())
	}
	if r.Error != nil {
		return &ServerError{Code: r.GetError(), Message: r.GetMessage()}
	}
	return nil
}

// EndTxnOnSubscription sends END_TXN_ON_SUBSCRIPTION for transaction
// (most, least) on topic's subscription to the broker serving topic and
// waits for its answer.
func (cl *Client) EndTxnOnSubscription(ctx context.Context, topic, subscription string, most, least uint64, action pb.TxnAction) error {
	c, err := cl.lookup(ctx, topic)
	if err != nil {
		return err
	}
	rid := cl.id()
	resp, err := c.request(ctx, rid, &pb.BaseCommand{Type: pb.BaseCommand_END_TXN_ON_SUBSCRIPTION.Enum(), EndTxnOnSubscription: &pb.CommandEndTxnOnSubscription{
		RequestId: proto.Uint64(rid), TxnidMostBits: proto.Uint64(most), TxnidLeastBits: proto.Uint64(least),
		Subscription: &pb.Subscription{Topic: proto.String(topic), Subscription: proto.String(subscription)},
		TxnAction:    action.Enum()}})
	if err != nil {
		return fmt.Errorf("pulsarclient: end transaction on %s/%s: %w", topic, subscription, err)
	}
	r := resp.GetEndTxnOnSubscriptionResponse()
	if r == nil {
		return fmt.Errorf("pulsarclient: end transaction on %s/%s: unexpected %s", topic, subscription, resp.GetType())
	}
	if r.Error != nil {
		return &ServerError{Code: r.GetError(), Message: r.GetMessage()}
	}
	return nil
}
