package broker

import (
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/internal/shrink"
)

// Defaults of the history sampler (Config.HistoryInterval and
// HistoryLength): a sample every 5 s, 15 minutes kept.
const (
	DefaultHistoryInterval = 5 * time.Second
	DefaultHistoryWindow   = 15 * time.Minute
	// MinHistoryInterval bounds the sampler's cost (one stats pass over
	// every loaded topic per interval); MaxHistoryLength its memory.
	MinHistoryInterval = time.Second
	MaxHistoryLength   = 900
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

// counters are what one tick reads of a topic.
type counters struct {
	msgIn, bytesIn, msgOut, bytesOut int64
	backlog, storage                 int64
}

// record adds the sample of one topic taken at now (Unix ms). The first
// call for a topic only primes the counters: a rate needs two readings.
func (h *history) record(name string, capacity int, now int64, c counters) {
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
			MsgRateIn:        rate(c.msgIn, r.lastMsgIn),
			MsgRateOut:       rate(c.msgOut, r.lastMsgOut),
			MsgThroughputIn:  rate(c.bytesIn, r.lastBytesIn),
			MsgThroughputOut: rate(c.bytesOut, r.lastBytesOut),
			MsgBacklog:       c.backlog,
			StorageSize:      c.storage,
		}, capacity)
	}
	r.primed = true
	r.lastAt = now
	r.lastMsgIn, r.lastBytesIn, r.lastMsgOut, r.lastBytesOut = c.msgIn, c.bytesIn, c.msgOut, c.bytesOut
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

// historyLoop samples every loaded topic each HistoryInterval until the
// broker closes (not at all with a negative interval).
func (b *Broker) historyLoop() {
	if b.cfg.HistoryInterval < 0 {
		b.wg.Done()
		return
	}
	b.every(b.cfg.HistoryInterval, func(now time.Time) { b.sampleHistory(now.UnixMilli()) })
}

// sampleHistory records one sample of every loaded topic at now.
func (b *Broker) sampleHistory(now int64) {
	for t := range b.everyLoaded("") {
		if t.isClosed() {
			continue
		}
		b.history.record(t.full, b.cfg.HistoryLength, now, t.historyCounters())
	}
	b.history.retainSampledAt(now)
}

// historyCounters reads what a sample needs: the counters, backlog and
// storage size that statsOpts reports, without building the stats
// (which allocate for every publisher, subscription and consumer: 1.6 to
// 2.5 KiB a topic on each tick, over every loaded topic;
// TestScaleTopicsMemory guards it).
func (t *topic) historyCounters() counters {
	c := counters{msgIn: t.msgIn.Load(), bytesIn: t.bytesIn.Load()}
	if t.persistent() {
		_, c.storage = t.ml.Size()
	}
	var buf [4]*subscription
	subs := buf[:0]
	t.mu.Lock()
	for _, s := range t.mu.subs {
		subs = append(subs, s)
	}
	t.mu.Unlock()
	if len(subs) == 0 {
		return c
	}
	// One closure for all the subscriptions (call hands it to the
	// subscription's loop when busy, so it lives on the heap); it runs
	// to completion or not at all before call returns.
	var sub *subscription
	read := func() {
		_, backlog := sub.cur.Backlog()
		c.backlog += backlog
		c.msgOut += sub.msgOut
		c.bytesOut += sub.bytesOut
	}
	for _, s := range subs {
		sub = s
		s.call(read)
	}
	return c
}

// TopicHistory returns the sampled history of a loaded topic (or one
// partition), oldest first, covering at most the last HistoryLength
// intervals; nil when the topic is not loaded or not sampled yet.
func (b *Broker) TopicHistory(topic string) []Sample {
	tn, err := parseTopicName(topic)
	if err != nil {
		return nil
	}
	return b.history.get(tn.String())
}

// HistoryInterval is the sampler's interval.
func (b *Broker) HistoryInterval() time.Duration { return b.cfg.HistoryInterval }

// LoadedTopicStats returns the stats of topic (or one partition) if this
// broker has it loaded; unlike TopicStats it never loads it.
func (b *Broker) LoadedTopicStats(topic string) (TopicStats, bool) {
	tn, err := parseTopicName(topic)
	if err != nil {
		return TopicStats{}, false
	}
	t := b.lookupTopic(tn.String())
	if t == nil || t.isClosed() {
		return TopicStats{}, false
	}
	return t.stats(), true
}
