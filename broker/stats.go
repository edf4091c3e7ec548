package broker

import (
	"strings"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/policy"
)

// RateMeter turns counters into per-second rates, measured between
// successive calls at least a second apart (cluster load reports; a
// feature's stats, such as replicators'). Safe for concurrent use.
type RateMeter struct {
	mu       sync.Mutex
	at       time.Time
	msgs     int64
	bytes    int64
	msgRate  float64
	byteRate float64
	primed   bool
}

// Update takes the counters' current values and returns the rates over
// the last interval of a second or more (0 at the first call).
func (r *RateMeter) Update(msgs, bytes int64) (msgRate, byteRate float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if !r.primed {
		r.at, r.msgs, r.bytes, r.primed = now, msgs, bytes, true
		return 0, 0
	}
	if dt := now.Sub(r.at).Seconds(); dt >= 1 {
		r.msgRate = float64(msgs-r.msgs) / dt
		r.byteRate = float64(bytes-r.bytes) / dt
		r.at, r.msgs, r.bytes = now, msgs, bytes
	}
	return r.msgRate, r.byteRate
}

// Stats as Pulsar computes them: counters are cumulative (messages in
// count only stored messages, see topic.countIn); rates are the counters'
// increase over the last fixed window divided by its length, recomputed
// for every loaded topic, producer, subscription and consumer by one
// timer every Config.StatsUpdateInterval (Pulsar's
// statsUpdateFrequencyInSecs). A stats call reads the last window's rates:
// every caller sees the same values until the next tick, and the first
// window of a new topic or client reads 0.

// Indexes of the counters a rateWindow follows.
const (
	winMsgs = iota
	winBytes
	winRedeliver
	winAcks
	winExpired
	winCount
)

// rateWindow holds the rates of the last window.
type rateWindow struct {
	mu    sync.Mutex
	at    time.Time
	last  [winCount]int64
	rates [winCount]float64
}

// roll closes the window at now with the counters' current values.
func (w *rateWindow) roll(now time.Time, counters ...int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.at.IsZero() {
		if dt := now.Sub(w.at).Seconds(); dt > 0 {
			for i, v := range counters {
				w.rates[i] = float64(v-w.last[i]) / dt
			}
		}
	}
	w.at = now
	copy(w.last[:], counters)
}

// get returns the last window's rates.
func (w *rateWindow) get() [winCount]float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rates
}

// statsLoop rolls the rate windows of every loaded topic until the
// broker closes.
func (b *Broker) statsLoop() {
	b.every(b.cfg.StatsUpdateInterval, func(now time.Time) {
		for t := range b.everyLoaded("") {
			t.rollStats(now)
			for _, h := range b.ext.tickers {
				h.TickTopic(Topic{t})
			}
		}
	})
}

// every calls fn with the tick time every d until the broker closes,
// then marks its goroutine done (b.wg). The broker's periodic loops run
// on it.
func (b *Broker) every(d time.Duration, fn func(now time.Time)) {
	defer b.wg.Done()
	tk := time.NewTicker(d)
	defer tk.Stop()
	for {
		select {
		case <-b.done:
			return
		case now := <-tk.C:
			fn(now)
		}
	}
}

// rollStats closes the rate windows of t, its producers, subscriptions
// and consumers.
func (t *topic) rollStats(now time.Time) {
	t.inWin.roll(now, t.msgIn.Load(), t.bytesIn.Load())
	t.mu.Lock()
	ps := make([]*producer, 0, len(t.mu.producers))
	for _, p := range t.mu.producers {
		ps = append(ps, p)
	}
	t.mu.Unlock()
	for _, p := range ps {
		p.win.roll(now, p.msgIn.Load(), p.bytesIn.Load())
	}
	for _, s := range *t.subList.Load() {
		s.call(func() { s.rollLocked(now) })
	}
}

// rollLocked closes the rate windows of s and its consumers.
func (s *subscription) rollLocked(now time.Time) {
	s.win.roll(now, s.msgOut, s.bytesOut, s.redeliverN, s.ackedN, s.expiredN.Load())
	for _, c := range s.consumers {
		c.win.roll(now, c.msgOut, c.bytesOut, c.redeliverN, c.ackedN)
	}
}

