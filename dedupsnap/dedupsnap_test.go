package dedupsnap

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
	"github.com/magnetar-mq/magnetar/mledger/memstore"
)

// startDedup starts a deduplicating broker with snapshots every 5
// entries, no timed ones, and a tail of 3 entries for topics without a
// snapshot (so that only a snapshot can remember an older producer).
func startDedup(t *testing.T, o brokertest.Options) (*brokertest.Broker, *Snapshots) {
	t.Helper()
	var s *Snapshots
	o.Config = func(c *brokerconf.Config) {
		c.Deduplication = true
		c.Delivery.DedupEntriesInterval = 5
		c.Delivery.DedupSnapshotIntervalSeconds = 0
		c.DedupRecoveryEntries = 3
	}
	o.Features = func(b *broker.Broker) (err error) {
		s, err = Enable(b)
		return err
	}
	return brokertest.Start(t, o), s
}

// send publishes seqs under producer name on topic.
func send(t *testing.T, cl pulsar.Client, topic, name string, seqs ...int64) {
	t.Helper()
	p := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic, Name: name, DisableBatching: true})
	defer p.Close()
	for _, seq := range seqs {
		if _, err := p.Send(brokertest.Ctx(t), &pulsar.ProducerMessage{Payload: []byte(name + strconv.FormatInt(seq, 10)), SequenceID: &seq}); err != nil {
			t.Fatal(err)
		}
	}
}

// stored reads topic from the start and returns the payloads.
func stored(t *testing.T, cl pulsar.Client, topic string) []string {
	t.Helper()
	r, err := cl.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []string
	for r.HasNext() {
		m, err := r.Next(brokertest.Ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(m.Payload()))
	}
	return out
}

func seqs(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// TestCrashRecoveryReplaysAfterSnapshot: a broker stores 17 entries
// (snapshots after the 5th, 10th and 15th) and dies; the broker taking
// over its storage recovers from the snapshot, replays only the 2
// entries after it, and still drops every re-sent message, also those of
// a producer whose messages are all older than the log's tail.
func TestCrashRecoveryReplaysAfterSnapshot(t *testing.T) {
	meta, err := embedded.Open(filepath.Join(t.TempDir(), "meta"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ledgers := memstore.New()
	// The first broker "crashes": it is never closed before the second
	// takes over (closed last, errors expected).
	tb1, s1 := startDedup(t, brokertest.Options{Meta: meta, Ledgers: ledgers, CloseErrorsOK: true})
	topic := brokertest.Topic("dedupsnap")
	cl1 := tb1.Client(t)
	send(t, cl1, topic, "a", seqs(0, 9)...)
	send(t, cl1, topic, "b", seqs(0, 6)...)
	// The third snapshot (after the 15th entry) is written by the
	// topic's writer: wait for its mark-delete position.
	ml := tb1.Ledger(t, topic)
	brokertest.WaitFor(t, "the snapshot after the 15th entry", func() bool {
		c := ml.Cursor(CursorName)
		return c != nil && c.Properties()["b"] == "4"
	})
	if p := ml.Cursor(CursorName).Properties(); p["a"] != "9" {
		t.Fatalf("snapshot properties %v, want a=9 b=4", p)
	}
	if r, _ := s1.LastRecovery(topic); r.FromSnapshot {
		t.Fatalf("a new topic's recovery came from a snapshot: %+v", r)
	}

	tb2, s2 := startDedup(t, brokertest.Options{Meta: meta, Ledgers: ledgers})
	cl2 := tb2.Client(t)
	before := stored(t, cl2, topic) // loads the topic: recovery
	if len(before) != 17 {
		t.Fatalf("stored before the re-sends: %d, want 17", len(before))
	}
	r, ok := s2.LastRecovery(topic)
	if !ok || !r.FromSnapshot || r.Replayed != 2 || r.Producers != 2 {
		t.Fatalf("recovery %+v (%v), want from the snapshot, 2 entries replayed, 2 producers", r, ok)
	}
	// Every re-send is a duplicate; only the new sequence ids are stored.
	send(t, cl2, topic, "a", seqs(0, 10)...)
	send(t, cl2, topic, "b", seqs(3, 7)...)
	after := stored(t, cl2, topic)
	if len(after) != 19 || after[17] != "a10" || after[18] != "b7" {
		t.Fatalf("stored after the re-sends: %d %v, want the 17 and a10, b7", len(after), after[min(17, len(after)):])
	}
}

// TestCloseTakesLastSnapshot: a topic that unloads takes a last
// snapshot, so its next load replays nothing; without the cursor (a
// topic written before deduplication snapshots) the tail is read and the
// cursor is made.
func TestCloseTakesLastSnapshot(t *testing.T) {
	tb, s := startDedup(t, brokertest.Options{})
	topic := brokertest.Topic("dedupclose")
	cl := tb.Client(t)
	send(t, cl, topic, "a", seqs(0, 6)...)
	if _, err := tb.UnloadTopic(topic); err != nil {
		t.Fatal(err)
	}
	if got := stored(t, cl, topic); len(got) != 7 {
		t.Fatalf("stored %d, want 7", len(got))
	}
	if r, _ := s.LastRecovery(topic); !r.FromSnapshot || r.Replayed != 0 || r.Producers != 1 {
		t.Fatalf("recovery after unload %+v, want from the snapshot, nothing replayed", r)
	}
	send(t, cl, topic, "a", seqs(5, 7)...)
	if got := stored(t, cl, topic); len(got) != 8 || got[7] != "a7" {
		t.Fatalf("stored %v, want a0..a7 once", got)
	}
	if ok, err := s.Snapshot(context.Background(), topic); !ok || err != nil {
		t.Fatalf("snapshot on demand: %v %v", ok, err)
	}
}
