package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-mq/magnetar/broker"
)

// TestTransactionParticipantStats: the buffer and pending-ack endpoints
// follow an open transaction's produce and ack, and its commit.
func TestTransactionParticipantStats(t *testing.T) {
	tb := startBroker(t, func(c *broker.Config) {
		c.TransactionCoordinatorEnabled = true
		c.TransactionCoordinators = 1
	})
	cl, err := pulsar.NewClient(pulsar.ClientOptions{URL: tb.url, EnableTransaction: true,
		OperationTimeout: 10 * time.Second, Logger: plog.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	local := newTopicName("txn-part")
	topic := "persistent://public/default/" + local
	cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	p, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	get := func(path string, v any) {
		t.Helper()
		code, body := httpDo(t, tb, "GET", "/admin/v3/transactions/"+path, "")
		if code != 200 || json.Unmarshal([]byte(body), v) != nil {
			t.Fatalf("%s: %d %s", path, code, body)
		}
	}
	var bs broker.TxnBufferStats
	get("transactionBufferStats/public/default/"+local, &bs)
	if bs.State != "NoSnapshot" || bs.OngoingTxnSize != 0 {
		t.Fatalf("buffer stats before any transaction: %+v", bs)
	}

	plainID, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("plain")})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := cons.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := cl.NewTransaction(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("x"), Transaction: tx}); err != nil {
		t.Fatal(err)
	}
	if err := cons.AckWithTxn(msg, tx); err != nil {
		t.Fatal(err)
	}
	id := tx.GetTxnID()
	get("transactionBufferStats/public/default/"+local, &bs)
	want := fmt.Sprintf("%d:%d", plainID.LedgerID(), plainID.EntryID())
	if bs.State != "Ready" || bs.OngoingTxnSize != 1 || bs.MaxReadPosition != want {
		t.Fatalf("buffer stats with the transaction open: %+v, want maxReadPosition %s", bs, want)
	}
	var ib broker.TxnInBufferStats
	get(fmt.Sprintf("transactionInBufferStats/public/default/%s/%d/%d", local, id.MostSigBits, id.LeastSigBits), &ib)
	if ib.StartPosition == "" || ib.Aborted {
		t.Fatalf("transactionInBufferStats: %+v", ib)
	}
	var ps broker.PendingAckStats
	get("pendingAckStats/public/default/"+local+"/s", &ps)
	if ps.State != "Ready" || ps.OngoingTxnSize != 1 || ps.PendingAckedEntries != 1 {
		t.Fatalf("pendingAckStats: %+v", ps)
	}
	var ip broker.TxnInPendingAckStats
	get(fmt.Sprintf("transactionInPendingAckStats/public/default/%s/s/%d/%d", local, id.MostSigBits, id.LeastSigBits), &ip)
	if len(ip.IndividualAcks) != 1 || ip.IndividualAcks[0] != want {
		t.Fatalf("transactionInPendingAckStats: %+v, want [%s]", ip, want)
	}

	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	get("transactionBufferStats/public/default/"+local, &bs)
	if bs.OngoingTxnSize != 0 || bs.CommittedTxnCount != 1 {
		t.Fatalf("buffer stats after commit: %+v", bs)
	}
	get("pendingAckStats/public/default/"+local+"/s", &ps)
	if ps.OngoingTxnSize != 0 || ps.PendingAckedEntries != 0 || ps.CommittedTxnCount != 1 {
		t.Fatalf("pendingAckStats after commit: %+v", ps)
	}
	code, _ := httpDo(t, tb, "GET", "/admin/v3/transactions/pendingAckStats/public/default/"+local+"/nosuch", "")
	if code != 404 {
		t.Fatalf("pendingAckStats of a missing subscription: %d", code)
	}
	code, _ = httpDo(t, tb, "GET", "/admin/v3/transactions/transactionInBufferStats/public/default/"+local+"/x/1", "")
	if code != 412 {
		t.Fatalf("bad txn id: %d", code)
	}
}
