package broker

import (
	"sync"
	"time"
)

// rateTracker turns counters into per-second rates, measured between
// successive stats calls at least a second apart.
type rateTracker struct {
	mu       sync.Mutex
	at       time.Time
	msgs     int64
	bytes    int64
	msgRate  float64
	byteRate float64
	primed   bool
}

func (r *rateTracker) update(msgs, bytes int64) (msgRate, byteRate float64) {
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

// TopicStats is Pulsar's TopicStats JSON shape (the subset Magnetar
// fills). Counters are JSON integers, rates floats.
type TopicStats struct {
	MsgRateIn        float64 `json:"msgRateIn"`
	MsgThroughputIn  float64 `json:"msgThroughputIn"`
	MsgRateOut       float64 `json:"msgRateOut"`
	MsgThroughputOut float64 `json:"msgThroughputOut"`
	MsgInCounter     int64   `json:"msgInCounter"`
	BytesInCounter   int64   `json:"bytesInCounter"`
	MsgOutCounter    int64   `json:"msgOutCounter"`
	BytesOutCounter  int64   `json:"bytesOutCounter"`
	AverageMsgSize   float64 `json:"averageMsgSize"`
	StorageSize      int64   `json:"storageSize"`
	// OffloadedStorageSize is the part of StorageSize in completed
	// offloads; the Last* fields are unix ms (0: never).
	OffloadedStorageSize        int64                        `json:"offloadedStorageSize"`
	LastOffloadLedgerID         int64                        `json:"lastOffloadLedgerId"`
	LastOffloadSuccessTimeStamp int64                        `json:"lastOffloadSuccessTimeStamp"`
	LastOffloadFailureTimeStamp int64                        `json:"lastOffloadFailureTimeStamp"`
	BacklogSize                 int64                        `json:"backlogSize"`
	MsgBacklog                  int64                        `json:"msgBacklog"`
	Publishers                  []PublisherStats             `json:"publishers"`
	Subscriptions               map[string]SubscriptionStats `json:"subscriptions"`
	Replication                 map[string]any               `json:"replication"`
	DeduplicationStatus         string                       `json:"deduplicationStatus"`
}

// stats collects the topic's TopicStats.
func (t *topic) stats() TopicStats {
	msgs, bytes := t.msgIn.Load(), t.bytesIn.Load()
	rate, tput := t.rates.update(msgs, bytes)
	st := TopicStats{
		MsgRateIn:           rate,
		MsgThroughputIn:     tput,
		MsgInCounter:        msgs,
		BytesInCounter:      bytes,
		Publishers:          []PublisherStats{},
		Subscriptions:       map[string]SubscriptionStats{},
		Replication:         map[string]any{},
		DeduplicationStatus: "Disabled",
	}
	if t.dedupEnabled() {
		st.DeduplicationStatus = "Enabled"
	}
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
	for _, p := range t.mu.producers {
		md := p.metadata
		if md == nil {
			md = map[string]string{}
		}
		pm, pb := p.msgIn.Load(), p.bytesIn.Load()
		ps := PublisherStats{
			ProducerID:     p.id,
			ProducerName:   p.name,
			AccessMode:     accessModeName(p.accessMode),
			MsgInCounter:   pm,
			BytesInCounter: pb,
			Address:        p.address,
			ConnectedSince: p.connectedSince.UTC().Format(time.RFC3339Nano),
			ClientVersion:  p.clientVersion,
			Metadata:       md,
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
	for _, s := range subs {
		var ss SubscriptionStats
		if !s.call(func() { ss = s.statsLocked() }) {
			continue
		}
		if entries > 0 {
			// Approximate: average entry size times backlog entries.
			ss.BacklogSize = st.StorageSize / entries * ss.backlogEntries
		}
		ss.MsgRateOut, ss.MsgThroughputOut = s.rates.update(ss.MsgOutCounter, ss.BytesOutCounter)
		ss.MsgRateRedeliver = 0
		for i := range ss.Consumers {
			if len(ss.Consumers) == 1 {
				ss.Consumers[i].MsgRateOut, ss.Consumers[i].MsgThroughputOut = ss.MsgRateOut, ss.MsgThroughputOut
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
