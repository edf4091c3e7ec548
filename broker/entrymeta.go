package broker

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// Broker entry metadata (docs/broker-entry-metadata.md): with
// Config.BrokerEntryMetadataInterceptors set, every stored entry starts
// with a 0x0e02 block holding the broker's receive time and/or the index
// of the entry's last message in the topic (messages numbered from 0).
// The names are Pulsar's interceptor class names.
const (
	InterceptorBrokerTimestamp = "org.apache.pulsar.common.intercept.AppendBrokerTimestampMetadataInterceptor"
	InterceptorIndex           = "org.apache.pulsar.common.intercept.AppendIndexMetadataInterceptor"
)

// entryMetaConfig is the parsed interceptor list.
type entryMetaConfig struct {
	timestamp, index bool
}

func (c entryMetaConfig) on() bool { return c.timestamp || c.index }

func parseInterceptors(names []string) (entryMetaConfig, error) {
	var c entryMetaConfig
	for _, n := range names {
		switch n {
		case InterceptorBrokerTimestamp:
			c.timestamp = true
		case InterceptorIndex:
			c.index = true
		case "":
		default:
			return c, fmt.Errorf("%w: unknown broker entry metadata interceptor %q (known: %s, %s)",
				ErrBadConfig, n, InterceptorBrokerTimestamp, InterceptorIndex)
		}
	}
	return c, nil
}

// appendEntryMeta appends the 0x0e02 block for an entry received now
// whose last message has index idx.
func appendEntryMeta(dst []byte, c entryMetaConfig, now int64, idx int64) []byte {
	var fields []byte
	if c.timestamp {
		fields = appendUvarintField(fields, 1, uint64(now))
	}
	if c.index {
		fields = appendUvarintField(fields, 2, uint64(idx))
	}
	dst = binary.BigEndian.AppendUint16(dst, pulsarproto.MagicBrokerEntryMetadata)
	n := len(fields)
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	return append(dst, fields...)
}

func appendUvarintField(dst []byte, num int, v uint64) []byte {
	dst = appendUvarint(dst, uint64(num)<<3) // varint wire type 0
	return appendUvarint(dst, v)
}

func appendUvarint(dst []byte, v uint64) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// withEntryMeta returns e with a broker entry metadata block in front of
// its data (a new buffer, with mledger.EntryHeadroom of room) and
// advances the topic's message index by numMsgs. Caller holds t.bem.
func (t *topic) withEntryMeta(e entryBuf, numMsgs int) entryBuf {
	t.bem.next += int64(max(numMsgs, 1))
	t.bemNext.Store(t.bem.next)
	data := e.data()
	buf := make([]byte, mledger.EntryHeadroom, mledger.EntryHeadroom+32+len(data))
	buf = appendEntryMeta(buf, t.b.entryMeta, time.Now().UnixMilli(), t.bem.next-1)
	buf = append(buf, data...)
	return entryBuf{buf: buf, off: mledger.EntryHeadroom, txn: e.txn}
}

// indexProperty is the managed ledger info property holding the index
// of the last message stamped when the info was last written (Pulsar's
// managed ledger keeps its index the same way), so that the index goes on
// even when retention trimmed every ledger that held an entry.
const indexProperty = "index"

// infoPropertied is a managed ledger that stores info properties
// (mledger/infoprops.go).
type infoPropertied interface {
	SetInfoPropertiesHook(fn func(map[string]string))
	InfoProperties() map[string]string
}

// recoverEntryIndex sets the next message index from the last stored
// entry's broker entry metadata and the index recorded in the managed
// ledger's info, whichever is later (0 for a topic never written with the
// index interceptor), and has every later info write record it.
func (t *topic) recoverEntryIndex() error {
	next := int64(0)
	ip, hasProps := t.ml.(infoPropertied)
	if hasProps {
		if v, ok := ip.InfoProperties()[indexProperty]; ok {
			last, err := strconv.ParseInt(v, 10, 64)
			if err != nil || last < -1 {
				return fmt.Errorf("managed ledger property %s=%q: not an index", indexProperty, v)
			}
			next = last + 1
		}
	}
	if lp, ok := t.ml.LastConfirmed(); ok {
		data, err := t.ml.ReadEntry(lp)
		if err != nil {
			return err
		}
		e, err := pulsarproto.ParseEntry(data)
		if err != nil {
			return err
		}
		if e.BrokerEntryMetadata != nil {
			m, err := pulsarproto.ParseBrokerEntryMetadata(e.BrokerEntryMetadata)
			if err != nil {
				return err
			}
			if m.HasIndex {
				next = max(next, int64(m.Index)+1)
			}
		}
	}
	t.bem.Lock()
	t.bem.next = next
	t.bemNext.Store(next)
	t.bem.Unlock()
	if hasProps {
		ip.SetInfoPropertiesHook(func(p map[string]string) {
			if n := t.bemNext.Load(); n > 0 {
				p[indexProperty] = strconv.FormatInt(n-1, 10)
			}
		})
	}
	return nil
}

// clientEntry is what a consumer receives of a stored entry: the entry
// as stored when broker entry metadata is exposed and the client said it
// supports it, else without the 0x0e02 block.
func (c *conn) clientEntry(data []byte) []byte {
	if c.b.cfg.ExposeBrokerEntryMetadata && c.bemSupported.Load() {
		return data
	}
	return pulsarproto.StripBrokerEntryMetadata(data)
}

// stripClientEntryMeta drops a 0x0e02 block a client put in front of a
// SEND: broker entry metadata is the broker's to write.
func stripClientEntryMeta(e entryBuf) entryBuf {
	d := e.data()
	if s := pulsarproto.StripBrokerEntryMetadata(d); len(s) != len(d) {
		e.off += len(d) - len(s)
	}
	return e
}
