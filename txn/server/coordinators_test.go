package server

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
	"github.com/magnetar-mq/magnetar/txn"
	"github.com/magnetar-mq/magnetar/txn/coordinator"
)

// The Go client connects to every coordinator of the assign topic, and
// NEW_TXN / ADD_PARTITION / ADD_SUBSCRIPTION / END_TXN round-trip.
func TestTxnCoordinatorRoundTrip(t *testing.T) {
	tb := txnBroker(t, 4)
	c := tb.txnClient(t)
	ctx := ctxT(t)
	topic := "persistent://public/default/" + newTopicName("txn-rt")
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, SendTimeout: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("plain")}); err != nil {
		t.Fatal(err)
	}
	msg, err := cons.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}

	tx, err := c.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	id := tx.GetTxnID()
	if id.MostSigBits >= 4 || id.LeastSigBits == 0 {
		t.Fatalf("txn id %+v: most bits must be a coordinator id < 4", id)
	}
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("in-txn"), Transaction: tx}); err != nil {
		t.Fatal(err)
	}
	if err := cons.AckWithTxn(msg, tx); err != nil {
		t.Fatal(err)
	}
	info, err := tb.txnInfo(t, id)
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != coordinator.StatusOpen || !slices.Equal(info.Partitions, []string{topic}) ||
		!slices.Equal(info.Subscriptions, []coordinator.SubRef{{Topic: topic, Subscription: "s"}}) {
		t.Fatalf("transaction metadata %+v", info)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if tx.GetState() != pulsar.TxnCommitted {
		t.Fatalf("state %v", tx.GetState())
	}
	if _, err := tb.txnInfo(t, id); !errors.Is(err, coordinator.ErrTxnNotFound) {
		t.Fatalf("metadata of a committed transaction: %v", err)
	}

	tx2, err := c.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if tx2.GetTxnID() == id {
		t.Fatal("the same id twice")
	}
	if err := tx2.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if tx2.GetState() != pulsar.TxnAborted {
		t.Fatalf("state %v", tx2.GetState())
	}
	co, _ := tb.TxnCoordinator(ctx, tx2.GetTxnID().MostSigBits)
	// As in Pulsar, an ended transaction is gone: a second END_TXN, either
	// way, is TransactionNotFound (pulsar-client-go's
	// TestTxn_ImplCommitOrAbort).
	for _, a := range []txn.Action{txn.Commit, txn.Abort} {
		err = co.End(ctx, txn.ID{Most: tx2.GetTxnID().MostSigBits, Least: tx2.GetTxnID().LeastSigBits}, a)
		if !errors.Is(err, coordinator.ErrTxnNotFound) {
			t.Fatalf("END_TXN %v after abort: %v", a, err)
		}
		if code, _ := coordinatorError(err); *code != pb.ServerError_TransactionNotFound {
			t.Fatalf("END_TXN %v after abort answers %v", a, code)
		}
	}
}

