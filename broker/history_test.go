package broker

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

func TestHistoryRing(t *testing.T) {
	var h history
	// The first reading only primes the counters.
	h.record("t", 3, 1000, counters{msgIn: 10, bytesIn: 100})
	if got := h.get("t"); len(got) != 0 {
		t.Fatalf("primed ring holds %d samples", len(got))
	}
	for i := int64(1); i <= 5; i++ {
		h.record("t", 3, 1000+i*2000, counters{msgIn: 10 + i*20, bytesIn: 100 + i*200, msgOut: i * 4, backlog: i, storage: i * 1000})
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
	h.record("t", 3, 20000, counters{msgIn: 1})
	last := h.get("t")[2]
	if last.MsgRateIn != 0 {
		t.Errorf("rate after counter reset %v, want 0", last.MsgRateIn)
	}
	// Extreme counters do not overflow the rate arithmetic.
	h.record("big", 2, 0, counters{msgIn: 0})
	h.record("big", 2, 1000, counters{msgIn: math.MaxInt64})
	if r := h.get("big")[0].MsgRateIn; r != float64(math.MaxInt64) {
		t.Errorf("rate at int64 max %v", r)
	}
	h.retainSampledAt(1000) // "big" was sampled at 1000, "t" was not
	if h.get("t") != nil {
		t.Error("retain kept a dropped topic")
	}
}

func TestHistoryConfig(t *testing.T) {
	for _, c := range []struct {
		interval time.Duration
		length   int
		wantLen  int
		bad      bool
	}{
		{0, 0, 180, false},
		{time.Second, 0, 900, false},
		{time.Minute, 0, 15, false},
		{time.Hour, 0, 2, false},
		{-1, 0, 0, false}, // off
		{time.Millisecond, 0, 0, true},
		{time.Second, MaxHistoryLength + 1, 0, true},
	} {
		cfg := Config{HistoryInterval: c.interval, HistoryLength: c.length}
		cfg.EnsureDefaults()
		err := cfg.Validate()
		if (err != nil) != c.bad {
			t.Errorf("interval %s length %d: err %v, want error %v", c.interval, c.length, err, c.bad)
		}
		if !c.bad && cfg.HistoryLength != c.wantLen {
			t.Errorf("interval %s: length %d, want %d", c.interval, cfg.HistoryLength, c.wantLen)
		}
	}
}

// TestHistoryIdleRuns: identical idle samples are one run, expanded on
// read with their times; traffic starts a new run; trimming drops the
// oldest samples across runs.
func TestHistoryIdleRuns(t *testing.T) {
	var h history
	h.record("t", 5, 0, counters{backlog: 7, storage: 70})
	for i := int64(1); i <= 10; i++ {
		h.record("t", 5, i*5000, counters{backlog: 7, storage: 70})
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
	h.record("t", 5, 55000, counters{msgIn: 1, backlog: 8, storage: 80})
	h.record("t", 5, 60000, counters{msgIn: 1, backlog: 8, storage: 80})
	h.record("t", 5, 65000, counters{msgIn: 1, backlog: 8, storage: 80})
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

// TestHistoryCountersMatchStats: the sampler's counters-only read gives
// what the topic's stats give (in and out counters, backlog summed over
// the subscriptions, storage size), on a topic with traffic, a
// subscription that consumed and acknowledged part of it and one that
// consumed nothing, and allocates a few words where the stats allocated
// per subscription and consumer.
func TestHistoryCountersMatchStats(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	const topic = "persistent://public/default/history-counters"
	// Acknowledgements answered: Ack returns once the broker has it.
	read := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "read", AckWithResponse: true})
	defer read.Close()
	idle := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "idle"})
	idle.Close()
	p := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	defer p.Close()
	for i := range 20 {
		if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("m-%02d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	ms := receiveN(t, read, 20)
	for _, m := range ms[:12] {
		if err := read.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	tp := tb.lookupTopic(topic)
	if tp == nil {
		t.Fatal("topic not loaded")
	}
	st := tp.statsOpts(false)
	want := counters{
		msgIn: st.MsgInCounter, bytesIn: st.BytesInCounter,
		msgOut: st.MsgOutCounter, bytesOut: st.BytesOutCounter,
		backlog: st.MsgBacklog, storage: st.StorageSize,
	}
	if want.msgIn != 20 || want.msgOut != 20 || want.backlog != 28 || want.storage == 0 {
		t.Fatalf("stats counters %+v: want 20 in, 20 out, backlog 8+20, storage > 0", want)
	}
	if got := tp.historyCounters(); got != want {
		t.Fatalf("historyCounters %+v, stats %+v", got, want)
	}
	// The closure and what it shares, and a hand-over to each busy
	// subscription's loop; statsOpts takes 25 here.
	if a := testing.AllocsPerRun(100, func() { tp.historyCounters() }); a > 8 {
		t.Errorf("historyCounters allocates %.0f times, want at most 8", a)
	}
	// And a sample taken from them: the second tick turns counters into
	// rates, the backlog is as read.
	tb.sampleHistory(time.Now().UnixMilli())
	tb.sampleHistory(time.Now().Add(time.Second).UnixMilli())
	h := tb.TopicHistory(topic)
	if len(h) == 0 || h[len(h)-1].MsgBacklog != 28 || h[len(h)-1].StorageSize != want.storage {
		t.Fatalf("history %+v: want a last sample with backlog 28, storage %d", h, want.storage)
	}
}
