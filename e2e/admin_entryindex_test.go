package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// TestAdminCLIMessageIDByIndex: a standalone process with both broker
// entry metadata interceptors and ledgers of 3 entries is killed (SIGKILL)
// and restarted; the message index runs on over the rollovers and the
// crash, and `magnetar admin topics get-message-id-by-index` (Pulsar's
// getMessageIdByIndex) names each message's entry.
func TestAdminCLIMessageIDByIndex(t *testing.T) {
	dir := t.TempDir()
	flags := []string{"--broker-entry-metadata-interceptors",
		"org.apache.pulsar.common.intercept.AppendBrokerTimestampMetadataInterceptor,org.apache.pulsar.common.intercept.AppendIndexMetadataInterceptor",
		"--expose-broker-entry-metadata", "--max-entries-per-ledger", "3", "--min-ledger-rollover-time", "-1s"}
	topic := "persistent://public/default/cli-index"
	produce := func(p *proc, from, n int, batched bool) {
		cl := p.client(t)
		defer cl.Close()
		prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: !batched,
			BatchingMaxMessages: 4, BatchingMaxPublishDelay: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()
		errs := make(chan error, n)
		for i := 0; i < n; i++ {
			prod.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(from + i))},
				func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { errs <- err })
		}
		for i := 0; i < n; i++ {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
	p := startStandalone(t, dir, flags...)
	produce(p, 0, 16, true)
	p.kill()
	p = startStandalone(t, dir, flags...)
	produce(p, 16, 5, false)
	const total = 21

	cl := p.client(t)
	defer cl.Close()
	r, err := cl.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ids := make([]pulsar.MessageID, 0, total)
	for i := 0; i < total; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		m, err := r.Next(ctx)
		cancel()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if idx := m.Index(); idx == nil || *idx != uint64(i) || string(m.Payload()) != fmt.Sprint(i) {
			t.Fatalf("message %q: index %v, want %d", m.Payload(), idx, i)
		}
		if m.BrokerPublishTime() == nil {
			t.Fatalf("message %d: no broker publish time", i)
		}
		ids = append(ids, m.ID())
	}
	ledgers := map[int64]bool{}
	for i, id := range ids {
		ledgers[id.LedgerID()] = true
		var got struct {
			LedgerID int64 `json:"ledgerId"`
			EntryID  int64 `json:"entryId"`
		}
		out := runAdmin(t, p, false, "-o", "json", "topics", "get-message-id-by-index", topic, "-i", fmt.Sprint(i))
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("index %d: %v in %q", i, err, out)
		}
		if got.LedgerID != id.LedgerID() || got.EntryID != id.EntryID() {
			t.Fatalf("index %d: %d:%d, want %d:%d", i, got.LedgerID, got.EntryID, id.LedgerID(), id.EntryID())
		}
	}
	if len(ledgers) < 3 {
		t.Fatalf("messages in %d ledgers, want several", len(ledgers))
	}
	if out := runAdmin(t, p, true, "topics", "get-message-id-by-index", topic, "-i", fmt.Sprint(total)); !strings.Contains(out, "404") {
		t.Fatalf("index past the end: %s", out)
	}
	resp, err := http.Get(p.http + "/admin/v2/persistent/public/default/cli-index/getMessageIdByIndex?index=x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("index=x: %d %s", resp.StatusCode, body)
	}
}
