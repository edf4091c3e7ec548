package broker

import (
	"testing"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// TestTxnEndOnParticipantNeedsSuperuser: with authorization on, only a
// superuser (a coordinator's broker client) may end a transaction on a
// participant; any other role gets AuthorizationError and the topic is
// not touched.
func TestTxnEndOnParticipantNeedsSuperuser(t *testing.T) {
	f := startSecure(t, nil)
	topic := "persistent://private/auth/txn-end"
	for _, tc := range []struct {
		role    string
		refused bool
	}{{"token-principal", true}, {"admin", false}} {
		r := dialRaw(t, f.testBroker, false)
		r.send(pbBaseConnect{method: "token", data: f.token(t, tc.role, 0)}.cmd())
		if fr := r.next(); fr.Type != pb.BaseCommand_CONNECTED {
			t.Fatalf("%s: handshake answer %v", tc.role, fr.Cmd)
		}
		r.send(&pb.BaseCommand{Type: pb.BaseCommand_END_TXN_ON_PARTITION.Enum(), EndTxnOnPartition: &pb.CommandEndTxnOnPartition{
			RequestId: ptr(uint64(7)), TxnidMostBits: ptr(uint64(1)), TxnidLeastBits: ptr(uint64(1 << 63)),
			Topic: ptr(topic), TxnAction: pb.TxnAction_ABORT.Enum(),
		}})
		fr := r.next()
		resp := fr.Cmd.EndTxnOnPartitionResponse
		if resp == nil || resp.GetRequestId() != 7 {
			t.Fatalf("%s: partition answer %v", tc.role, fr.Cmd)
		}
		if got := resp.GetError() == pb.ServerError_AuthorizationError; got != tc.refused {
			t.Fatalf("%s: partition answer %v, refused=%v want %v", tc.role, resp, got, tc.refused)
		}
		r.send(&pb.BaseCommand{Type: pb.BaseCommand_END_TXN_ON_SUBSCRIPTION.Enum(), EndTxnOnSubscription: &pb.CommandEndTxnOnSubscription{
			RequestId: ptr(uint64(8)), TxnidMostBits: ptr(uint64(1)), TxnidLeastBits: ptr(uint64(1 << 63)),
			Subscription: &pb.Subscription{Topic: ptr(topic), Subscription: ptr("s")}, TxnAction: pb.TxnAction_COMMIT.Enum(),
		}})
		fr = r.next()
		sresp := fr.Cmd.EndTxnOnSubscriptionResponse
		if sresp == nil || sresp.GetRequestId() != 8 {
			t.Fatalf("%s: subscription answer %v", tc.role, fr.Cmd)
		}
		if got := sresp.GetError() == pb.ServerError_AuthorizationError; got != tc.refused {
			t.Fatalf("%s: subscription answer %v, refused=%v want %v", tc.role, sresp, got, tc.refused)
		}
	}
}