// ReplicatorStats is one remote cluster's entry in TopicStats.Replication,
// with Pulsar's field names.
type ReplicatorStats struct {
	MsgRateIn                 float64 `json:"msgRateIn"`
	MsgThroughputIn           float64 `json:"msgThroughputIn"`
	MsgRateOut                float64 `json:"msgRateOut"`
	MsgThroughputOut          float64 `json:"msgThroughputOut"`
	MsgRateExpired            float64 `json:"msgRateExpired"`
	ReplicationBacklog        int64   `json:"replicationBacklog"`
	Connected                 bool    `json:"connected"`
	ReplicationDelayInSeconds int64   `json:"replicationDelayInSeconds"`
	InboundConnection         string  `json:"inboundConnection"`
	InboundConnectedSince     string  `json:"inboundConnectedSince"`
	OutboundConnection        string  `json:"outboundConnection"`
	OutboundConnectedSince    string  `json:"outboundConnectedSince"`
	MsgInCount                int64   `json:"msgInCount"`
	BytesInCount              int64   `json:"bytesInCount"`
	MsgOutCount               int64   `json:"msgOutCount"`
	BytesOutCount             int64   `json:"bytesOutCount"`
	MsgExpiredCount           int64   `json:"msgExpiredCount"`
}

// CompactionStats is the compaction part of TopicStats.
type CompactionStats struct {
	LastCompactionRemovedEventCount   int64 `json:"lastCompactionRemovedEventCount"`
	LastCompactionSucceedTimestamp    int64 `json:"lastCompactionSucceedTimestamp"`
	LastCompactionFailedTimestamp     int64 `json:"lastCompactionFailedTimestamp"`
	LastCompactionDurationTimeInMills int64 `json:"lastCompactionDurationTimeInMills"`
}

// TopicStats is Pulsar's TopicStats JSON shape. Counters are JSON
// integers, rates floats. Fields of features Magnetar does not have
// (offload, transactions) are present with their idle values.
type TopicStats struct {
	MsgRateIn                                        float64                      `json:"msgRateIn"`
	MsgThroughputIn                                  float64                      `json:"msgThroughputIn"`
	MsgRateOut                                       float64                      `json:"msgRateOut"`
	MsgThroughputOut                                 float64                      `json:"msgThroughputOut"`
	MsgInCounter                                     int64                        `json:"msgInCounter"`
	BytesInCounter                                   int64                        `json:"bytesInCounter"`
	MsgOutCounter                                    int64                        `json:"msgOutCounter"`
	BytesOutCounter                                  int64                        `json:"bytesOutCounter"`
	AverageMsgSize                                   float64                      `json:"averageMsgSize"`
	MsgChunkPublished                                bool                         `json:"msgChunkPublished"`
	StorageSize                                      int64                        `json:"storageSize"`
	BacklogSize                                      int64                        `json:"backlogSize"`
	MsgBacklog                                       int64                        `json:"msgBacklog"`
	BacklogQuotaLimitSize                            int64                        `json:"backlogQuotaLimitSize"`
	BacklogQuotaLimitTime                            int64                        `json:"backlogQuotaLimitTime"`
	OldestBacklogMessageAgeSeconds                   int64                        `json:"oldestBacklogMessageAgeSeconds"`
	OldestBacklogMessageSubscriptionName             string                       `json:"oldestBacklogMessageSubscriptionName,omitempty"`
	PublishRateLimitedTimes                          int64                        `json:"publishRateLimitedTimes"`
	EarliestMsgPublishTimeInBacklogs                 int64                        `json:"earliestMsgPublishTimeInBacklogs"`
	OffloadedStorageSize                             int64                        `json:"offloadedStorageSize"`
	LastOffloadLedgerID                              int64                        `json:"lastOffloadLedgerId"`
	LastOffloadSuccessTimeStamp                      int64                        `json:"lastOffloadSuccessTimeStamp"`
	LastOffloadFailureTimeStamp                      int64                        `json:"lastOffloadFailureTimeStamp"`
	OngoingTxnCount                                  int64                        `json:"ongoingTxnCount"`
	AbortedTxnCount                                  int64                        `json:"abortedTxnCount"`
	CommittedTxnCount                                int64                        `json:"committedTxnCount"`
	Publishers                                       []PublisherStats             `json:"publishers"`
	WaitingPublishers                                int                          `json:"waitingPublishers"`
	Subscriptions                                    map[string]SubscriptionStats `json:"subscriptions"`
	Replication                                      map[string]ReplicatorStats   `json:"replication"`
	DeduplicationStatus                              string                       `json:"deduplicationStatus"`
	NonContiguousDeletedMessagesRanges               int                          `json:"nonContiguousDeletedMessagesRanges"`
	NonContiguousDeletedMessagesRangesSerializedSize int                          `json:"nonContiguousDeletedMessagesRangesSerializedSize"`
	DelayedMessageIndexSizeInBytes                   int64                        `json:"delayedMessageIndexSizeInBytes"`
	Compaction                                       CompactionStats              `json:"compaction"`
	OwnerBroker                                      string                       `json:"ownerBroker"`
	// TopicCreationTimeStamp is when the topic was created (unix ms;
	// a non-persistent topic: loaded), LastPublishTimeStamp when a
	// message was last stored (0: never), as Pulsar's (PIP-431).
	TopicCreationTimeStamp int64 `json:"topicCreationTimeStamp"`
	LastPublishTimeStamp   int64 `json:"lastPublishTimeStamp"`
}

