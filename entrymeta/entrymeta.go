package entrymeta

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// Pulsar's interceptor class names (brokerEntryMetadataInterceptors).
const (
	InterceptorBrokerTimestamp = "org.apache.pulsar.common.intercept.AppendBrokerTimestampMetadataInterceptor"
	InterceptorIndex           = "org.apache.pulsar.common.intercept.AppendIndexMetadataInterceptor"
)

// ErrUnknownInterceptor reports an interceptor name that is neither.
var ErrUnknownInterceptor = errors.New("entrymeta: unknown broker entry metadata interceptor")

// indexProperty is the managed ledger info property holding the index of
// the last message stamped when the info was last written.
const indexProperty = "index"

// Interceptor stamps broker entry metadata on a broker's entries.
type Interceptor struct {
	timestamp, index bool
	topics           broker.TopicSlot[topicIndex]
}

// topicIndex is a topic's message index: next is the index of the next
// message. Only BeforeAdd writes it (serialised by the topic's add
// order); the managed ledger's info hook reads it.
type topicIndex struct {
	next atomic.Int64
}

var (
	_ broker.PublishInterceptor = (*Interceptor)(nil)
	_ broker.TopicHook          = (*Interceptor)(nil)
)

// Enable parses Pulsar's interceptor names and, if any is set, registers
// the interceptor on b (before Start). It returns nil when names selects
// nothing.
func Enable(b *broker.Broker, names []string) (*Interceptor, error) {
	x := &Interceptor{}
	for _, n := range names {
		switch n {
		case InterceptorBrokerTimestamp:
			x.timestamp = true
		case InterceptorIndex:
			x.index = true
		case "":
		default:
			return nil, fmt.Errorf("%w: %q (known: %s, %s)", ErrUnknownInterceptor, n, InterceptorBrokerTimestamp, InterceptorIndex)
		}
	}
	if !x.timestamp && !x.index {
		return nil, nil
	}
	if x.index {
		x.topics = broker.NewTopicSlot[topicIndex](b)
	}
	if err := b.Use(x); err != nil {
		return nil, err
	}
	return x, nil
}

// Name implements broker.Feature.
func (x *Interceptor) Name() string { return "broker entry metadata" }

// BeforeAdd implements broker.PublishInterceptor: e gets the block in
// front of its bytes (a new buffer with mledger.EntryHeadroom of room);
// the topic's index advances by e's message count.
func (x *Interceptor) BeforeAdd(t broker.Topic, e *broker.Entry) {
	last := int64(0)
	if x.index {
		ti := x.topics.Get(t)
		if ti == nil {
			return // not loaded through LoadTopic: never (persistent topics only)
		}
		last = ti.next.Add(int64(e.Messages())) - 1
	}
	data := e.Data()
	buf := make([]byte, mledger.EntryHeadroom, mledger.EntryHeadroom+32+len(data))
	buf = x.appendBlock(buf, time.Now().UnixMilli(), last)
	buf = append(buf, data...)
	e.SetData(buf, mledger.EntryHeadroom)
}

// AfterAdd implements broker.PublishInterceptor (nothing to do).
func (x *Interceptor) AfterAdd(broker.Topic, *broker.Entry, storage.Position, error) {}

// appendBlock appends the 0x0e02 block for an entry received at now (ms)
// whose last message has index idx.
func (x *Interceptor) appendBlock(dst []byte, now, idx int64) []byte {
	var fields []byte
	if x.timestamp {
		fields = appendVarintField(fields, 1, uint64(now))
	}
	if x.index {
		fields = appendVarintField(fields, 2, uint64(idx))
	}
	dst = binary.BigEndian.AppendUint16(dst, pulsarproto.MagicBrokerEntryMetadata)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(fields)))
	return append(dst, fields...)
}

func appendVarintField(dst []byte, num int, v uint64) []byte {
	dst = binary.AppendUvarint(dst, uint64(num)<<3) // varint wire type 0
	return binary.AppendUvarint(dst, v)
}

// infoPropertied is a managed ledger that stores info properties
// (mledger's infoprops.go).
type infoPropertied interface {
	SetInfoPropertiesHook(fn func(map[string]string))
	InfoProperties() map[string]string
}

// LoadTopic implements broker.TopicHook: it recovers a persistent
// topic's next index and has every later info write record it.
func (x *Interceptor) LoadTopic(_ context.Context, t broker.Topic) error {
	if !x.index || !t.Persistent() {
		return nil
	}
	ml := t.Ledger()
	next := int64(0)
	ip, hasProps := ml.(infoPropertied)
	if hasProps {
		if v, ok := ip.InfoProperties()[indexProperty]; ok {
			last, err := strconv.ParseInt(v, 10, 64)
			if err != nil || last < -1 {
				return fmt.Errorf("entrymeta: %s: managed ledger property %s=%q: not an index", t.Name(), indexProperty, v)
			}
			next = last + 1
		}
	}
	if lp, ok := ml.LastConfirmed(); ok {
		last, _, ok, err := entryIndexOf(t, lp)
		if err != nil {
			return fmt.Errorf("entrymeta: recover the message index of %s: %w", t.Name(), err)
		}
		if ok {
			next = max(next, last+1)
		}
	}
	ti := &topicIndex{}
	ti.next.Store(next)
	x.topics.Set(t, ti)
	if hasProps {
		ip.SetInfoPropertiesHook(func(p map[string]string) {
			if n := ti.next.Load(); n > 0 {
				p[indexProperty] = strconv.FormatInt(n-1, 10)
			}
		})
	}
	return nil
}

// CloseTopic implements broker.TopicHook (nothing to release).
func (x *Interceptor) CloseTopic(broker.Topic) {}
