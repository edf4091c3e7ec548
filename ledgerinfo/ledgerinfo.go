package ledgerinfo

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// Info is Pulsar's ManagedLedgerInfo.
type Info struct {
	Version            int                   `json:"version"`
	CreationDate       string                `json:"creationDate"`
	ModificationDate   string                `json:"modificationDate"`
	Ledgers            []LedgerInfo          `json:"ledgers"`
	TerminatedPosition *Position             `json:"terminatedPosition,omitempty"`
	Cursors            map[string]CursorInfo `json:"cursors"`
	Properties         map[string]string     `json:"properties"`
}

// LedgerInfo is one ledger of Info; Entries and Size are nil while the
// ledger is open.
type LedgerInfo struct {
	LedgerID             int64  `json:"ledgerId"`
	Entries              *int64 `json:"entries,omitempty"`
	Size                 *int64 `json:"size,omitempty"`
	Timestamp            int64  `json:"timestamp"`
	IsOffloaded          bool   `json:"isOffloaded"`
	OffloadedContextUUID string `json:"offloadedContextUuid,omitempty"`
}

// Position is Pulsar's PositionInfo.
type Position struct {
	LedgerID int64 `json:"ledgerId"`
	EntryID  int64 `json:"entryId"`
}

// CursorInfo is one cursor of Info.
type CursorInfo struct {
	Version                   int              `json:"version"`
	CreationDate              string           `json:"creationDate"`
	ModificationDate          string           `json:"modificationDate"`
	CursorsLedgerID           int64            `json:"cursorsLedgerId"`
	MarkDelete                Position         `json:"markDelete"`
	IndividualDeletedMessages []MessageRange   `json:"individualDeletedMessages"`
	Properties                map[string]int64 `json:"properties"`
}

// MessageRange is Pulsar's MessageRangeInfo: the entries (from, to].
type MessageRange struct {
	From      Position `json:"from"`
	To        Position `json:"to"`
	Offloaded bool     `json:"offloaded"`
}

// Reader answers the admin API from a broker's topics.
type Reader struct{ b *broker.Broker }

// New returns a Reader over b.
func New(b *broker.Broker) *Reader { return &Reader{b: b} }

// managed loads topic (never creating it) and returns its managed
// ledger: ErrNotAllowed for a non-persistent topic.
func (r *Reader) managed(ctx context.Context, topic string) (*mledger.ManagedLedger, error) {
	v, err := r.b.Topic(ctx, topic)
	if err != nil {
		return nil, err
	}
	if !v.Persistent() {
		return nil, fmt.Errorf("%w: not a persistent topic", broker.ErrNotAllowed)
	}
	ml := v.Managed()
	if ml == nil {
		return nil, fmt.Errorf("%w: the topic's storage is not a managed ledger", broker.ErrNotAllowed)
	}
	return ml, nil
}

// ManagedLedgerInfo returns topic's Info (a non-partitioned topic or one
// partition).
func (r *Reader) ManagedLedgerInfo(ctx context.Context, topic string) (Info, error) {
	ml, err := r.managed(ctx, topic)
	if err != nil {
		return Info{}, err
	}
	s := ml.StoredInfo()
	out := Info{Version: int(s.Version), Ledgers: []LedgerInfo{}, Cursors: map[string]CursorInfo{}, Properties: s.Properties}
	for i, l := range s.Ledgers {
		li := LedgerInfo{LedgerID: l.LedgerID, Timestamp: l.Timestamp}
		open := i == len(s.Ledgers)-1 && !s.Terminated && l.Timestamp == 0
		if !open {
			li.Entries, li.Size = new(l.Entries), new(l.Size)
		}
		if l.Offload != nil {
			// As Pulsar: an offload context, complete or not.
			li.IsOffloaded = true
			li.OffloadedContextUUID = l.Offload.UID.String()
		}
		out.Ledgers = append(out.Ledgers, li)
	}
	if s.Terminated {
		out.TerminatedPosition = &Position{s.LastConfirmed.LedgerID, s.LastConfirmed.EntryID}
	}
	for _, c := range s.Cursors {
		ci := CursorInfo{Version: int(c.Version), CursorsLedgerID: c.CursorLedger,
			MarkDelete:                Position{c.MarkDelete.LedgerID, c.MarkDelete.EntryID},
			IndividualDeletedMessages: []MessageRange{}, Properties: map[string]int64{}}
		for _, d := range c.Deleted {
			ci.IndividualDeletedMessages = append(ci.IndividualDeletedMessages,
				MessageRange{From: Position{d.From.LedgerID, d.From.EntryID}, To: Position{d.To.LedgerID, d.To.EntryID}})
		}
		out.Cursors[c.Name] = ci
	}
	return out, nil
}

// MessageIDByTimestamp returns the id of the first entry of topic
// written at or after ts (Unix ms), as Pulsar finds it (doc.go); found
// is false when the ledger has no ledgers.
func (r *Reader) MessageIDByTimestamp(ctx context.Context, topic string, ts int64) (id broker.MessageID, found bool, err error) {
	ml, err := r.managed(ctx, topic)
	if err != nil {
		return broker.MessageID{}, false, err
	}
	s := ml.Stats()
	if len(s.Ledgers) == 0 {
		return broker.MessageID{}, false, nil
	}
	p, _, err := ml.FindByPublishTime(ctx, ts, entryTime)
	if err != nil {
		return broker.MessageID{}, false, err
	}
	return broker.MessageID{LedgerID: p.LedgerID, EntryID: p.EntryID, Partition: partitionOf(topic), BatchIndex: -1}, true, nil
}

// entryTime is Pulsar's entry timestamp: the broker timestamp of the
// broker entry metadata if the entry has one, else the publish time.
func entryTime(data []byte) (int64, error) {
	e, err := pulsarproto.ParseEntry(data)
	if err != nil {
		return 0, err
	}
	if e.BrokerEntryMetadata != nil {
		if bm, err := pulsarproto.ParseBrokerEntryMetadata(e.BrokerEntryMetadata); err == nil && bm.HasBrokerTimestamp {
			return int64(bm.BrokerTimestamp), nil
		}
	}
	var md pulsarproto.Metadata
	if err := pulsarproto.ParseMetadata(e.Metadata, &md); err != nil {
		return 0, err
	}
	return int64(md.PublishTime), nil
}

// partitionOf is a topic name's partition index (-1: not a partition).
func partitionOf(topic string) int {
	i := strings.LastIndex(topic, "-partition-")
	if i < 0 {
		return -1
	}
	n, err := strconv.Atoi(topic[i+len("-partition-"):])
	if err != nil || n < 0 {
		return -1
	}
	return n
}
