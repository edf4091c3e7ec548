package broker

import (
	"context"
	"fmt"
	"sort"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// Message ids by index (docs/broker-entry-metadata.md): with the index
// interceptor on, every entry's broker entry metadata holds the index of
// its last message, and indexes grow by the entry's message count from
// one entry to the next, across ledgers and restarts. An index therefore
// names one entry; the entry holding it is found by a binary search over
// the stored entries (Pulsar's getMessageIdByIndex, which also answers
// at entry granularity).

// entryIndexOf reads the entry at pos and returns the index of its last
// message and its message count (ok false: the entry has no index, e.g.
// it was written before the interceptor was enabled).
func (t *topic) entryIndexOf(pos position) (last int64, msgs int, ok bool, err error) {
	data, err := t.ml.ReadEntry(pos)
	if err != nil {
		return 0, 0, false, readError(err)
	}
	e, err := pulsarproto.ParseEntry(data)
	if err != nil {
		return 0, 0, false, fmt.Errorf("entry %s: %w", pos, err)
	}
	if e.BrokerEntryMetadata == nil {
		return 0, 0, false, nil
	}
	m, err := pulsarproto.ParseBrokerEntryMetadata(e.BrokerEntryMetadata)
	if err != nil || !m.HasIndex {
		return 0, 0, false, err
	}
	var md pulsarproto.Metadata
	if err := pulsarproto.ParseMetadata(e.Metadata, &md); err != nil {
		return 0, 0, false, fmt.Errorf("entry %s: %w", pos, err)
	}
	return int64(m.Index), md.NumMessages(), true, nil
}

// positionOfIndex returns the position of the entry holding the message
// with index idx.
func (t *topic) positionOfIndex(idx int64) (position, error) {
	lc, ok := t.ml.LastConfirmed()
	if !ok {
		return position{}, reason(ErrTopicNotFound, fmt.Sprintf("Message not found: index %d: the topic holds no messages", idx))
	}
	type span struct{ ledger, entries int64 }
	var spans []span
	var total int64
	for _, l := range t.ml.Stats().Ledgers {
		n := l.Entries
		switch {
		case l.LedgerID == lc.LedgerID:
			n = lc.EntryID + 1
		case l.LedgerID > lc.LedgerID:
			n = 0
		}
		if n > 0 {
			spans = append(spans, span{l.LedgerID, n})
			total += n
		}
	}
	at := func(k int64) position {
		for _, s := range spans {
			if k < s.entries {
				return position{LedgerID: s.ledger, EntryID: k}
			}
			k -= s.entries
		}
		return position{}
	}
	// The first entry whose last index is at or after idx (entries
	// without an index come before every indexed one).
	var ferr error
	k := int64(sort.Search(int(total), func(i int) bool {
		if ferr != nil {
			return true
		}
		last, _, ok, err := t.entryIndexOf(at(int64(i)))
		if err != nil {
			ferr = err
			return true
		}
		return ok && last >= idx
	}))
	if ferr != nil {
		return position{}, ferr
	}
	if k == total {
		last := int64(-1)
		if v, _, ok, err := t.entryIndexOf(lc); err == nil && ok {
			last = v
		}
		return position{}, reason(ErrTopicNotFound, fmt.Sprintf("Message not found: index %d is after the last message (index %d)", idx, last))
	}
	pos := at(k)
	last, msgs, _, err := t.entryIndexOf(pos)
	if err != nil {
		return position{}, err
	}
	if first := last - int64(msgs) + 1; idx < first {
		// Only possible for the first stored entry with an index: the
		// messages before it were trimmed (or written without an index).
		return position{}, reason(ErrTopicNotFound, fmt.Sprintf("Message not found: index %d is before the first stored indexed message (index %d)", idx, first))
	}
	return pos, nil
}

// MessageIDByIndex implements Service.
func (b *Broker) MessageIDByIndex(ctx context.Context, topic string, idx int64) (MessageID, error) {
	if !b.entryMeta.index {
		return MessageID{}, reason(ErrPreconditionFailed, "Broker entry metadata index is not enabled: add "+InterceptorIndex+" to brokerEntryMetadataInterceptors")
	}
	if idx < 0 {
		return MessageID{}, reason(ErrPreconditionFailed, fmt.Sprintf("Invalid index %d: it must be 0 or more", idx))
	}
	parts, err := b.partitionsOf(ctx, topic)
	if err != nil {
		return MessageID{}, err
	}
	if parts != nil {
		return MessageID{}, reason(ErrPreconditionFailed, topic+" is a partitioned topic: ask one of its partitions (each has its own index)")
	}
	t, err := b.loadedOrLoad(ctx, topic)
	if err != nil {
		return MessageID{}, err
	}
	if !t.persistent() {
		return MessageID{}, reason(ErrNotAllowed, "not supported on non-persistent topics")
	}
	pos, err := t.positionOfIndex(idx)
	if err != nil {
		return MessageID{}, err
	}
	return MessageID{LedgerID: pos.LedgerID, EntryID: pos.EntryID, Partition: t.partition, BatchIndex: -1}, nil
}
