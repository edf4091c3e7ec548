package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-mq/magnetar/broker"
)

func TestTransactionsAdmin(t *testing.T) {
	tb := startBroker(t, func(c *broker.Config) {
		c.TransactionCoordinatorEnabled = true
		c.TransactionCoordinators = 2
	})
	cl, err := pulsar.NewClient(pulsar.ClientOptions{URL: tb.url, EnableTransaction: true,
		OperationTimeout: 10 * time.Second, Logger: plog.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	topic := "persistent://public/default/" + newTopicName("txn-admin")
	p, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
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
	for _, bad := range []string{
		"/admin/v3/transactions/transactionMetadata/x/1",
		"/admin/v3/transactions/transactionMetadata/1/-1",
		"/admin/v3/transactions/slowTransactions/-5",
		"/admin/v3/transactions/coordinatorStats?coordinatorId=abc",
	} {
		if code, body := httpDo(t, tb, "GET", bad, ""); code != 412 {
			t.Fatalf("%s: %d %s", bad, code, body)
		}
	}
	for _, nf := range []string{
		"/admin/v3/transactions/coordinatorStats?coordinatorId=2",
		"/admin/v3/transactions/coordinatorStats?coordinatorId=18446744073709551615",
		"/admin/v3/transactions/transactionMetadata/0/18446744073709551615",
		"/admin/v3/transactions/coordinatorInternalStats/7",
	} {
		if code, body := httpDo(t, tb, "GET", nf, ""); code != 404 {
			t.Fatalf("%s: %d %s", nf, code, body)
		}
	}
}

func TestTransactionsAdminDisabled(t *testing.T) {
	tb := startBroker(t, nil)
	for _, path := range []string{"/admin/v3/transactions/coordinators", "/admin/v3/transactions/coordinatorStats",
		"/admin/v3/transactions/transactionMetadata/0/1", "/admin/v3/transactions/slowTransactions/0"} {
		if code, body := httpDo(t, tb, "GET", path, ""); code != 503 || !strings.Contains(body, "transactionCoordinatorEnabled") {
			t.Fatalf("%s: %d %s", path, code, body)
		}
	}
}
