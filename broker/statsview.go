package broker

// The read-only views the stats, metrics and history packages
// (topicstats, brokermetrics, topichistory) have of the core: they read
// what the core counts, never change it.

// Stats returns the topic's stats without the storage reads the admin
// API's stats make (earliest message in each backlog, last publish time
// after a reload): what a metrics scrape reads.
func (v Topic) Stats() TopicStats { return v.t.statsOpts(false) }

// ConnBytesIn returns the bytes read from client connections (binary
// protocol) since the broker started.
func (b *Broker) ConnBytesIn() int64 { return b.connBytesIn.Load() }

// TopicCounters are a topic's cumulative counters, the sum of its
// subscriptions' backlogs (messages) and its stored bytes: what the
// history sampler (package topichistory) reads on every tick.
type TopicCounters struct {
	MsgIn, BytesIn, MsgOut, BytesOut int64
	Backlog, Storage                 int64
}

// Counters reads the topic's counters without building its stats.
func (v Topic) Counters() TopicCounters { return v.t.counters() }

// counters reads what a history sample needs: the counters, backlog and
// storage size that statsOpts reports, without building the stats
// (which allocate for every publisher, subscription and consumer: 1.6 to
// 2.5 KiB a topic on each tick, over every loaded topic;
// TestScaleTopicsMemory guards it).
func (t *topic) counters() TopicCounters {
	c := TopicCounters{MsgIn: t.msgIn.Load(), BytesIn: t.bytesIn.Load()}
	if t.persistent() {
		_, c.Storage = t.ml.Size()
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
		c.Backlog += backlog
		c.MsgOut += sub.msgOut
		c.BytesOut += sub.bytesOut
	}
	for _, s := range subs {
		sub = s
		s.call(read)
	}
	return c
}

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
