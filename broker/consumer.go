package broker

import (
	"time"

	"github.com/magnetar-mq/magnetar/broker/selector"
)

// SubType is a subscription type, with Pulsar's wire values.
type SubType int32

const (
	SubExclusive SubType = 0
	SubShared    SubType = 1
	SubFailover  SubType = 2
	SubKeyShared SubType = 3
)

func (t SubType) String() string {
	switch t {
	case SubExclusive:
		return "Exclusive"
	case SubShared:
		return "Shared"
	case SubFailover:
		return "Failover"
	case SubKeyShared:
		return "Key_Shared"
	}
	return "Unknown"
}

// consumerSink is where a consumer's outbound frames go: the connection
// in production, a recorder in tests. Implementations must not block and
// must not call back into the subscription.
type consumerSink interface {
	// sendMessage queues one MESSAGE frame carrying a stored entry.
	sendMessage(consumerID uint64, pos position, redeliveries uint32, ackSet []int64, data []byte)
	// sendActiveChange queues ACTIVE_CONSUMER_CHANGE.
	sendActiveChange(consumerID uint64, active bool)
	// writable reports whether the connection can take more messages now;
	// when it later drains it wakes the consumer's subscription.
	writable() bool
	// closeConsumer queues a broker-initiated CLOSE_CONSUMER and forgets
	// the consumer id on the connection.
	closeConsumer(c *consumer)
}

// consumer is one consumer attached to a subscription. Fields below the
// marker are owned by the subscription's loop goroutine.
type consumer struct {
	id             uint64
	name           string
	priority       int
	ranges         []selector.Range // Key_Shared sticky ranges
	sink           consumerSink
	metadata       map[string]string
	address        string
	clientVersion  string
	connectedSince time.Time

	// owned by the subscription loop (the flags at the end, together:
	// a live topic's consumer stays in the 416 B size class)
	arrivalKey uint64 // its arrival in the subscription (selector.Consumer)
	permits    int
	pending    map[position]*pendingEntry
	unackedMsg int
	msgOut     int64
	bytesOut   int64
	redeliverN int64
	ackedN     int64
	entriesOut int64
	maxPos     position   // see recentJoin
	lastAck    int64      // unix ms
	lastSent   int64      // unix ms
	lastFlow   int64      // unix ms
	win        rateWindow // stats.go
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

func newConsumer(id uint64, name string, sink consumerSink) *consumer {
	c := &consumer{
		id:             id,
		name:           name,
		sink:           sink,
		connectedSince: time.Now(),
		// pending is made by assign and dropped when emptied.
	}
	c.win.roll(c.connectedSince, 0, 0, 0, 0) // the first window starts now
	return c
}

// available reports whether c can be sent an entry now: it has permits
// and its connection is not backed up.
func (c *consumer) available() bool {
	if c.blocked || !c.holdUntil.IsZero() && time.Now().Before(c.holdUntil) {
		return false
	}
	return c.permits > 0 && (c.sink == nil || c.sink.writable())
}

// The consumer as its subscription's selector sees it (selector.Consumer).

func (c *consumer) Available() bool          { return c.available() }
func (c *consumer) Priority() int            { return c.priority }
func (c *consumer) Name() string             { return c.name }
func (c *consumer) Arrival() uint64          { return c.arrivalKey }
func (c *consumer) Ranges() []selector.Range { return c.ranges }

// pendingEntry is an entry delivered to a consumer and not yet acked,
// or one waiting in the replay or delayed set. It holds the entry's
// position and what dispatch needs, not its bytes: data is set only
// between a read and the send (and kept by entries read ahead into the
// replay set, and on non-persistent topics, which cannot re-read).
// Redeliveries re-read the bytes from the managed ledger.
//
// A subscription has one pendingEntry per position: made when the cursor
// reads the entry, it moves between the consumers' pending sets and the
// replay and delayed sets until the entry is acknowledged or a seek makes
// the subscription forget everything (the cursor reads no entry twice
// otherwise).
type pendingEntry struct {
	pos     position
	data    []byte
	numMsgs int
	key     []byte
	owner   *consumer
	chunk   chunkInfo // zero unless the entry is one chunk of a larger message
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
func (pe *pendingEntry) Before(o *pendingEntry) bool { return pe.pos.Compare(o.pos) < 0 }
func (pe *pendingEntry) Queued() bool                { return pe.queued }
func (pe *pendingEntry) SetQueued(q bool)            { pe.queued = q }
func (pe *pendingEntry) Size() int                   { return len(pe.data) }
