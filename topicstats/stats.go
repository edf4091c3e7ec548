package topicstats

import (
	"time"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/snap"
	"github.com/magnetar-mq/magnetar/policy"
)

// TopicStats is Pulsar's TopicStats JSON shape. Counters are JSON
// integers, rates floats. Fields of features Magnetar does not have
// (transactions' counts) are present with their idle values.
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

// PublisherStats is one producer's part of TopicStats.
type PublisherStats struct {
	ProducerID              uint64            `json:"producerId"`
	ProducerName            string            `json:"producerName"`
	AccessMode              string            `json:"accessMode"`
	ChunkedMessageRate      float64           `json:"chunkedMessageRate"`
	SupportsPartialProducer bool              `json:"supportsPartialProducer"`
	MsgRateIn               float64           `json:"msgRateIn"`
	MsgThroughputIn         float64           `json:"msgThroughputIn"`
	AverageMsgSize          float64           `json:"averageMsgSize"`
	MsgInCounter            int64             `json:"msgInCounter"`
	BytesInCounter          int64             `json:"bytesInCounter"`
	Address                 string            `json:"address"`
	ConnectedSince          string            `json:"connectedSince"`
	ClientVersion           string            `json:"clientVersion"`
	Metadata                map[string]string `json:"metadata"`
}

// SubscriptionStats is one subscription's part of TopicStats.
type SubscriptionStats struct {
	MsgRateOut          float64 `json:"msgRateOut"`
	MsgThroughputOut    float64 `json:"msgThroughputOut"`
	MsgRateRedeliver    float64 `json:"msgRateRedeliver"`
	MsgBacklog          int64   `json:"msgBacklog"`
	BacklogSize         int64   `json:"backlogSize"`
	MsgBacklogNoDelayed int64   `json:"msgBacklogNoDelayed"`
	UnackedMessages     int64   `json:"unackedMessages"`
	// BlockedSubscriptionOnUnackedMsgs: dispatch stopped at
	// maxUnackedMessagesPerSubscription.
	BlockedSubscriptionOnUnackedMsgs bool            `json:"blockedSubscriptionOnUnackedMsgs"`
	MsgDelayed                       int64           `json:"msgDelayed"`
	IsDurable                        bool            `json:"isDurable"`
	IsReplicated                     bool            `json:"isReplicated"`
	Type                             string          `json:"type"`
	ActiveConsumerName               string          `json:"activeConsumerName,omitempty"`
	MsgOutCounter                    int64           `json:"msgOutCounter"`
	BytesOutCounter                  int64           `json:"bytesOutCounter"`
	LastAckedTimestamp               int64           `json:"lastAckedTimestamp"`
	LastConsumedTimestamp            int64           `json:"lastConsumedTimestamp"`
	Consumers                        []ConsumerStats `json:"consumers"`

	MessageAckRate                                   float64           `json:"messageAckRate"`
	ChunkedMessageRate                               float64           `json:"chunkedMessageRate"`
	EarliestMsgPublishTimeInBacklog                  int64             `json:"earliestMsgPublishTimeInBacklog"`
	MsgRateExpired                                   float64           `json:"msgRateExpired"`
	TotalMsgExpired                                  int64             `json:"totalMsgExpired"`
	LastExpireTimestamp                              int64             `json:"lastExpireTimestamp"`
	LastConsumedFlowTimestamp                        int64             `json:"lastConsumedFlowTimestamp"`
	LastMarkDeleteAdvancedTimestamp                  int64             `json:"lastMarkDeleteAdvancedTimestamp"`
	AllowOutOfOrderDelivery                          bool              `json:"allowOutOfOrderDelivery"`
	KeySharedMode                                    string            `json:"keySharedMode,omitempty"`
	ConsumersAfterMarkDeletePosition                 map[string]string `json:"consumersAfterMarkDeletePosition"`
	NonContiguousDeletedMessagesRanges               int               `json:"nonContiguousDeletedMessagesRanges"`
	NonContiguousDeletedMessagesRangesSerializedSize int               `json:"nonContiguousDeletedMessagesRangesSerializedSize"`
	DelayedMessageIndexSizeInBytes                   int64             `json:"delayedMessageIndexSizeInBytes"`
	SubscriptionProperties                           map[string]string `json:"subscriptionProperties"`
	IsReplicatedSubscription                         bool              `json:"replicated"`
}

