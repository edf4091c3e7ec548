package topichistory

import (
	"context"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/snap"
	"github.com/magnetar-mq/magnetar/internal/shrink"
)

// Sample is one point of a topic's history: the rates over the interval
// that ended at At, and the backlog and storage size at At.
type Sample struct {
	// At is when the sample was taken (Unix milliseconds). Every topic
	// sampled on one tick shares the tick's At, so the histories of a
	// partitioned topic's partitions line up.
	At int64 `json:"at"`
	// MsgRateIn and MsgRateOut are messages per second,
	// MsgThroughputIn/Out bytes per second, since the previous sample.
	MsgRateIn        float64 `json:"msgRateIn"`
	MsgRateOut       float64 `json:"msgRateOut"`
	MsgThroughputIn  float64 `json:"msgThroughputIn"`
	MsgThroughputOut float64 `json:"msgThroughputOut"`
	// MsgBacklog is the sum of the subscriptions' backlogs (messages);
	// StorageSize the topic's stored bytes.
	MsgBacklog  int64 `json:"msgBacklog"`
	StorageSize int64 `json:"storageSize"`
}

// history keeps a ring of samples per loaded topic. A topic that is no
// longer loaded on a tick loses its history.
type history struct {
	mu     sync.Mutex
	rings  map[string]*ring
	shrink shrink.Tracker // rings of unloaded topics go (internal/shrink)
}

// ring holds a topic's last samples (at most capacity) as runs: a run
// is one sample or a stretch of identical idle samples (no traffic, the
// same backlog and storage size) taken at regular ticks, kept as its
// first sample, the time of its last one and its length. An idle topic
// costs one run instead of capacity samples; samples() expands the runs
// (an idle stretch's times are spread evenly between its first and last
// sample, which are exact). It also keeps the counters of the last
// reading (to turn counters into rates).
type ring struct {
	runs []run
	n    int // samples held (the sum of the runs' lengths)

	lastAt                   int64
	lastMsgIn, lastBytesIn   int64
	lastMsgOut, lastBytesOut int64
	primed                   bool
}

type run struct {
	first  Sample
	lastAt int64
	n      int
}

// idle reports whether s shows no traffic.
func (s *Sample) idle() bool {
	return s.MsgRateIn == 0 && s.MsgRateOut == 0 && s.MsgThroughputIn == 0 && s.MsgThroughputOut == 0
}

// at returns the time of the run's i-th sample.
func (r *run) at(i int) int64 {
	if i == 0 || r.n < 2 {
		return r.first.At
	}
	if i == r.n-1 {
		return r.lastAt
	}
	return r.first.At + (r.lastAt-r.first.At)*int64(i)/int64(r.n-1)
}

func (r *ring) push(s Sample, capacity int) {
	if k := len(r.runs); k > 0 {
		last := &r.runs[k-1]
		if s.idle() && last.first.idle() && s.MsgBacklog == last.first.MsgBacklog && s.StorageSize == last.first.StorageSize {
			last.lastAt = s.At
			last.n++
			r.n++
			r.trim(capacity)
			return
		}
	}
	r.runs = append(r.runs, run{first: s, lastAt: s.At, n: 1})
	r.n++
	r.trim(capacity)
}

// trim drops the oldest samples beyond capacity.
func (r *ring) trim(capacity int) {
	drop := 0
	for r.n > capacity {
		f := &r.runs[drop]
		if f.n > 1 {
			f.first.At = f.at(1)
			f.n--
		} else {
			drop++
		}
		r.n--
	}
	if drop > 0 {
		r.runs = append(r.runs[:0], r.runs[drop:]...)
	}
}

// samples returns the held samples, oldest first.
func (r *ring) samples() []Sample {
	out := make([]Sample, 0, r.n)
	for i := range r.runs {
		ru := &r.runs[i]
		for j := 0; j < ru.n; j++ {
			s := ru.first
			s.At = ru.at(j)
			out = append(out, s)
		}
	}
	return out
}