// stats collects the topic's TopicStats.
func (t *topic) stats() TopicStats { return t.statsOpts(true) }

// statsOpts collects the topic's TopicStats; earliest reads the first
// unacknowledged entry of every subscription with a backlog for
// earliestMsgPublishTimeInBacklog(s) (a storage read each: /metrics
// scrapes skip it).
func (t *topic) statsOpts(earliest bool) TopicStats {
	msgs, bytes := t.msgIn.Load(), t.bytesIn.Load()
	in := t.inWin.get()
	pol := t.pol.Load()
	st := TopicStats{
		MsgRateIn:               in[winMsgs],
		MsgThroughputIn:         in[winBytes],
		MsgInCounter:            msgs,
		BytesInCounter:          bytes,
		Publishers:              []PublisherStats{},
		Subscriptions:           map[string]SubscriptionStats{},
		Replication:             map[string]ReplicatorStats{},
		DeduplicationStatus:     "Disabled",
		PublishRateLimitedTimes: t.limits.publishLimited.Load(),
		BacklogQuotaLimitSize:   -1,
		BacklogQuotaLimitTime:   -1,
		LastOffloadLedgerID:     -1,
		OwnerBroker:             strings.TrimPrefix(t.b.net.webURL(), "http://"),
	}
	if q, ok := pol.BacklogQuotas[policy.QuotaStorage]; ok {
		st.BacklogQuotaLimitSize = q.LimitSize
	}
	if q, ok := pol.BacklogQuotas[policy.QuotaMessageAge]; ok {
		st.BacklogQuotaLimitTime = q.LimitTime
	}
	if t.dedupEnabled() {
		st.DeduplicationStatus = "Enabled"
	}
	st.TopicCreationTimeStamp = t.created
	if !t.persistent() {
		st.TopicCreationTimeStamp = t.loadedAt.UnixMilli()
	}
	if earliest {
		recoverLastPublish(t)
	}
	st.LastPublishTimeStamp = t.lastPublish.Load()
	if msgs > 0 {
		st.AverageMsgSize = float64(bytes) / float64(msgs)
	}
	var entries int64
	if t.persistent() {
		entries, st.StorageSize = t.ml.Size()
		if _, ok := t.ml.(offloadable); ok {
			ms := t.ml.Stats()
			st.OffloadedStorageSize = ms.OffloadedSize
			st.LastOffloadLedgerID = ms.Offload.LastOffloadLedgerID
			st.LastOffloadSuccessTimeStamp = ms.Offload.LastOffloadSuccessMillis
			st.LastOffloadFailureTimeStamp = ms.Offload.LastOffloadFailureMillis
		}
	}
	t.mu.Lock()
	st.WaitingPublishers = len(t.mu.waiting)
	for _, p := range t.mu.producers {
		md := p.metadata
		if md == nil {
			md = map[string]string{}
		}
		pm, pb := p.msgIn.Load(), p.bytesIn.Load()
		r := p.win.get()
		ps := PublisherStats{
			ProducerID:      p.id,
			ProducerName:    p.name,
			AccessMode:      accessModeName(p.accessMode),
			MsgRateIn:       r[winMsgs],
			MsgThroughputIn: r[winBytes],
			MsgInCounter:    pm,
			BytesInCounter:  pb,
			Address:         p.address,
			ConnectedSince:  p.connectedSince.UTC().Format(time.RFC3339Nano),
			ClientVersion:   p.clientVersion,
			Metadata:        md,
		}
		if pm > 0 {
			ps.AverageMsgSize = float64(pb) / float64(pm)
		}
		st.Publishers = append(st.Publishers, ps)
	}
	subs := make([]*subscription, 0, len(t.mu.subs))
	for _, s := range t.mu.subs {
		subs = append(subs, s)
	}
	t.mu.Unlock()
	for _, h := range t.b.ext.topicStats {
		h.AddTopicStats(Topic{t}, &st)
	}
	now := time.Now().UnixMilli()
	for _, s := range subs {
		var ss SubscriptionStats
		if !s.call(func() { ss = s.statsLocked() }) {
			continue
		}
		if entries > 0 {
			// Approximate: average entry size times backlog entries.
			ss.BacklogSize = st.StorageSize / entries * ss.backlogEntries
		}
		if earliest && ss.MsgBacklog > 0 {
			if pt := earliestInBacklog(t, s); pt > 0 {
				ss.EarliestMsgPublishTimeInBacklog = pt
				if st.EarliestMsgPublishTimeInBacklogs == 0 || pt < st.EarliestMsgPublishTimeInBacklogs {
					st.EarliestMsgPublishTimeInBacklogs = pt
					st.OldestBacklogMessageSubscriptionName = s.name
					st.OldestBacklogMessageAgeSeconds = max(now-pt, 0) / 1000
				}
			}
		}
		st.MsgRateOut += ss.MsgRateOut
		st.MsgThroughputOut += ss.MsgThroughputOut
		st.MsgOutCounter += ss.MsgOutCounter
		st.BytesOutCounter += ss.BytesOutCounter
		st.BacklogSize = max(st.BacklogSize, ss.BacklogSize)
		st.MsgBacklog += ss.MsgBacklog
		st.Subscriptions[s.name] = ss
	}
	return st
}

