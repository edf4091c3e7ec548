package broker

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-mq/magnetar/txn"
	"github.com/magnetar-mq/magnetar/txn/coordinator"
)

func txnBroker(t testing.TB, tcs int) *testBroker {
	t.Helper()
	return startBroker(t, func(c *Config) {
		c.TransactionCoordinatorEnabled = true
		c.TransactionCoordinators = tcs
	})
}

func (tb *testBroker) txnClient(t testing.TB) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{
		URL: tb.url, OperationTimeout: 10 * time.Second, ConnectionTimeout: 5 * time.Second,
		Logger: plog.DefaultNopLogger(), EnableTransaction: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func (tb *testBroker) txnInfo(t testing.TB, id pulsar.TxnID) (coordinator.Info, error) {
	t.Helper()
	co, err := tb.TxnCoordinator(ctxT(t), id.MostSigBits)
	if err != nil {
		t.Fatal(err)
	}
	return co.Txn(txn.ID{Most: id.MostSigBits, Least: id.LeastSigBits})
}

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
	// A second END_TXN the other way is refused with InvalidTxnStatus.
	err = co.End(ctx, txn.ID{Most: tx2.GetTxnID().MostSigBits, Least: tx2.GetTxnID().LeastSigBits}, txn.Commit)
	if !errors.Is(err, coordinator.ErrInvalidStatus) {
		t.Fatalf("commit after abort: %v", err)
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

// Without transactionCoordinatorEnabled the client is told so.
func TestTxnCoordinatorDisabled(t *testing.T) {
	tb := startBroker(t, nil)
	_, err := pulsar.NewClient(pulsar.ClientOptions{URL: tb.url, EnableTransaction: true, Logger: plog.DefaultNopLogger(), OperationTimeout: 5 * time.Second})
	if err == nil {
		t.Fatal("a transactional client connected to a broker without a coordinator")
	}
	if tb.TxnCoordinatorCount() != 0 {
		t.Fatal("coordinators on a disabled broker")
	}
	if _, err := tb.TxnCoordinator(context.Background(), 0); !errors.Is(err, ErrTxnDisabled) {
		t.Fatalf("TxnCoordinator: %v", err)
	}
}
