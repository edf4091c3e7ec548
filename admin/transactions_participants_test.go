package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-mq/magnetar/broker"
)

// keysOf returns the sorted top-level JSON field names of body.
func keysOf(t *testing.T, body string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("not a JSON object: %s", body)
	}
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}

// hasFields fails unless body has every one of Pulsar's field names.
func hasFields(t *testing.T, what, body string, names ...string) {
	t.Helper()
	ks := "," + keysOf(t, body) + ","
	for _, n := range names {
		if !strings.Contains(ks, ","+n+",") {
			t.Fatalf("%s: no field %q in %s", what, n, body)
		}
	}
}

// TestTransactionParticipantStats: the buffer and pending-ack endpoints
// follow an open transaction's produce and ack, its commit, and an
// aborted transaction, with Pulsar's JSON field names.
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	local := newTopicName("txn-part")
	topic := "persistent://public/default/" + local
	cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, NackRedeliveryDelay: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	p, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	raw := func(path string) string {
		t.Helper()
		code, body := httpDo(t, tb, "GET", "/admin/v3/transactions/"+path, "")
		if code != 200 {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		return body
	}
	get := func(path string, v any) string {
		t.Helper()
		body := raw(path)
		if err := json.Unmarshal([]byte(body), v); err != nil {
			t.Fatalf("%s: %v: %s", path, err, body)
		}
		return body
	}
	bufPath := "transactionBufferStats/public/default/" + local
	ackPath := "pendingAckStats/public/default/" + local + "/s"
	inBuf := func(id pulsar.TxnID) string {
		return fmt.Sprintf("transactionInBufferStats/public/default/%s/%d/%d", local, id.MostSigBits, id.LeastSigBits)
	}
	inAck := func(id pulsar.TxnID) string {
		return fmt.Sprintf("transactionInPendingAckStats/public/default/%s/s/%d/%d", local, id.MostSigBits, id.LeastSigBits)
	}

	// A topic that never saw a transaction: no buffer, nothing pending,
	// the max read position is the last entry.
	var bs broker.TxnBufferStats
	body := get(bufPath, &bs)
	hasFields(t, "transactionBufferStats", body, "state", "maxReadPosition", "lastSnapshotTimestamps", "ongoingTxnSize",
		"recoverStartTime", "recoverEndTime")
	if bs.State != "NoSnapshot" || bs.OngoingTxnSize != 0 || !strings.HasSuffix(bs.MaxReadPosition, ":-1") {
		t.Fatalf("buffer stats before any message: %s", body)
	}
	var ps broker.PendingAckStats
	body = get(ackPath, &ps)
	hasFields(t, "pendingAckStats", body, "state", "ongoingTxnSize", "recoverStartTime", "recoverEndTime")
	if ps.State != "None" || ps.OngoingTxnSize != 0 || ps.RecoverStartTime != 0 {
		t.Fatalf("pendingAckStats before any transaction: %s", body)
	}

	before := time.Now().UnixMilli()
	plainID, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("plain")})
	if err != nil {
		t.Fatal(err)
	}
	plainPos := fmt.Sprintf("%d:%d", plainID.LedgerID(), plainID.EntryID())
	get(bufPath, &bs)
	if bs.State != "NoSnapshot" || bs.MaxReadPosition != plainPos {
		t.Fatalf("buffer stats after a plain send: %+v, want maxReadPosition %s", bs, plainPos)
	}
	msg, err := cons.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// An open transaction that produced one message and acked another.
	tx, err := cl.NewTransaction(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	txID, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("x"), Transaction: tx})
	if err != nil {
		t.Fatal(err)
	}
	txPos := fmt.Sprintf("%d:%d", txID.LedgerID(), txID.EntryID())
	if err := cons.AckWithTxn(msg, tx); err != nil {
		t.Fatal(err)
	}
	id := tx.GetTxnID()
	body = get(bufPath, &bs)
	// The reader stops before the open transaction's first entry.
	if bs.State != "Ready" || bs.OngoingTxnSize != 1 || bs.MaxReadPosition != plainPos {
		t.Fatalf("buffer stats with the transaction open: %s, want maxReadPosition %s", body, plainPos)
	}
	if bs.RecoverStartTime < before || bs.RecoverEndTime < bs.RecoverStartTime || bs.RecoverEndTime > time.Now().UnixMilli() {
		t.Fatalf("buffer recover times %d..%d, want within %d..now", bs.RecoverStartTime, bs.RecoverEndTime, before)
	}
	var ib broker.TxnInBufferStats
	body = get(inBuf(id), &ib)
	hasFields(t, "transactionInBufferStats", body, "startPosition", "aborted")
	if ib.StartPosition != txPos || ib.Aborted {
		t.Fatalf("transactionInBufferStats: %s, want startPosition %s", body, txPos)
	}
	body = get(ackPath, &ps)
	if ps.State != "Ready" || ps.OngoingTxnSize != 1 || ps.PendingAckedEntries != 1 || ps.RecoverStartTime < before {
		t.Fatalf("pendingAckStats: %s", body)
	}
	var ip broker.TxnInPendingAckStats
	body = get(inAck(id), &ip)
	if len(ip.IndividualAcks) != 1 || ip.IndividualAcks[0] != plainPos || ip.CumulativeAckPosition != "" {
		t.Fatalf("transactionInPendingAckStats: %s, want individual ack [%s]", body, plainPos)
	}

	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// The commit marker follows the transaction's entry; readers may
	// now read through it.
	get(bufPath, &bs)
	if bs.OngoingTxnSize != 0 || bs.CommittedTxnCount != 1 || bs.AbortedTxnCount != 0 ||
		bs.MaxReadPosition != fmt.Sprintf("%d:%d", txID.LedgerID(), txID.EntryID()+1) {
		t.Fatalf("buffer stats after commit: %+v", bs)
	}
	get(ackPath, &ps)
	if ps.OngoingTxnSize != 0 || ps.PendingAckedEntries != 0 || ps.CommittedTxnCount != 1 || ps.AbortedTxnCount != 0 {
		t.Fatalf("pendingAckStats after commit: %+v", ps)
	}
	if body := raw(inAck(id)); strings.TrimSpace(body) != "{}" {
		t.Fatalf("transactionInPendingAckStats of a committed transaction: %s", body)
	}
	got, err := cons.Receive(ctx)
	if err != nil || string(got.Payload()) != "x" {
		t.Fatalf("receive the committed message: %v", err)
	}

	// An aborted transaction: its entry is known as aborted, its ack is
	// released.
	tx2, err := cl.NewTransaction(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("y"), Transaction: tx2}); err != nil {
		t.Fatal(err)
	}
	if err := cons.AckWithTxn(got, tx2); err != nil {
		t.Fatal(err)
	}
	id2 := tx2.GetTxnID()
	get(ackPath, &ps)
	if ps.OngoingTxnSize != 1 || ps.PendingAckedEntries != 1 {
		t.Fatalf("pendingAckStats with the second transaction open: %+v", ps)
	}
	if err := tx2.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	get(bufPath, &bs)
	if bs.OngoingTxnSize != 0 || bs.CommittedTxnCount != 1 || bs.AbortedTxnCount != 1 || bs.AbortedTxnSize != 1 {
		t.Fatalf("buffer stats after abort: %+v", bs)
	}
	ib = broker.TxnInBufferStats{}
	body = get(inBuf(id2), &ib)
	if !ib.Aborted || ib.StartPosition != "" {
		t.Fatalf("transactionInBufferStats of the aborted transaction: %s", body)
	}
	get(ackPath, &ps)
	if ps.OngoingTxnSize != 0 || ps.PendingAckedEntries != 0 || ps.CommittedTxnCount != 1 || ps.AbortedTxnCount != 1 {
		t.Fatalf("pendingAckStats after abort: %+v", ps)
	}
	// An id the topic never saw.
	body = raw(fmt.Sprintf("transactionInBufferStats/public/default/%s/%d/%d", local, id.MostSigBits, id.LeastSigBits+1000))
	if keysOf(t, body) != "aborted" || !strings.Contains(body, "false") {
		t.Fatalf("transactionInBufferStats of an unknown transaction: %s", body)
	}

	for _, c := range []struct {
		path string
		code int
	}{
		{"pendingAckStats/public/default/" + local + "/nosuch", 404},
		{"transactionBufferStats/public/default/" + newTopicName("nosuch"), 404},
		{"transactionInBufferStats/public/default/" + local + "/x/1", 412},
		{"transactionInPendingAckStats/public/default/" + local + "/s/1/y", 412},
	} {
		if code, body := httpDo(t, tb, "GET", "/admin/v3/transactions/"+c.path, ""); code != c.code {
			t.Fatalf("%s: %d %s, want %d", c.path, code, body, c.code)
		}
	}
}

// TestTransactionParticipantStatsDisabled: without
// transactionCoordinatorEnabled every participant endpoint answers 503,
// as Pulsar's.
func TestTransactionParticipantStatsDisabled(t *testing.T) {
	tb := startBroker(t, nil)
	local := newTopicName("txn-off")
	for _, path := range []string{
		"transactionBufferStats/public/default/" + local,
		"transactionInBufferStats/public/default/" + local + "/0/1",
		"pendingAckStats/public/default/" + local + "/s",
		"transactionInPendingAckStats/public/default/" + local + "/s/0/1",
	} {
		code, body := httpDo(t, tb, "GET", "/admin/v3/transactions/"+path, "")
		if code != 503 || !strings.Contains(body, "transactionCoordinatorEnabled") {
			t.Fatalf("%s: %d %s, want 503", path, code, body)
		}
	}
}
