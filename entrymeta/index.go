package entrymeta

import (
	"fmt"
	"sort"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// entryIndexOf reads the entry at pos and returns the index of its last
// message and its message count (ok false: the entry has no index, e.g.
// it was written before the interceptor was enabled).
func entryIndexOf(t broker.Topic, pos storage.Position) (last int64, msgs int, ok bool, err error) {
	data, err := t.ReadEntry(pos)
	if err != nil {
		return 0, 0, false, err
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

// IndexesMessages reports whether the index interceptor is on.
func (x *Interceptor) IndexesMessages() bool { return x.index }

// PositionOfIndex returns the position of the entry of t holding the
// message with index idx. The admin API asks it
// (brokeradmin.Reads.MessageIDByIndex, admin's getMessageIdByIndex) once
// it checked idx and loaded t.
func (x *Interceptor) PositionOfIndex(t broker.Topic, idx int64) (storage.Position, error) {
	if !x.index {
		return storage.Position{}, broker.Reason(broker.ErrPreconditionFailed, "Broker entry metadata index is not enabled: add "+InterceptorIndex+" to brokerEntryMetadataInterceptors")
	}
	ml := t.Ledger()
	lc, ok := ml.LastConfirmed()
	if !ok {
		return storage.Position{}, broker.Reason(broker.ErrTopicNotFound, fmt.Sprintf("Message not found: index %d: the topic holds no messages", idx))
	}
	type span struct{ ledger, entries int64 }
	var spans []span
	var total int64
	for _, l := range ml.Stats().Ledgers {
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
	at := func(k int64) storage.Position {
		for _, s := range spans {
			if k < s.entries {
				return storage.Position{LedgerID: s.ledger, EntryID: k}
			}
			k -= s.entries
		}
		return storage.Position{}
	}
	// The first entry whose last index is at or after idx (entries
	// without an index come before every indexed one).
	var ferr error
	k := int64(sort.Search(int(total), func(i int) bool {
		if ferr != nil {
			return true
		}
		last, _, ok, err := entryIndexOf(t, at(int64(i)))
		if err != nil {
			ferr = err
			return true
		}
		return ok && last >= idx
	}))
	if ferr != nil {
		return storage.Position{}, ferr
	}
	if k == total {
		last := int64(-1)
		if v, _, ok, err := entryIndexOf(t, lc); err == nil && ok {
			last = v
		}
		return storage.Position{}, broker.Reason(broker.ErrTopicNotFound, fmt.Sprintf("Message not found: index %d is after the last message (index %d)", idx, last))
	}
	pos := at(k)
	last, msgs, _, err := entryIndexOf(t, pos)
	if err != nil {
		return storage.Position{}, err
	}
	if first := last - int64(msgs) + 1; idx < first {
		// Only possible for the first stored entry with an index: the
		// messages before it were trimmed (or written without an index).
		return storage.Position{}, broker.Reason(broker.ErrTopicNotFound, fmt.Sprintf("Message not found: index %d is before the first stored indexed message (index %d)", idx, first))
	}
	return pos, nil
}