// record adds the sample of one topic taken at now (Unix ms). The first
// call for a topic only primes the counters: a rate needs two readings.
func (h *history) record(name string, capacity int, now int64, c snap.Counters) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.rings == nil {
		h.rings = map[string]*ring{}
	}
	r := h.rings[name]
	if r == nil {
		r = &ring{}
		h.rings[name] = r
	}
	if r.primed && now > r.lastAt {
		dt := float64(now-r.lastAt) / 1000
		rate := func(cur, last int64) float64 {
			if cur < last { // counter restarted (topic reloaded)
				return 0
			}
			return float64(cur-last) / dt
		}
		r.push(Sample{
			At:               now,
			MsgRateIn:        rate(c.MsgIn, r.lastMsgIn),
			MsgRateOut:       rate(c.MsgOut, r.lastMsgOut),
			MsgThroughputIn:  rate(c.BytesIn, r.lastBytesIn),
			MsgThroughputOut: rate(c.BytesOut, r.lastBytesOut),
			MsgBacklog:       c.Backlog,
			StorageSize:      c.Storage,
		}, capacity)
	}
	r.primed = true
	r.lastAt = now
	r.lastMsgIn, r.lastBytesIn, r.lastMsgOut, r.lastBytesOut = c.MsgIn, c.BytesIn, c.MsgOut, c.BytesOut
}

// retainSampledAt drops the rings of topics not recorded at now (the
// tick's time, which record leaves in lastAt): topics no longer loaded.
func (h *history) retainSampledAt(now int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rebuild := false
	for name, r := range h.rings {
		if r.lastAt != now {
			delete(h.rings, name)
			rebuild = h.shrink.Deleted(len(h.rings)) || rebuild
		}
	}
	if rebuild {
		h.rings = shrink.Rebuild(h.rings)
	}
}

func (h *history) get(name string) []Sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.rings[name]; r != nil {
		return r.samples()
	}
	return nil
}

// Sampler samples every loaded topic of a broker each
// Config.HistoryInterval and keeps the last Config.HistoryLength samples
// of each (a broker.Feature with a Lifecycle: its goroutine runs from
// the broker's Start to its Close).
type Sampler struct {
	b        *broker.Broker
	interval time.Duration
	length   int
	h        history
	stop     chan struct{}
	done     chan struct{}
}

var (
	_ broker.Feature   = (*Sampler)(nil)
	_ broker.Lifecycle = (*Sampler)(nil)
)

// Enable registers the history sampler on b (before Start). With a
// negative Config.HistoryInterval it samples nothing.
func Enable(b *broker.Broker) (*Sampler, error) {
	cfg := b.Config()
	s := &Sampler{b: b, interval: cfg.HistoryInterval, length: cfg.HistoryLength}
	if err := b.Use(s); err != nil {
		return nil, err
	}
	return s, nil
}

// Name names the feature.
func (s *Sampler) Name() string { return "history" }

// Start starts the sampler's goroutine (broker.Lifecycle).
func (s *Sampler) Start(context.Context) error {
	if s.interval <= 0 {
		return nil
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.loop()
	return nil
}

// Close stops the sampler and waits for it (broker.Lifecycle).
func (s *Sampler) Close() {
	if s.stop == nil {
		return
	}
	close(s.stop)
	<-s.done
	s.stop = nil
}

func (s *Sampler) loop() {
	defer close(s.done)
	tk := time.NewTicker(s.interval)
	defer tk.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-tk.C:
			s.sample(now.UnixMilli())
		}
	}
}

// sample records one sample of every loaded topic at now, from the
// counters the core reads without building stats (Topic.Counters).
func (s *Sampler) sample(now int64) {
	s.b.EachTopic(func(t broker.Topic) bool {
		if !t.Closed() {
			s.h.record(t.Name(), s.length, now, t.Counters())
		}
		return true
	})
	s.h.retainSampledAt(now)
}

// TopicHistory returns the sampled history of a loaded topic (or one
// partition), oldest first, covering at most the last HistoryLength
// intervals; nil when the topic is not loaded or not sampled yet.
func (s *Sampler) TopicHistory(topic string) []Sample {
	tn, err := broker.ParseTopicName(topic)
	if err != nil {
		return nil
	}
	return s.h.get(tn.String())
}

// HistoryInterval is the sampler's interval.
func (s *Sampler) HistoryInterval() time.Duration { return s.interval }
