package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// TestAdminTxnParticipantsCLI: `magnetar admin transactions` reads a
// topic's transaction buffer and a subscription's pending acks while a
// transaction is open (pulsar-admin's subcommand and flag names).
func TestAdminTxnParticipantsCLI(t *testing.T) {
	p := startStandalone(t, t.TempDir(), "--transaction-coordinator-enabled")
	cl := txnBenchClient(t, p, true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const topic = "persistent://public/default/cli-txn-part"
	cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	plain, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("plain")})
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
	sent, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("in-txn"), Transaction: tx})
	if err != nil {
		t.Fatal(err)
	}
	if err := cons.AckWithTxn(msg, tx); err != nil {
		t.Fatal(err)
	}
	id := tx.GetTxnID()
	m, l := fmt.Sprint(id.MostSigBits), fmt.Sprint(id.LeastSigBits)
	pos := func(id pulsar.MessageID) string { return fmt.Sprintf("%d:%d", id.LedgerID(), id.EntryID()) }

	jsonOf := func(args ...string) map[string]any {
		t.Helper()
		out := runAdmin(t, p, false, append([]string{"-o", "json", "transactions"}, args...)...)
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return v
	}
	if v := jsonOf("transaction-buffer-stats", "-t", topic); v["state"] != "Ready" || v["ongoingTxnSize"] != 1.0 || v["maxReadPosition"] != pos(plain) {
		t.Fatalf("transaction-buffer-stats: %v", v)
	}
	// The short topic name works as with pulsar-admin.
	if v := jsonOf("transaction-in-buffer-stats", "-t", "cli-txn-part", "-m", m, "-l", l); v["startPosition"] != pos(sent) || v["aborted"] != false {
		t.Fatalf("transaction-in-buffer-stats: %v", v)
	}
	if v := jsonOf("pending-ack-stats", "-t", topic, "-s", "sub"); v["state"] != "Ready" || v["ongoingTxnSize"] != 1.0 {
		t.Fatalf("pending-ack-stats: %v", v)
	}
	v := jsonOf("transaction-in-pending-ack-stats", "-t", topic, "-s", "sub", "-m", m, "-l", l)
	if acks, _ := v["individualAckPositions"].([]any); len(acks) != 1 || acks[0] != pos(plain) {
		t.Fatalf("transaction-in-pending-ack-stats: %v", v)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if v := jsonOf("transaction-buffer-stats", "-t", topic); v["ongoingTxnSize"] != 0.0 || v["committedTxnCount"] != 1.0 {
		t.Fatalf("transaction-buffer-stats after commit: %v", v)
	}
	runAdmin(t, p, true, "transactions", "pending-ack-stats", "-t", "non-persistent://public/default/x", "-s", "sub")
	runAdmin(t, p, true, "transactions", "pending-ack-stats", "-t", topic)
}
