package broker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// Transactions are a feature outside the core (txn/server). Without it
// the core refuses transactional work itself.

// TestTxnOffRefusesTransactionalWork: without the transaction feature a
// SEND or an ACK carrying a txn id is refused with NotAllowed (Pulsar's
// disabled transaction buffer and pending-ack handle), nothing is stored,
// plain traffic goes on, and no transaction state appears in the
// metadata store.
func TestTxnOffRefusesTransactionalWork(t *testing.T) {
	tb := startBroker(t, nil)
	topic := "persistent://public/default/" + newTopicName("txnoff")
	r := dialRaw(t, tb, true)
	pid := r.producer(topic)
	r.write(pulsarproto.AppendSend(nil, &pulsarproto.SendHeader{ProducerID: pid, SequenceID: 0, TxnidLeastBits: 1}, testEntry(0, "x")))
	f := r.next()
	if f.Type != pb.BaseCommand_SEND_ERROR || f.Cmd.SendError.GetError() != pb.ServerError_NotAllowedError ||
		f.Cmd.SendError.GetMessage() != ErrTxnDisabled.Error() {
		t.Fatalf("transactional SEND answered %s %v", f.Type, f.Cmd.SendError)
	}
	r.sendOK(pid, 1)

	c := dialRaw(t, tb, true)
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_SUBSCRIBE.Enum(), Subscribe: &pb.CommandSubscribe{
		Topic: ptr(topic), Subscription: ptr("raw"), SubType: pb.CommandSubscribe_Exclusive.Enum(),
		ConsumerId: ptr(uint64(1)), RequestId: ptr(uint64(1)), InitialPosition: pb.CommandSubscribe_Earliest.Enum(),
	}})
	if f := c.next(); f.Type != pb.BaseCommand_SUCCESS {
		t.Fatalf("SUBSCRIBE answered %s", f.Type)
	}
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_FLOW.Enum(), Flow: &pb.CommandFlow{ConsumerId: ptr(uint64(1)), MessagePermits: ptr(uint32(10))}})
	f = c.next()
	if f.Type != pb.BaseCommand_MESSAGE {
		t.Fatalf("got %s, want the plain message", f.Type)
	}
	id := f.Cmd.Message.MessageId
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_ACK.Enum(), Ack: &pb.CommandAck{
		ConsumerId: ptr(uint64(1)), AckType: pb.CommandAck_Individual.Enum(), RequestId: ptr(uint64(7)),
		TxnidMostBits: ptr(uint64(0)), TxnidLeastBits: ptr(uint64(1)),
		MessageId: []*pb.MessageIdData{{LedgerId: id.LedgerId, EntryId: id.EntryId}},
	}})
	f = c.next()
	if f.Type != pb.BaseCommand_ACK_RESPONSE || f.Cmd.AckResponse.GetRequestId() != 7 ||
		f.Cmd.AckResponse.GetError() != pb.ServerError_NotAllowedError {
		t.Fatalf("transactional ACK answered %s %v", f.Type, f.Cmd.AckResponse)
	}
	if n := subBacklog(t, tb.Broker, topic, "raw"); n != 1 {
		t.Fatalf("backlog %d after a refused transactional ack, want 1", n)
	}
	if _, err := tb.meta.Children(ctxT(t), "/transactions"); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("transaction state in the metadata store of a broker without transactions: %v", err)
	}
}

// TestTxnOffRefusesTransactionCommands: every transaction command is
// answered with its own response type, NotAllowed and the request id,
// and the connection stays up; a transactional client cannot connect.
func TestTxnOffRefusesTransactionCommands(t *testing.T) {
	tb := startBroker(t, nil)
	r := dialRaw(t, tb, true)
	u := func(v uint64) *uint64 { return &v }
	for i, cmd := range []*pb.BaseCommand{
		{Type: pb.BaseCommand_TC_CLIENT_CONNECT_REQUEST.Enum(), TcClientConnectRequest: &pb.CommandTcClientConnectRequest{RequestId: u(1), TcId: u(0)}},
		{Type: pb.BaseCommand_NEW_TXN.Enum(), NewTxn: &pb.CommandNewTxn{RequestId: u(2), TcId: u(0)}},
		{Type: pb.BaseCommand_ADD_PARTITION_TO_TXN.Enum(), AddPartitionToTxn: &pb.CommandAddPartitionToTxn{RequestId: u(3), TxnidMostBits: u(0), TxnidLeastBits: u(1)}},
		{Type: pb.BaseCommand_ADD_SUBSCRIPTION_TO_TXN.Enum(), AddSubscriptionToTxn: &pb.CommandAddSubscriptionToTxn{RequestId: u(4), TxnidMostBits: u(0), TxnidLeastBits: u(1)}},
		{Type: pb.BaseCommand_END_TXN.Enum(), EndTxn: &pb.CommandEndTxn{RequestId: u(5), TxnidMostBits: u(0), TxnidLeastBits: u(1)}},
		{Type: pb.BaseCommand_END_TXN_ON_PARTITION.Enum(), EndTxnOnPartition: &pb.CommandEndTxnOnPartition{RequestId: u(6), TxnidMostBits: u(0), TxnidLeastBits: u(1)}},
		{Type: pb.BaseCommand_END_TXN_ON_SUBSCRIPTION.Enum(), EndTxnOnSubscription: &pb.CommandEndTxnOnSubscription{RequestId: u(7), TxnidMostBits: u(0), TxnidLeastBits: u(1)}},
	} {
		r.send(cmd)
		f := r.next()
		want := pulsarproto.Refusal(cmd.GetType(), cmd, pb.ServerError_NotAllowedError, ErrTxnDisabled.Error())
		if f.Type != want.GetType() || !strings.Contains(f.Cmd.String(), ErrTxnDisabled.Error()) {
			t.Fatalf("%s answered %s %v, want %s", cmd.GetType(), f.Type, f.Cmd, want.GetType())
		}
		if rid, _ := requestIDOf(f.Cmd); rid != uint64(i+1) {
			t.Fatalf("%s answered for request %d, want %d", cmd.GetType(), rid, i+1)
		}
	}
	r.ping()
	if _, err := pulsar.NewClient(pulsar.ClientOptions{URL: tb.url, EnableTransaction: true, Logger: plog.DefaultNopLogger(), OperationTimeout: 5 * time.Second}); err == nil {
		t.Fatal("a transactional client connected to a broker without transactions")
	}
}

// requestIDOf returns the request id of a transaction command's answer.
func requestIDOf(cmd *pb.BaseCommand) (uint64, bool) {
	switch {
	case cmd.TcClientConnectResponse != nil:
		return cmd.TcClientConnectResponse.GetRequestId(), true
	case cmd.NewTxnResponse != nil:
		return cmd.NewTxnResponse.GetRequestId(), true
	case cmd.AddPartitionToTxnResponse != nil:
		return cmd.AddPartitionToTxnResponse.GetRequestId(), true
	case cmd.AddSubscriptionToTxnResponse != nil:
		return cmd.AddSubscriptionToTxnResponse.GetRequestId(), true
	case cmd.EndTxnResponse != nil:
		return cmd.EndTxnResponse.GetRequestId(), true
	}
	return pulsarproto.ResponseRequestID(cmd)
}