// earliestInBacklog returns the publish time (unix ms) of the first
// unacknowledged message of s, 0 when unknown.
func earliestInBacklog(t *topic, s *subscription) int64 {
	ca, ok := s.cur.(*cursorAdapter)
	if !ok || !t.persistent() {
		return 0
	}
	next, ok := nextPosition(ca.ml.Stats().Ledgers, ca.c.MarkDeletePosition())
	if !ok {
		return 0
	}
	data, err := t.ml.ReadEntry(toPos(next))
	if err != nil {
		return 0
	}
	pt, err := entryPublishTime(data)
	if err != nil {
		return 0
	}
	return pt
}

// recoverLastPublish sets lastPublish, once per load, to the publish time
// of the topic's last entry when nothing was stored since the load (a
// storage read: the admin API's stats only).
func recoverLastPublish(t *topic) {
	if !t.persistent() || t.lastPublish.Load() != 0 || t.pubRecovered.Swap(true) {
		return
	}
	pos, ok := t.ml.LastConfirmed()
	if !ok {
		return
	}
	data, err := t.ml.ReadEntry(pos)
	if err != nil {
		t.pubRecovered.Store(false) // try again on the next stats
		return
	}
	if pt, err := entryPublishTime(data); err == nil && pt > 0 {
		t.lastPublish.CompareAndSwap(0, pt)
	}
}
