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

	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/txn/server"
)

// The /admin/v3/transactions endpoints: the coordinator side
// (coordinators, their stats, a transaction's metadata, slow
// transactions, the transaction log) and the participant side (the
// transaction buffer and pending acks of a topic).

// txnBroker starts a broker with n transaction coordinators and a client
// that uses transactions.
func txnBroker(t *testing.T, n int) (*testBroker, pulsar.Client) {
	t.Helper()
	tb := startBrokerOpts(t, brokerOpts{txn: &server.Config{Coordinators: n}})
	cl, err := pulsar.NewClient(pulsar.ClientOptions{URL: tb.url, EnableTransaction: true,
		OperationTimeout: 10 * time.Second, Logger: plog.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return tb, cl
}

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

func TestTransactionsAdmin(t *testing.T) {
	tb, cl := txnBroker(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	topic := "persistent://public/default/" + uniqueName("txn-admin")
	p := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic})
	tx, err := cl.NewTransaction(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("x"), Transaction: tx}); err != nil {
		t.Fatal(err)
	}
	id := tx.GetTxnID()
	idStr := fmt.Sprintf("(%d,%d)", id.MostSigBits, id.LeastSigBits)

	code, body := httpDo(t, tb, "GET", "/admin/v3/transactions/coordinators", "")
	if code != 200 || !strings.Contains(body, `"0"`) || !strings.Contains(body, `"1"`) {
		t.Fatalf("coordinators: %d %s", code, body)
	}
	code, body = httpDo(t, tb, "GET", fmt.Sprintf("/admin/v3/transactions/coordinatorStats?coordinatorId=%d", id.MostSigBits), "")
	var st struct {
		State          string `json:"state"`
		LeastSigBits   uint64 `json:"leastSigBits"`
		OngoingTxnSize int    `json:"ongoingTxnSize"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &st) != nil || st.State != "Ready" || st.OngoingTxnSize != 1 || st.LeastSigBits != id.LeastSigBits {
		t.Fatalf("coordinatorStats: %d %s", code, body)
	}
	code, body = httpDo(t, tb, "GET", "/admin/v3/transactions/coordinatorStats", "")
	var all map[string]json.RawMessage
	if code != 200 || json.Unmarshal([]byte(body), &all) != nil || len(all) != 2 {
		t.Fatalf("coordinatorStats (all): %d %s", code, body)
	}
	code, body = httpDo(t, tb, "GET", fmt.Sprintf("/admin/v3/transactions/transactionMetadata/%d/%d", id.MostSigBits, id.LeastSigBits), "")
	var md struct {
		TxnID              string                     `json:"txnId"`
		Status             string                     `json:"status"`
		TimeoutAt          int64                      `json:"timeoutAt"`
		ProducedPartitions map[string]json.RawMessage `json:"producedPartitions"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &md) != nil || md.TxnID != idStr || md.Status != "OPEN" ||
		md.TimeoutAt != time.Hour.Milliseconds() || md.ProducedPartitions[topic] == nil {
		t.Fatalf("transactionMetadata: %d %s", code, body)
	}
	code, body = httpDo(t, tb, "GET", "/admin/v3/transactions/slowTransactions/0", "")
	if code != 200 || !strings.Contains(body, idStr) {
		t.Fatalf("slowTransactions/0: %d %s", code, body)
	}
	code, body = httpDo(t, tb, "GET", "/admin/v3/transactions/slowTransactions/3600000", "")
	if code != 200 || strings.TrimSpace(body) != "{}" {
		t.Fatalf("slowTransactions/1h: %d %s", code, body)
	}
	code, body = httpDo(t, tb, "GET", fmt.Sprintf("/admin/v3/transactions/coordinatorInternalStats/%d", id.MostSigBits), "")
	if code != 200 || !strings.Contains(body, fmt.Sprintf(`"managedLedgerName":"pulsar/system/persistent/__transaction_log_%d"`, id.MostSigBits)) ||
		!strings.Contains(body, "transaction.subscription") {
		t.Fatalf("coordinatorInternalStats: %d %s", code, body)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	code, body = httpDo(t, tb, "GET", fmt.Sprintf("/admin/v3/transactions/transactionMetadata/%d/%d", id.MostSigBits, id.LeastSigBits), "")
	if code != 404 {
		t.Fatalf("metadata of a committed transaction: %d %s", code, body)
	}
	for path, want := range map[string]int{
		"transactionMetadata/x/1":                             412,
		"transactionMetadata/1/-1":                            412,
		"slowTransactions/-5":                                 412,
		"coordinatorStats?coordinatorId=abc":                  412,
		"coordinatorStats?coordinatorId=2":                    404,
		"coordinatorStats?coordinatorId=18446744073709551615": 404,
		"transactionMetadata/0/18446744073709551615":          404,
		"coordinatorInternalStats/7":                          404,
	} {
		if code, body := httpDo(t, tb, "GET", "/admin/v3/transactions/"+path, ""); code != want {
			t.Errorf("%s: %d %s, want %d", path, code, body, want)
		}
	}
}

// TestTransactionParticipantStats: the buffer and pending-ack endpoints
// follow an open transaction's produce and ack, its commit, and an
// aborted transaction, with Pulsar's JSON field names.
func TestTransactionParticipantStats(t *testing.T) {
	tb, cl := txnBroker(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	local := uniqueName("txn-part")
	topic := "persistent://public/default/" + local
	cons := brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, NackRedeliveryDelay: 100 * time.Millisecond})
	p := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
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
	var bs server.BufferStats
	body := get(bufPath, &bs)
	hasFields(t, "transactionBufferStats", body, "state", "maxReadPosition", "lastSnapshotTimestamps", "ongoingTxnSize",
		"recoverStartTime", "recoverEndTime")
	if bs.State != "NoSnapshot" || bs.OngoingTxnSize != 0 || !strings.HasSuffix(bs.MaxReadPosition, ":-1") {
		t.Fatalf("buffer stats before any message: %s", body)
	}
	var ps server.PendingAckStats
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
	var ib server.InBufferStats
	body = get(inBuf(id), &ib)
	hasFields(t, "transactionInBufferStats", body, "startPosition", "aborted")
	if ib.StartPosition != txPos || ib.Aborted {
		t.Fatalf("transactionInBufferStats: %s, want startPosition %s", body, txPos)
	}
	body = get(ackPath, &ps)
	if ps.State != "Ready" || ps.OngoingTxnSize != 1 || ps.PendingAckedEntries != 1 || ps.RecoverStartTime < before {
		t.Fatalf("pendingAckStats: %s", body)
	}
	var ip server.InPendingAckStats
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
	ib = server.InBufferStats{}
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
		{"transactionBufferStats/public/default/" + uniqueName("nosuch"), 404},
		{"transactionInBufferStats/public/default/" + local + "/x/1", 412},
		{"transactionInPendingAckStats/public/default/" + local + "/s/1/y", 412},
	} {
		if code, body := httpDo(t, tb, "GET", "/admin/v3/transactions/"+c.path, ""); code != c.code {
			t.Fatalf("%s: %d %s, want %d", c.path, code, body, c.code)
		}
	}
}

// TestTransactionsAdminDisabled: without transactionCoordinatorEnabled
// every /admin/v3/transactions endpoint answers 503, as Pulsar's.
func TestTransactionsAdminDisabled(t *testing.T) {
	tb := startBroker(t, nil)
	local := uniqueName("txn-off")
	for _, path := range []string{
		"coordinators", "coordinatorStats", "transactionMetadata/0/1", "slowTransactions/0", "coordinatorInternalStats/0",
		"transactionBufferStats/public/default/" + local,
		"transactionInBufferStats/public/default/" + local + "/0/1",
		"pendingAckStats/public/default/" + local + "/s",
		"transactionInPendingAckStats/public/default/" + local + "/s/0/1",
	} {
		code, body := httpDo(t, tb, "GET", "/admin/v3/transactions/"+path, "")
		if code != 503 || !strings.Contains(body, "transactionCoordinatorEnabled") {
			t.Errorf("%s: %d %s, want 503", path, code, body)
		}
	}
}
