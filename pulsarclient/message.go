package pulsarclient

import (
	"fmt"
	"math"
	"time"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// MessageID locates a message: ledger and entry of the entry holding it,
// its index in a batch (-1: not batched) and the partition (-1: not a
// partition). It is comparable.
type MessageID struct {
	Ledger     int64
	Entry      int64
	BatchIndex int32
	Partition  int32
	// BatchSize is the number of messages in the entry (0: unknown).
	BatchSize int32
}

// EarliestMessageID and LatestMessageID are the reader start positions.
func EarliestMessageID() MessageID {
	return MessageID{Ledger: -1, Entry: -1, BatchIndex: -1, Partition: -1}
}

func LatestMessageID() MessageID {
	return MessageID{Ledger: math.MaxInt64, Entry: math.MaxInt64, BatchIndex: -1, Partition: -1}
}

func (id MessageID) LedgerID() int64     { return id.Ledger }
func (id MessageID) EntryID() int64      { return id.Entry }
func (id MessageID) BatchIdx() int32     { return id.BatchIndex }
func (id MessageID) PartitionIdx() int32 { return id.Partition }

// String formats as pulsar-client-go does: ledger:entry:partition[:batch].
func (id MessageID) String() string {
	if id.BatchIndex >= 0 {
		return fmt.Sprintf("%d:%d:%d:%d", id.Ledger, id.Entry, id.Partition, id.BatchIndex)
	}
	return fmt.Sprintf("%d:%d:%d", id.Ledger, id.Entry, id.Partition)
}

func (id MessageID) data() *pb.MessageIdData {
	d := &pb.MessageIdData{LedgerId: ptr(uint64(id.Ledger)), EntryId: ptr(uint64(id.Entry))}
	if id.Partition >= 0 {
		d.Partition = ptr(id.Partition)
	}
	if id.BatchIndex >= 0 {
		d.BatchIndex = ptr(id.BatchIndex)
	}
	return d
}

func ptr[T any](v T) *T { return &v }

// ProducerMessage is one message to send.
type ProducerMessage struct {
	Payload []byte
	// Value is sent instead of Payload by a producer with a string schema
	// (it must then be a string).
	Value      any
	Key        string
	Properties map[string]string
	EventTime  time.Time
	// SequenceID, when set, is the message's sequence id (for broker
	// deduplication); otherwise the producer numbers messages itself.
	SequenceID *int64
}

// Message is one received message.
type Message struct {
	topic        string
	id           MessageID
	payload      []byte
	key          string
	hasKey       bool
	props        map[string]string
	publishTime  time.Time
	eventTime    time.Time
	producerName string
	redelivery   uint32
	sequenceID   int64

	owner    *partitionConsumer // nil for messages not from a consumer
	tracker  *batchTracker      // nil unless batched
	chunkIDs []MessageID        // every chunk's id for a chunked message
}

func (m *Message) Topic() string                 { return m.topic }
func (m *Message) ID() MessageID                 { return m.id }
func (m *Message) Payload() []byte               { return m.payload }
func (m *Message) Key() string                   { return m.key }
func (m *Message) HasKey() bool                  { return m.hasKey }
func (m *Message) Properties() map[string]string { return m.props }
func (m *Message) PublishTime() time.Time        { return m.publishTime }
func (m *Message) EventTime() time.Time          { return m.eventTime }
func (m *Message) ProducerName() string          { return m.producerName }
func (m *Message) RedeliveryCount() uint32       { return m.redelivery }
func (m *Message) SequenceID() int64             { return m.sequenceID }

// ConsumerMessage is what Consumer.Chan delivers.
type ConsumerMessage struct {
	Consumer *Consumer
	*Message
}

// SubscriptionType is the subscription's dispatch mode.
type SubscriptionType int

const (
	Exclusive SubscriptionType = iota
	Shared
	Failover
	KeyShared
)

func (t SubscriptionType) pb() pb.CommandSubscribe_SubType {
	switch t {
	case Shared:
		return pb.CommandSubscribe_Shared
	case Failover:
		return pb.CommandSubscribe_Failover
	case KeyShared:
		return pb.CommandSubscribe_Key_Shared
	}
	return pb.CommandSubscribe_Exclusive
}

// SubscriptionInitialPosition is where a new subscription starts.
type SubscriptionInitialPosition int

const (
	SubscriptionPositionLatest SubscriptionInitialPosition = iota
	SubscriptionPositionEarliest
)

// CompressionType is a payload codec.
type CompressionType int

const (
	NoCompression CompressionType = iota
	LZ4
	ZLib
	ZSTD
)

func (c CompressionType) pb() pb.CompressionType {
	switch c {
	case LZ4:
		return pb.CompressionType_LZ4
	case ZLib:
		return pb.CompressionType_ZLIB
	case ZSTD:
		return pb.CompressionType_ZSTD
	}
	return pb.CompressionType_NONE
}

// Schema is the value schema a producer registers. Only the string schema
// changes what is sent (ProducerMessage.Value as UTF-8 bytes).
type Schema struct {
	typ  pb.Schema_Type
	name string
}

// NewStringSchema returns Pulsar's STRING schema.
func NewStringSchema() *Schema { return &Schema{typ: pb.Schema_String, name: "String"} }

func (s *Schema) pb() *pb.Schema {
	return &pb.Schema{Name: ptr(s.name), Type: s.typ.Enum(), SchemaData: []byte{}}
}
