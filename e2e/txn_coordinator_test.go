package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
)

func txnClient(t *testing.T, p *proc) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: p.service, EnableTransaction: true,
		OperationTimeout: 5 * time.Second, ConnectionTimeout: 5 * time.Second, Logger: plog.DefaultNopLogger()})
	if err != nil {
		t.Fatalf("transactional client: %v\n%s", err, p.log())
	}
	return c
}

// kill -9 of a standalone with open transactions and commits in flight:
// after the restart the open transactions are back with their partitions,
// every commit that was answered stays ended, a transaction whose timeout
// passed is aborted without any client connecting, and no id is reused.
// The admin CLI reads it all.
func TestTxnE2ECoordinatorKill9(t *testing.T) {
	dir := t.TempDir()
	flags := []string{"--transaction-coordinator-enabled", "--transaction-coordinators", "2"}
	p := startStandalone(t, dir, flags...)
	c := txnClient(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	topic := "persistent://public/default/txn-kill9"
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	var open []pulsar.TxnID
	for i := range 4 {
		tx, err := c.NewTransaction(time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint("open-", i)), Transaction: tx}); err != nil {
			t.Fatal(err)
		}
		open = append(open, tx.GetTxnID())
	}
	short, err := c.NewTransaction(3 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("short"), Transaction: short}); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var committed, seen []pulsar.TxnID
	twenty := make(chan struct{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			tx, err := c.NewTransaction(time.Hour)
			if err != nil {
				return
			}
			mu.Lock()
			seen = append(seen, tx.GetTxnID())
			mu.Unlock()
			if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("c"), Transaction: tx}); err != nil {
				return
			}
			if err := tx.Commit(ctx); err != nil {
				return
			}
			mu.Lock()
			committed = append(committed, tx.GetTxnID())
			if len(committed) == 20 {
				close(twenty)
			}
			mu.Unlock()
		}
	}()
	select {
	case <-twenty:
	case <-ctx.Done():
		t.Fatalf("20 commits did not happen\n%s", p.log())
	}
	p.kill()
	close(stop)
	wg.Wait()
	c.Close()
	mu.Lock()
	seen = append(seen, open...)
	seen = append(seen, short.GetTxnID())
	maxLeast := map[uint64]uint64{}
	for _, id := range seen {
		maxLeast[id.MostSigBits] = max(maxLeast[id.MostSigBits], id.LeastSigBits)
	}
	mu.Unlock()

	p = startStandalone(t, dir, flags...)
	defer p.stop()
	metadata := func(id pulsar.TxnID) (int, map[string]any) {
		code, body := p.get(t, fmt.Sprintf("/admin/v3/transactions/transactionMetadata/%d/%d", id.MostSigBits, id.LeastSigBits))
		var m map[string]any
		json.Unmarshal(body, &m)
		return code, m
	}
	for _, id := range open {
		code, m := metadata(id)
		pp, _ := m["producedPartitions"].(map[string]any)
		if code != 200 || m["status"] != "OPEN" || pp[topic] == nil {
			t.Fatalf("open transaction %+v after kill -9: %d %v", id, code, m)
		}
	}
	for _, id := range committed {
		if code, m := metadata(id); code != 404 {
			t.Fatalf("committed transaction %+v after kill -9: %d %v", id, code, m)
		}
	}
	// The short transaction's deadline passes with no client connected.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _ := metadata(short.GetTxnID())
		if code == 404 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the timed-out transaction was not aborted after the restart\n%s", p.log())
		}
		time.Sleep(100 * time.Millisecond) // no signal crosses the process boundary
	}
	if out := runAdmin(t, p, false, "-o", "json", "transactions", "coordinator-stats", "-c", fmt.Sprint(short.GetTxnID().MostSigBits)); !strings.Contains(out, `"timeoutCount": 1`) {
		t.Fatalf("coordinator-stats:\n%s", out)
	}

	c2 := txnClient(t, p)
	defer c2.Close()
	for range 6 {
		tx, err := c2.NewTransaction(time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		id := tx.GetTxnID()
		if id.LeastSigBits <= maxLeast[id.MostSigBits] {
			t.Fatalf("id %+v after the restart is not above %d", id, maxLeast[id.MostSigBits])
		}
		if err := tx.Abort(ctx); err != nil {
			t.Fatal(err)
		}
	}

	o := open[0]
	out := runAdmin(t, p, false, "transactions", "transaction-metadata", "-m", fmt.Sprint(o.MostSigBits), "-l", fmt.Sprint(o.LeastSigBits))
	if !strings.Contains(out, "OPEN") || !strings.Contains(out, topic) {
		t.Fatalf("transaction-metadata:\n%s", out)
	}
	out = runAdmin(t, p, false, "-o", "json", "transactions", "slow-transactions", "-t", "0s")
	for _, id := range open {
		if !strings.Contains(out, fmt.Sprintf("(%d,%d)", id.MostSigBits, id.LeastSigBits)) {
			t.Fatalf("slow-transactions lacks %+v:\n%s", id, out)
		}
	}
	if out := runAdmin(t, p, false, "transactions", "coordinators"); !strings.Contains(out, "pulsar://") {
		t.Fatalf("coordinators:\n%s", out)
	}
	if out := runAdmin(t, p, false, "transactions", "coordinator-internal-stats", "-c", "0"); !strings.Contains(out, "__transaction_log_0") {
		t.Fatalf("coordinator-internal-stats:\n%s", out)
	}
	// The participant side: the topic's buffer holds the four open
	// transactions (the short one was aborted, the others committed).
	if out := runAdmin(t, p, false, "-o", "json", "transactions", "transaction-buffer-stats", "-t", topic); !strings.Contains(out, `"ongoingTxnSize": 4`) {
		t.Fatalf("transaction-buffer-stats:\n%s", out)
	}
	if out := runAdmin(t, p, false, "-o", "json", "transactions", "transaction-in-buffer-stats", "-t", topic,
		"-m", fmt.Sprint(o.MostSigBits), "-l", fmt.Sprint(o.LeastSigBits)); !strings.Contains(out, `"startPosition"`) || !strings.Contains(out, `"aborted": false`) {
		t.Fatalf("transaction-in-buffer-stats:\n%s", out)
	}
	if out := runAdmin(t, p, false, "-o", "json", "transactions", "transaction-in-buffer-stats", "-t", topic,
		"-m", fmt.Sprint(short.GetTxnID().MostSigBits), "-l", fmt.Sprint(short.GetTxnID().LeastSigBits)); !strings.Contains(out, `"aborted": true`) {
		t.Fatalf("transaction-in-buffer-stats of the timed-out transaction:\n%s", out)
	}
	if out := runAdmin(t, p, true, "transactions", "transaction-metadata", "-m", "0", "-l", "999999"); !strings.Contains(out, "404") {
		t.Fatalf("unknown transaction: %s", out)
	}
}

// Off by default: a transactional client is refused.
func TestTxnCoordinatorOffByDefault(t *testing.T) {
	p := startStandalone(t, t.TempDir())
	defer p.stop()
	_, err := pulsar.NewClient(pulsar.ClientOptions{URL: p.service, EnableTransaction: true,
		OperationTimeout: 5 * time.Second, Logger: plog.DefaultNopLogger()})
	if err == nil {
		t.Fatal("transactions work on a standalone without transactionCoordinatorEnabled")
	}
	if code, _ := p.get(t, "/admin/v3/transactions/coordinatorStats"); code != 503 {
		t.Fatalf("coordinatorStats on a disabled broker: %d", code)
	}
}