// ConsumerStats is one consumer's part of SubscriptionStats.
type ConsumerStats struct {
	ConsumerName     string            `json:"consumerName"`
	AvailablePermits int64             `json:"availablePermits"`
	UnackedMessages  int64             `json:"unackedMessages"`
	MsgRateOut       float64           `json:"msgRateOut"`
	MsgThroughputOut float64           `json:"msgThroughputOut"`
	MsgOutCounter    int64             `json:"msgOutCounter"`
	BytesOutCounter  int64             `json:"bytesOutCounter"`
	Address          string            `json:"address"`
	ConnectedSince   string            `json:"connectedSince"`
	ClientVersion    string            `json:"clientVersion"`
	Metadata         map[string]string `json:"metadata"`

	MsgRateRedeliver             float64  `json:"msgRateRedeliver"`
	MessageAckRate               float64  `json:"messageAckRate"`
	ChunkedMessageRate           float64  `json:"chunkedMessageRate"`
	AvgMessagesPerEntry          int      `json:"avgMessagesPerEntry"`
	BlockedConsumerOnUnackedMsgs bool     `json:"blockedConsumerOnUnackedMsgs"`
	ReadPositionWhenJoining      string   `json:"readPositionWhenJoining,omitempty"`
	LastAckedTimestamp           int64    `json:"lastAckedTimestamp"`
	LastConsumedTimestamp        int64    `json:"lastConsumedTimestamp"`
	LastConsumedFlowTimestamp    int64    `json:"lastConsumedFlowTimestamp"`
	KeyHashRanges                []string `json:"keyHashRanges,omitempty"`
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

// Source adds a feature's part to a topic's stats (geo-replication's
// Replication, deduplication's recovering status), on the caller's
// goroutine, after the publishers and before the subscriptions are
// filled in; no lock held. A broker feature (broker.Broker.Use) that
// implements it is asked.
type Source interface {
	AddTopicStats(t broker.Topic, st *TopicStats)
}

// Reader builds the stats of a broker's topics, asking its features that
// are Sources and InternalSources. The zero Reader asks none.
type Reader struct {
	sources  []Source
	internal []InternalSource
}

// For returns the Reader of b's topics (b's features are fixed once it
// started; For before Start misses those registered later).
func For(b *broker.Broker) Reader {
	var r Reader
	for _, f := range b.Features() {
		if s, ok := f.(Source); ok {
			r.sources = append(r.sources, s)
		}
		if s, ok := f.(InternalSource); ok {
			r.internal = append(r.internal, s)
		}
	}
	return r
}

// Full returns the topic's stats as the admin API reports them: with
// the storage reads of broker.Topic.Snapshot (earliest message in each
// backlog, last publish time after a reload).
func (r Reader) Full(t broker.Topic) TopicStats { return r.Of(t, t.Snapshot(true)) }

// Light returns the topic's stats without storage reads: what a metrics
// scrape reads.
func (r Reader) Light(t broker.Topic) TopicStats { return r.Of(t, t.Snapshot(false)) }

// Of builds Pulsar's TopicStats of t from its snapshot sn.
func (r Reader) Of(t broker.Topic, sn snap.Topic) TopicStats {
	st := TopicStats{
		MsgRateIn: sn.MsgRateIn, MsgThroughputIn: sn.MsgThroughputIn,
		MsgInCounter: sn.MsgInCounter, BytesInCounter: sn.BytesInCounter,
		Publishers:              make([]PublisherStats, 0, len(sn.Publishers)),
		Subscriptions:           make(map[string]SubscriptionStats, len(sn.Subscriptions)),
		Replication:             map[string]ReplicatorStats{},
		DeduplicationStatus:     "Disabled",
		PublishRateLimitedTimes: sn.PublishRateLimitedTimes,
		BacklogQuotaLimitSize:   -1,
		BacklogQuotaLimitTime:   -1,
		LastOffloadLedgerID:     -1,
		OwnerBroker:             sn.OwnerBroker,
		TopicCreationTimeStamp:  sn.Created,
		LastPublishTimeStamp:    sn.LastPublish,
		StorageSize:             sn.StorageSize,
		WaitingPublishers:       sn.WaitingPublishers,
	}
	if pol := t.EffectivePolicy(); pol != nil {
		if q, ok := pol.BacklogQuotas[policy.QuotaStorage]; ok {
			st.BacklogQuotaLimitSize = q.LimitSize
		}
		if q, ok := pol.BacklogQuotas[policy.QuotaMessageAge]; ok {
			st.BacklogQuotaLimitTime = q.LimitTime
		}
	}
	if sn.Deduplicating {
		st.DeduplicationStatus = "Enabled"
	}
	if sn.MsgInCounter > 0 {
		st.AverageMsgSize = float64(sn.BytesInCounter) / float64(sn.MsgInCounter)
	}
	if o := sn.Offload; o != nil {
		st.OffloadedStorageSize, st.LastOffloadLedgerID = o.OffloadedSize, o.LastLedgerID
		st.LastOffloadSuccessTimeStamp, st.LastOffloadFailureTimeStamp = o.LastSuccess, o.LastFailure
	}
	for _, p := range sn.Publishers {
		ps := PublisherStats{
			ProducerID: p.ProducerID, ProducerName: p.ProducerName, AccessMode: p.AccessMode,
			MsgRateIn: p.MsgRateIn, MsgThroughputIn: p.MsgThroughputIn,
			MsgInCounter: p.MsgInCounter, BytesInCounter: p.BytesInCounter,
			Address: p.Address, ConnectedSince: since(p.ConnectedSince),
			ClientVersion: p.ClientVersion, Metadata: orEmpty(p.Metadata),
		}
		if p.MsgInCounter > 0 {
			ps.AverageMsgSize = float64(p.BytesInCounter) / float64(p.MsgInCounter)
		}
		st.Publishers = append(st.Publishers, ps)
	}
	for _, s := range r.sources {
		s.AddTopicStats(t, &st)
	}
	now := time.Now().UnixMilli()
	for name, s := range sn.Subscriptions {
		ss := subscriptionStats(s)
		if sn.StorageEntries > 0 {
			// Approximate: average entry size times backlog entries.
			ss.BacklogSize = sn.StorageSize / sn.StorageEntries * s.BacklogEntries
		}
		if pt := s.EarliestPublish; pt > 0 {
			ss.EarliestMsgPublishTimeInBacklog = pt
			if st.EarliestMsgPublishTimeInBacklogs == 0 || pt < st.EarliestMsgPublishTimeInBacklogs {
				st.EarliestMsgPublishTimeInBacklogs = pt
				st.OldestBacklogMessageSubscriptionName = name
				st.OldestBacklogMessageAgeSeconds = max(now-pt, 0) / 1000
			}
		}
		st.MsgRateOut += ss.MsgRateOut
		st.MsgThroughputOut += ss.MsgThroughputOut
		st.MsgOutCounter += ss.MsgOutCounter
		st.BytesOutCounter += ss.BytesOutCounter
		st.BacklogSize = max(st.BacklogSize, ss.BacklogSize)
		st.MsgBacklog += ss.MsgBacklog
		st.Subscriptions[name] = ss
	}
	return st
}

// subscriptionStats is Pulsar's SubscriptionStats of s (BacklogSize and
// EarliestMsgPublishTimeInBacklog apart, which need the topic's).
func subscriptionStats(s snap.Subscription) SubscriptionStats {
	ss := SubscriptionStats{
		MsgBacklog: s.MsgBacklog, MsgBacklogNoDelayed: s.MsgBacklog,
		UnackedMessages:                  s.UnackedMessages,
		BlockedSubscriptionOnUnackedMsgs: s.BlockedSubscriptionOnUnackedMsgs,
		MsgDelayed:                       s.MsgDelayed,
		IsDurable:                        s.IsDurable, IsReplicated: s.IsReplicated,
		Type:               s.Type,
		ActiveConsumerName: s.ActiveConsumerName,
		MsgOutCounter:      s.MsgOutCounter, BytesOutCounter: s.BytesOutCounter,
		MsgRateOut: s.MsgRateOut, MsgThroughputOut: s.MsgThroughputOut,
		MsgRateRedeliver: s.MsgRateRedeliver, MessageAckRate: s.MessageAckRate, MsgRateExpired: s.MsgRateExpired,
		LastAckedTimestamp: s.LastAck, LastConsumedTimestamp: s.LastConsumed,
		TotalMsgExpired: s.TotalMsgExpired, LastExpireTimestamp: s.LastExpire,
		LastConsumedFlowTimestamp:        s.LastFlow,
		LastMarkDeleteAdvancedTimestamp:  s.LastAck,
		KeySharedMode:                    s.KeySharedMode,
		ConsumersAfterMarkDeletePosition: map[string]string{},
		SubscriptionProperties:           map[string]string{},
		Consumers:                        make([]ConsumerStats, 0, len(s.Consumers)),
	}
	for _, c := range s.Consumers {
		ss.Consumers = append(ss.Consumers, ConsumerStats{
			ConsumerName: c.ConsumerName, AvailablePermits: c.AvailablePermits, UnackedMessages: c.UnackedMessages,
			MsgRateOut: c.MsgRateOut, MsgThroughputOut: c.MsgThroughputOut,
			MsgOutCounter: c.MsgOutCounter, BytesOutCounter: c.BytesOutCounter,
			Address: c.Address, ConnectedSince: since(c.ConnectedSince),
			ClientVersion: c.ClientVersion, Metadata: orEmpty(c.Metadata),
			MsgRateRedeliver: c.MsgRateRedeliver, MessageAckRate: c.MessageAckRate,
			AvgMessagesPerEntry:          c.AvgMessagesPerEntry,
			BlockedConsumerOnUnackedMsgs: c.BlockedConsumerOnUnackedMsgs,
			ReadPositionWhenJoining:      c.ReadPositionWhenJoining,
			LastAckedTimestamp:           c.LastAck, LastConsumedTimestamp: c.LastConsumed,
			LastConsumedFlowTimestamp: c.LastFlow,
			KeyHashRanges:             c.KeyHashRanges,
		})
	}
	return ss
}

// since formats a connection time as Pulsar does.
func since(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// orEmpty is m, or an empty map (JSON {}, not null).
func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
