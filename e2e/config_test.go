package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/internal/testenv"

	"github.com/apache/pulsar-client-go/pulsar"
)

// TestStandaloneFromClientTestsConfig starts `magnetar standalone
// --config` with the settings pulsar-client-go's integration tests give
// their standalone and checks the broker behaves accordingly: the 1 MiB
// message limit, topic auto-creation, batch-index acknowledgements and
// Key_Shared auto-split; unknown keys are reported, not fatal.
func TestStandaloneFromClientTestsConfig(t *testing.T) {
	cfg, err := filepath.Abs(filepath.Join("testdata", "client-tests-standalone.conf"))
	if err != nil {
		t.Fatal(err)
	}
	p := startStandalone(t, t.TempDir(), "--config", cfg)
	if log := p.log(); !strings.Contains(log, "ignoring 4 configuration keys") || !strings.Contains(log, "replicationConnectionsPerBroker") {
		t.Fatalf("unknown keys not reported once:\n%s", log)
	}
	c := p.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	t.Run("max message size 1 MiB", func(t *testing.T) {
		prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "auto-created-size", DisableBatching: true})
		if err != nil {
			t.Fatal(err) // also: the topic was auto-created
		}
		defer prod.Close()
		if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: make([]byte, 1000_000)}); err != nil {
			t.Fatalf("a message under 1 MiB: %v", err)
		}
		_, err = prod.Send(ctx, &pulsar.ProducerMessage{Payload: make([]byte, 1<<20+1)})
		if !errors.Is(err, pulsar.ErrMessageTooLarge) {
			t.Fatalf("a message over 1 MiB: %v, want ErrMessageTooLarge (limit advertised by the broker)", err)
		}
	})

	t.Run("batch-index acknowledgements", func(t *testing.T) {
		const topic = "batch-index-acks"
		cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
			EnableBatchIndexAcknowledgment: true, AckWithResponse: true})
		if err != nil {
			t.Fatal(err)
		}
		prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 10,
			BatchingMaxPublishDelay: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()
		done := make(chan error, 10)
		for i := range 10 {
			prod.SendAsync(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(i))}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { done <- err })
		}
		if err := prod.FlushWithCtx(ctx); err != nil { // one batch of 10
			t.Fatal(err)
		}
		for range 10 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		for i := range 10 {
			m, err := cons.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if m.ID().BatchSize() != 10 {
				t.Fatalf("message %d in a batch of %d, want one batch of 10", i, m.ID().BatchSize())
			}
			if i%2 == 0 { // ack the even ones only
				if err := cons.Ack(m); err != nil {
					t.Fatal(err)
				}
			}
		}
		cons.Close()
		again, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
			EnableBatchIndexAcknowledgment: true})
		if err != nil {
			t.Fatal(err)
		}
		defer again.Close()
		var got []string
		for range 5 {
			m, err := again.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(m.Payload()))
			again.Ack(m)
		}
		if strings.Join(got, ",") != "1,3,5,7,9" {
			t.Fatalf("redelivered %v, want only the unacknowledged odd messages", got)
		}
	})

	t.Run("Key_Shared auto-split", func(t *testing.T) {
		const topic = "key-shared"
		var conss []pulsar.Consumer
		for range 2 {
			cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "ks", Type: pulsar.KeyShared,
				KeySharedPolicy: &pulsar.KeySharedPolicy{Mode: pulsar.KeySharedPolicyModeAutoSplit}})
			if err != nil {
				t.Fatal(err)
			}
			defer cons.Close()
			conss = append(conss, cons)
		}
		prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()
		const keys, per = 20, 5
		for i := range per {
			for k := range keys {
				if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Key: fmt.Sprint("k", k), Payload: []byte(fmt.Sprint(i))}); err != nil {
					t.Fatal(err)
				}
			}
		}
		owner := map[string]int{}
		next := map[string]int{}
		count := []int{0, 0}
		for n := 0; n < keys*per; {
			for ci, cons := range conss {
				rctx, rcancel := context.WithTimeout(ctx, 200*time.Millisecond)
				m, err := cons.Receive(rctx)
				rcancel()
				if err != nil {
					continue
				}
				n++
				count[ci]++
				if o, ok := owner[m.Key()]; ok && o != ci {
					t.Fatalf("key %s delivered to consumers %d and %d", m.Key(), o, ci)
				}
				owner[m.Key()] = ci
				if want := fmt.Sprint(next[m.Key()]); string(m.Payload()) != want {
					t.Fatalf("key %s: got %s, want %s (per-key order)", m.Key(), m.Payload(), want)
				}
				next[m.Key()]++
				cons.Ack(m)
			}
			if ctx.Err() != nil {
				t.Fatalf("received %d of %d", n, keys*per)
			}
		}
		if count[0] == 0 || count[1] == 0 {
			t.Fatalf("hash ranges not split: consumers got %v", count)
		}
	})
}

// TestStandaloneRollsByCountWithoutMinimum: Pulsar's
// managedLedgerMinLedgerRolloverTimeMinutes=0 is "no minimum", so with
// managedLedgerMaxEntriesPerLedger=10 a topic's ledgers roll every ten
// entries at once (with 0 read as "unset", the 10-minute default kept
// every entry in one ledger, and tiered storage had nothing to offload).
func TestStandaloneRollsByCountWithoutMinimum(t *testing.T) {
	cfg := testenv.WriteFile(t, "test.conf", "managedLedgerMinLedgerRolloverTimeMinutes=0\nmanagedLedgerMaxEntriesPerLedger=10\n")
	p := startStandalone(t, t.TempDir(), "--config", cfg)
	c := p.client(t)
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "rolls", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 35 {
		if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	code, body := p.get(t, "/admin/v2/persistent/public/default/rolls/internalStats")
	if code != 200 {
		t.Fatalf("internalStats: %d %s", code, body)
	}
	var st struct {
		Ledgers []struct {
			Entries int64 `json:"entries"`
		} `json:"ledgers"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Ledgers) < 4 || st.Ledgers[0].Entries != 10 {
		t.Fatalf("ledgers %+v: want rolls every 10 entries", st.Ledgers)
	}
}
