package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// dedupEnv is a standalone with an admin client and a pulsar client.
type dedupEnv struct {
	adm pulsaradmin.Client
	c   pulsar.Client
}

func newDedupEnv(t *testing.T, flags ...string) dedupEnv {
	t.Helper()
	p := startStandalone(t, t.TempDir(), flags...)
	adm, err := pulsaradmin.NewClient(&pulsaradmin.Config{WebServiceURL: p.http})
	if err != nil {
		t.Fatal(err)
	}
	return dedupEnv{adm: adm, c: p.client(t)}
}

// lastSeqAfterOneSend connects a producer named name, sends one message
// with the sequence id the client picks (the broker's last one for name,
// plus one) and returns it.
func (e dedupEnv) lastSeqAfterOneSend(t *testing.T, topic, name string) int64 {
	t.Helper()
	prod, err := e.c.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: name, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("next")}); err != nil {
		t.Fatal(err)
	}
	return prod.LastSequenceID()
}

// sendSeqs sends the sequence ids 0..n-1 as producer name.
func (e dedupEnv) sendSeqs(t *testing.T, topic, name string, n int64) {
	t.Helper()
	prod, err := e.c.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: name, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for seq := range n {
		if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(name), SequenceID: &seq}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDedupTurnedOnWhileLoaded: deduplication turned on (pulsaradmin's
// SetDeduplicationStatus) for a loaded topic recovers the producers'
// sequence ids from the log, as Pulsar's replay of its cursor does: a
// producer reconnecting continues after its last stored sequence id and
// a re-sent old one is dropped. Until then the stats say "Recovering".
func TestDedupTurnedOnWhileLoaded(t *testing.T) {
	e := newDedupEnv(t)
	const topic = "persistent://public/default/dedup-turned-on"
	tn, _ := utils.GetTopicName(topic)
	// A subscription keeps the topic from being deleted as inactive.
	cons, err := e.c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "keep"})
	if err != nil {
		t.Fatal(err)
	}
	cons.Close()
	e.sendSeqs(t, topic, "p", 10) // stored without deduplication
	st, err := e.adm.Topics().GetStats(*tn)
	if err != nil || st.DeDuplicationStatus != "Disabled" {
		t.Fatalf("before: %q %v", st.DeDuplicationStatus, err)
	}
	if err := e.adm.Topics().SetDeduplicationStatus(*tn, true); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := e.adm.Topics().GetStats(*tn)
		if err != nil {
			t.Fatal(err)
		}
		if st.DeDuplicationStatus == "Enabled" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deduplication status %q a minute after it was turned on", st.DeDuplicationStatus)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := e.lastSeqAfterOneSend(t, topic, "p"); got != 10 {
		t.Fatalf("producer p continued at sequence id %d, want 10 (after the recovered 9)", got)
	}
	before, err := e.adm.Topics().GetInternalStats(*tn)
	if err != nil {
		t.Fatal(err)
	}
	e.sendSeqs(t, topic, "p", 5) // all re-sent: dropped
	after, err := e.adm.Topics().GetInternalStats(*tn)
	if err != nil {
		t.Fatal(err)
	}
	if after.NumberOfEntries != before.NumberOfEntries {
		t.Fatalf("re-sent sequence ids were stored: %d entries, then %d", before.NumberOfEntries, after.NumberOfEntries)
	}
}

// TestDedupMaxNumberOfProducers: a snapshot keeps at most
// brokerDeduplicationMaxNumberOfProducers producers (the first by name),
// as Pulsar's: after a reload only those are remembered.
func TestDedupMaxNumberOfProducers(t *testing.T) {
	for _, tc := range []struct {
		max          string
		wantA, wantB int64
	}{
		{"1", 5, 0},     // a kept, b left out
		{"10000", 5, 5}, // both kept (Pulsar's default)
	} {
		t.Run(tc.max, func(t *testing.T) {
			e := newDedupEnv(t, "--dedup", "--dedup-max-producers", tc.max)
			const topic = "persistent://public/default/dedup-max"
			tn, _ := utils.GetTopicName(topic)
			cons, err := e.c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "keep"})
			if err != nil {
				t.Fatal(err)
			}
			cons.Close()
			e.sendSeqs(t, topic, "a", 5)
			e.sendSeqs(t, topic, "b", 5)
			// The unload takes the last snapshot; the next producer
			// loads the topic from it.
			if err := e.adm.Topics().Unload(*tn); err != nil {
				t.Fatal(err)
			}
			if got := e.lastSeqAfterOneSend(t, topic, "b"); got != tc.wantB {
				t.Fatalf("producer b continued at %d, want %d", got, tc.wantB)
			}
			if got := e.lastSeqAfterOneSend(t, topic, "a"); got != tc.wantA {
				t.Fatalf("producer a continued at %d, want %d", got, tc.wantA)
			}
		})
	}
}
