package topichistory

import (
	"math"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/broker/snap"
)

func TestHistoryRing(t *testing.T) {
	var h history
	// The first reading only primes the counters.
	h.record("t", 3, 1000, snap.Counters{MsgIn: 10, BytesIn: 100})
	if got := h.get("t"); len(got) != 0 {
		t.Fatalf("primed ring holds %d samples", len(got))
	}
	for i := int64(1); i <= 5; i++ {
		h.record("t", 3, 1000+i*2000, snap.Counters{MsgIn: 10 + i*20, BytesIn: 100 + i*200, MsgOut: i * 4, Backlog: i, Storage: i * 1000})
	}
	got := h.get("t")
	if len(got) != 3 {
		t.Fatalf("ring of 3 holds %d samples", len(got))
	}
	for i, s := range got {
		wantAt := int64(1000 + (i+3)*2000)
		if s.At != wantAt {
			t.Errorf("sample %d at %d, want %d (oldest first)", i, s.At, wantAt)
		}
		if s.MsgRateIn != 10 || s.MsgThroughputIn != 100 || s.MsgRateOut != 2 {
			t.Errorf("sample %d rates %+v, want 10 msg/s in, 100 B/s, 2 msg/s out", i, s)
		}
		if s.MsgBacklog != int64(i+3) || s.StorageSize != int64(i+3)*1000 {
			t.Errorf("sample %d backlog/storage %+v", i, s)
		}
	}
	// A counter that went backwards (topic reloaded) gives 0, not a
	// negative rate.
	h.record("t", 3, 20000, snap.Counters{MsgIn: 1})
	last := h.get("t")[2]
	if last.MsgRateIn != 0 {
		t.Errorf("rate after counter reset %v, want 0", last.MsgRateIn)
	}
	// Extreme counters do not overflow the rate arithmetic.
	h.record("big", 2, 0, snap.Counters{MsgIn: 0})
	h.record("big", 2, 1000, snap.Counters{MsgIn: math.MaxInt64})
	if r := h.get("big")[0].MsgRateIn; r != float64(math.MaxInt64) {
		t.Errorf("rate at int64 max %v", r)
	}
	h.retainSampledAt(1000) // "big" was sampled at 1000, "t" was not
	if h.get("t") != nil {
		t.Error("retain kept a dropped topic")
	}
}

// TestHistoryIdleRuns: identical idle samples are one run, expanded on
// read with their times; traffic starts a new run; trimming drops the
// oldest samples across runs.
func TestHistoryIdleRuns(t *testing.T) {
	var h history
	h.record("t", 5, 0, snap.Counters{Backlog: 7, Storage: 70})
	for i := int64(1); i <= 10; i++ {
		h.record("t", 5, i*5000, snap.Counters{Backlog: 7, Storage: 70})
	}
	if r := h.rings["t"]; len(r.runs) != 1 || r.n != 5 {
		t.Fatalf("idle topic: %d runs, %d samples; want 1 run of 5", len(r.runs), r.n)
	}
	got := h.get("t")
	for i, s := range got {
		if want := int64(30000 + i*5000); s.At != want || s.MsgBacklog != 7 || s.StorageSize != 70 || !s.idle() {
			t.Errorf("sample %d = %+v, want idle at %d", i, s, want)
		}
	}
	// Traffic (one message in 5 s), then idle again with a new backlog.
	h.record("t", 5, 55000, snap.Counters{MsgIn: 1, Backlog: 8, Storage: 80})
	h.record("t", 5, 60000, snap.Counters{MsgIn: 1, Backlog: 8, Storage: 80})
	h.record("t", 5, 65000, snap.Counters{MsgIn: 1, Backlog: 8, Storage: 80})
	got = h.get("t")
	wantAt := []int64{45000, 50000, 55000, 60000, 65000}
	wantRate := []float64{0, 0, 0.2, 0, 0}
	wantBacklog := []int64{7, 7, 8, 8, 8}
	if len(got) != 5 {
		t.Fatalf("%d samples, want 5", len(got))
	}
	for i, s := range got {
		if s.At != wantAt[i] || s.MsgRateIn != wantRate[i] || s.MsgBacklog != wantBacklog[i] {
			t.Errorf("sample %d = %+v, want at %d rate %v backlog %d", i, s, wantAt[i], wantRate[i], wantBacklog[i])
		}
	}
	if r := h.rings["t"]; len(r.runs) != 3 {
		t.Errorf("%d runs, want 3 (idle, traffic, idle)", len(r.runs))
	}
}

// TestSamplerRecordsTopics: two ticks over a loaded topic give a sample
// with its backlog and storage size; an unloaded topic's history goes
// on the next tick.
func TestSamplerRecordsTopics(t *testing.T) {
	var s *Sampler
	b := brokertest.Start(t, brokertest.Options{Features: func(b *broker.Broker) (err error) {
		s, err = Enable(b)
		return err
	}})
	cl := b.Client(t)
	topic := brokertest.Topic("history")
	c := brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	defer c.Close()
	p := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	brokertest.SendAll(t, p, 5, brokertest.Msg)
	now := time.Now()
	s.sample(now.UnixMilli())
	if h := s.TopicHistory(topic); len(h) != 0 {
		t.Fatalf("one tick gave %d samples (it only primes the counters)", len(h))
	}
	s.sample(now.Add(time.Second).UnixMilli())
	h := s.TopicHistory(topic)
	if len(h) != 1 || h[0].MsgBacklog != 5 || h[0].StorageSize == 0 {
		t.Fatalf("history %+v: want one sample with backlog 5 and storage > 0", h)
	}
	if s.HistoryInterval() != b.Config().HistoryInterval {
		t.Errorf("interval %s, config %s", s.HistoryInterval(), b.Config().HistoryInterval)
	}
	p.Close()
	c.Close()
	if ok, err := b.UnloadTopic(topic); err != nil || !ok {
		t.Fatalf("unload: %v %v", ok, err)
	}
	s.sample(now.Add(2 * time.Second).UnixMilli())
	if h := s.TopicHistory(topic); h != nil {
		t.Errorf("unloaded topic kept %d samples", len(h))
	}
}