// A transaction not ended within its timeout is aborted by the
// coordinator; the client's commit then fails.
func TestTxnCoordinatorTimeout(t *testing.T) {
	tb := txnBroker(t, 2)
	c := tb.txnClient(t)
	ctx := ctxT(t)
	tx, err := c.NewTransaction(300 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	co, err := tb.TxnCoordinator(ctx, tx.GetTxnID().MostSigBits)
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the transaction times out", func() bool { return co.Stats().TimeoutCount == 1 })
	err = tx.Commit(ctx)
	var perr *pulsar.Error
	if !errors.As(err, &perr) || (perr.Result() != pulsar.InvalidStatus && perr.Result() != pulsar.TransactionNoFoundError) {
		t.Fatalf("commit after the timeout: %v", err)
	}
	waitUntil(t, "the abort is logged", func() bool { return co.Stats().AbortedCount == 1 })
}

// Transaction ids are never reused across a broker restart.
func TestTxnCoordinatorIDsAcrossRestart(t *testing.T) {
	tb := txnBroker(t, 2)
	ctx := ctxT(t)
	seen := map[pulsar.TxnID]bool{}
	maxLeast := map[uint64]uint64{}
	run := func(tb *testBroker, n int, check bool) {
		c := tb.txnClient(t)
		for i := range n {
			tx, err := c.NewTransaction(time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			id := tx.GetTxnID()
			if seen[id] {
				t.Fatalf("id %+v handed out twice", id)
			}
			if check && id.LeastSigBits <= maxLeast[id.MostSigBits] {
				t.Fatalf("after restart id %+v is not above %d", id, maxLeast[id.MostSigBits])
			}
			seen[id] = true
			if i%2 == 0 {
				err = tx.Commit(ctx)
			} else if i%3 == 0 {
				err = tx.Abort(ctx)
			} // the rest stay open across the restart
			if err != nil {
				t.Fatal(err)
			}
		}
		c.Close()
	}
	run(tb, 20, false)
	for id := range seen {
		maxLeast[id.MostSigBits] = max(maxLeast[id.MostSigBits], id.LeastSigBits)
	}
	tb2 := tb.restart(t)
	// The open transactions were recovered (7 of every 20: the odd i
	// that are not multiples of 3).
	open := 0
	for id := range uint64(2) {
		co, err := tb2.TxnCoordinator(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		open += co.Stats().OngoingTxnSize
	}
	if open != 7 {
		t.Fatalf("%d open transactions recovered, want 7", open)
	}
	run(tb2, 20, true)
}

// TestCommandsSuperUserOnly: only a coordinator (another broker's
// client, a superuser) may end a transaction on a participant; the
// client-facing coordinator commands are open to every role.
func TestCommandsSuperUserOnly(t *testing.T) {
	for _, c := range (&Server{}).Commands() {
		want := c.Type == pb.BaseCommand_END_TXN_ON_PARTITION || c.Type == pb.BaseCommand_END_TXN_ON_SUBSCRIPTION
		if c.SuperUserOnly != want {
			t.Errorf("%s: SuperUserOnly %v, want %v", c.Type, c.SuperUserOnly, want)
		}
		if c.Handle == nil {
			t.Errorf("%s: no handler", c.Type)
		}
	}
}

// TestTxnPartitionNamesAsSent: the coordinator keeps topic names as the
// client sent them, as Pulsar's does, so the transaction metadata shows
// a short name short (pulsar-client-go's TestTxn_TCClient looks it up by
// the name it sent).
func TestTxnPartitionNamesAsSent(t *testing.T) {
	tb := txnBroker(t, 1)
	r := dialRaw(t, tb, true)
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_NEW_TXN.Enum(), NewTxn: &pb.CommandNewTxn{RequestId: ptr(uint64(1)), TcId: ptr(uint64(0)), TxnTtlSeconds: ptr(uint64(60000))}})
	f := r.next()
	if f.Type != pb.BaseCommand_NEW_TXN_RESPONSE || f.Cmd.NewTxnResponse.Error != nil {
		t.Fatalf("NEW_TXN answered %v", f.Cmd)
	}
	most, least := f.Cmd.NewTxnResponse.GetTxnidMostBits(), f.Cmd.NewTxnResponse.GetTxnidLeastBits()
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_ADD_PARTITION_TO_TXN.Enum(), AddPartitionToTxn: &pb.CommandAddPartitionToTxn{
		RequestId: ptr(uint64(2)), TxnidMostBits: &most, TxnidLeastBits: &least, Partitions: []string{"short-name", "persistent://public/default/full"}}})
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_ADD_SUBSCRIPTION_TO_TXN.Enum(), AddSubscriptionToTxn: &pb.CommandAddSubscriptionToTxn{
		RequestId: ptr(uint64(3)), TxnidMostBits: &most, TxnidLeastBits: &least,
		Subscription: []*pb.Subscription{{Topic: ptr("short-name"), Subscription: ptr("s")}}}})
	for range 2 {
		if f := r.next(); (f.Cmd.AddPartitionToTxnResponse != nil && f.Cmd.AddPartitionToTxnResponse.Error != nil) ||
			(f.Cmd.AddSubscriptionToTxnResponse != nil && f.Cmd.AddSubscriptionToTxnResponse.Error != nil) {
			t.Fatalf("answer %v", f.Cmd)
		}
	}
	info, err := tb.txnInfo(t, pulsar.TxnID{MostSigBits: most, LeastSigBits: least})
	if err != nil || !slices.Equal(info.Partitions, []string{"short-name", "persistent://public/default/full"}) ||
		len(info.Subscriptions) != 1 || info.Subscriptions[0].Topic != "short-name" {
		t.Fatalf("info %+v %v", info, err)
	}
}
