package dispatch

import (
	"time"

	"github.com/magnetar-mq/magnetar/broker/selector"
	"github.com/magnetar-mq/magnetar/broker/storage"
)

// Type is a subscription type, with Pulsar's wire values.
type Type int32

const (
	Exclusive Type = 0
	Shared    Type = 1
	Failover  Type = 2
	KeyShared Type = 3
)

func (t Type) String() string {
	switch t {
	case Exclusive:
		return "Exclusive"
	case Shared:
		return "Shared"
	case Failover:
		return "Failover"
	case KeyShared:
		return "Key_Shared"
	}
	return "Unknown"
}

// Sink is where a consumer's outbound frames go: the connection
// in production, a recorder in tests. Implementations must not block and
// must not call back into the subscription.
type Sink interface {
	// SendMessage queues one MESSAGE frame carrying a stored entry.
	SendMessage(consumerID uint64, pos position, redeliveries uint32, ackSet []int64, data []byte)
	// SendActiveChange queues ACTIVE_CONSUMER_CHANGE.
	SendActiveChange(consumerID uint64, active bool)
	// Writable reports whether the connection can take more messages now;
	// when it later drains it wakes the consumer's subscription (Wake).
	Writable() bool
	// CloseConsumer queues a broker-initiated CLOSE_CONSUMER and forgets
	// the consumer id on the connection.
	CloseConsumer(c *Consumer)
}

// ConsumerInfo is what a consumer is made of (its SUBSCRIBE's fields).
type ConsumerInfo struct {
	ID       uint64
	Name     string
	Priority int
	Ranges   []selector.Range // Key_Shared sticky ranges
	// OutOfOrder is KeySharedMeta.allowOutOfOrderDelivery.
	OutOfOrder    bool
	Metadata      map[string]string
	Address       string
	ClientVersion string
	// HoldUntil, when set, is the time before which nothing is
	// dispatched to the consumer (the core's reconnect grace).
	HoldUntil time.Time
}

// Consumer is one consumer attached to a subscription. Fields below the
// marker are owned by the subscription's loop goroutine.
type Consumer struct {
	id             uint64
	name           string
	priority       int
	ranges         []selector.Range // Key_Shared sticky ranges
	sink           Sink
	metadata       map[string]string
	address        string
	clientVersion  string
	connectedSince time.Time

	// owned by the subscription loop (the flags at the end, together:
	// a live topic's consumer stays in the 416 B size class)
	arrivalKey uint64 // its arrival in the subscription (selector.Consumer)
	permits    int
	pending    map[position]*Entry
	unackedMsg int
	msgOut     int64
	bytesOut   int64
	redeliverN int64
	ackedN     int64
	entriesOut int64
	maxPos     position // see recentJoin
	lastAck    int64    // unix ms
	lastSent   int64    // unix ms
	lastFlow   int64    // unix ms
	win        Window   // stats.go
	// holdUntil, when set, is the time before which nothing is
	// dispatched to c (reconnectGrace); set before c is subscribed.
	holdUntil time.Time
	// blocked: Shared/Key_Shared dispatch to c stopped because unackedMsg
	// reached maxUnackedMessagesPerConsumer (until at most half of it).
	blocked bool
	// recentJoin: a Key_Shared consumer that joined after entries were
	// read gets only entries up to maxPos until the mark-delete reaches
	// maxPos (keyshared.go).
	recentJoin bool
	// outOfOrder is KeySharedMeta.allowOutOfOrderDelivery.
	outOfOrder bool
	closed     bool
	// warnedCumulative: an ignored cumulative ack was logged once.
	warnedCumulative bool
}

// NewConsumer makes a consumer whose frames go to sink.
func NewConsumer(in ConsumerInfo, sink Sink) *Consumer {
	c := &Consumer{
		id: in.ID, name: in.Name, priority: in.Priority, ranges: in.Ranges, outOfOrder: in.OutOfOrder,
		metadata: in.Metadata, address: in.Address, clientVersion: in.ClientVersion, holdUntil: in.HoldUntil,
		sink:           sink,
		connectedSince: time.Now(),
		// pending is made by assign and dropped when emptied.
	}
	c.win.Roll(c.connectedSince, 0, 0, 0, 0) // the first window starts now
	return c
}

// ID returns the consumer's id on its connection.
func (c *Consumer) ID() uint64 { return c.id }

// HoldUntil returns ConsumerInfo.HoldUntil.
func (c *Consumer) HoldUntil() time.Time { return c.holdUntil }

// available reports whether c can be sent an entry now: it has permits
// and its connection is not backed up.
func (c *Consumer) available() bool {
	if c.blocked || !c.holdUntil.IsZero() && time.Now().Before(c.holdUntil) {
		return false
	}
	return c.permits > 0 && (c.sink == nil || c.sink.Writable())
}

// The consumer as its subscription's selector sees it (selector.Consumer).

func (c *Consumer) Available() bool          { return c.available() }
func (c *Consumer) Priority() int            { return c.priority }
func (c *Consumer) Name() string             { return c.name }
func (c *Consumer) Arrival() uint64          { return c.arrivalKey }
func (c *Consumer) Ranges() []selector.Range { return c.ranges }

// Entry is an entry delivered to a consumer and not yet acked,
// or one waiting in the replay or delayed set. It holds the entry's
// position and what dispatch needs, not its bytes: data is set only
// between a read and the send (and kept by entries read ahead into the
// replay set, and on non-persistent topics, which cannot re-read).
// Redeliveries re-read the bytes from the managed ledger.
//
// A subscription has one Entry per position: made when the cursor
// reads the entry, it moves between the consumers' pending sets and the
// replay and delayed sets until the entry is acknowledged or a seek makes
// the subscription forget everything (the cursor reads no entry twice
// otherwise).
type Entry struct {
	pos     position
	data    []byte
	numMsgs int
	key     []byte
	owner   *Consumer
	chunk   Chunk // zero unless the entry is one chunk of a larger message
	// redeliveries counts the redeliveries of the entry (Shared and
	// Key_Shared; the redelivery_count of its MESSAGE frames).
	redeliveries uint32
	// queued: the entry is in the replay set (entryset.Member).
	queued bool
	// inOrder: the entry is in its subscription's order heap
	// (requeue.go's pushOrder).
	inOrder bool
}

// The pending entry as package entryset's sets see it (entryset.Member).
func (pe *Entry) Before(o *Entry) bool { return pe.pos.Compare(o.pos) < 0 }
func (pe *Entry) Queued() bool         { return pe.queued }
func (pe *Entry) SetQueued(q bool)     { pe.queued = q }
func (pe *Entry) Size() int            { return len(pe.data) }

// Pos returns the entry's position.
func (pe *Entry) Pos() storage.Position { return pe.pos }

// Messages returns the entry's message count.
func (pe *Entry) Messages() int { return pe.numMsgs }
