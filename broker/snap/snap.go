package snap

import "time"

// Topic is one loaded topic's state and counters.
type Topic struct {
	MsgInCounter, BytesInCounter int64
	MsgRateIn, MsgThroughputIn   float64
	PublishRateLimitedTimes      int64
	// Deduplicating: broker-wide or by policy.
	Deduplicating bool
	// OwnerBroker is the serving broker's id (web host:port).
	OwnerBroker string
	// Created is when the topic was created (unix ms; a non-persistent
	// topic: loaded); LastPublish when a message was last stored (0:
	// never or not known).
	Created, LastPublish int64
	// StorageEntries and StorageSize are the retained entries and bytes
	// (persistent topics).
	StorageEntries, StorageSize int64
	// Offload holds the offload figures of storage that offloads (nil:
	// it does not).
	Offload           *Offload
	WaitingPublishers int
	Publishers        []Publisher
	Subscriptions     map[string]Subscription
}

// Offload is the offload part of a Topic.
type Offload struct {
	OffloadedSize, LastLedgerID int64
	// LastSuccess and LastFailure are unix ms (0: never).
	LastSuccess, LastFailure int64
}

// Client is what a producer or consumer told of itself when it came.
type Client struct {
	Address        string
	ConnectedSince time.Time
	ClientVersion  string
	Metadata       map[string]string // nil: none
}

// Publisher is one producer's part of a Topic.
type Publisher struct {
	ProducerID                   uint64
	ProducerName, AccessMode     string
	MsgInCounter, BytesInCounter int64
	MsgRateIn, MsgThroughputIn   float64
	Client
}

// Subscription is one subscription's part of a Topic,
// taken on its loop.
type Subscription struct {
	// Type is the subscription type as Pulsar names it (Exclusive,
	// Shared, Failover, Key_Shared).
	Type                       string
	IsDurable, IsReplicated    bool
	BacklogEntries, MsgBacklog int64
	UnackedMessages            int64 // its consumers' sum
	MsgDelayed                 int64
	// BlockedSubscriptionOnUnackedMsgs: dispatch stopped at
	// maxUnackedMessagesPerSubscription.
	BlockedSubscriptionOnUnackedMsgs bool
	// KeySharedMode is STICKY or AUTO_SPLIT for a Key_Shared
	// subscription ("" otherwise).
	KeySharedMode                                    string
	ActiveConsumerName                               string
	MsgOutCounter, BytesOutCounter                   int64
	MsgRateOut, MsgThroughputOut                     float64
	MsgRateRedeliver, MessageAckRate, MsgRateExpired float64
	TotalMsgExpired                                  int64
	// Unix ms of the last expiry, ack, delivery and FLOW (0: none).
	LastExpire, LastAck, LastConsumed, LastFlow int64
	// EarliestPublish is the publish time (unix ms) of the first
	// unacknowledged message (storage reads only; 0: not known).
	EarliestPublish int64
	Consumers       []Consumer
}

// Consumer is one consumer's part of a Subscription.
type Consumer struct {
	ConsumerName                      string
	AvailablePermits, UnackedMessages int64
	BlockedConsumerOnUnackedMsgs      bool
	MsgOutCounter, BytesOutCounter    int64
	MsgRateOut, MsgThroughputOut      float64
	MsgRateRedeliver, MessageAckRate  float64
	AvgMessagesPerEntry               int
	// Unix ms of the last ack, delivery and FLOW (0: none).
	LastAck, LastConsumed, LastFlow int64
	// ReadPositionWhenJoining ("" unless it recently joined a
	// Key_Shared subscription) and KeyHashRanges (Key_Shared).
	ReadPositionWhenJoining string
	KeyHashRanges           []string
	Client
}

// Counters are a topic's cumulative counters, the sum of its
// subscriptions' backlogs (messages) and its stored bytes: what the
// history sampler (package topichistory) reads on every tick
// (broker.Topic.Counters).
type Counters struct {
	MsgIn, BytesIn, MsgOut, BytesOut int64
	Backlog, Storage                 int64
}
