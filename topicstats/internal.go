package topicstats

import (
	"context"
	"fmt"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/mledger"
)

// InternalStats is Pulsar's PersistentTopicInternalStats (subset).
type InternalStats struct {
	EntriesAddedCounter int64 `json:"entriesAddedCounter"`
	NumberOfEntries     int64 `json:"numberOfEntries"`
	TotalSize           int64 `json:"totalSize"`
	// OffloadedSize and BookieSize split TotalSize (Magnetar): bytes in
	// completed offloads, bytes still on the bookies.
	OffloadedSize        int64                          `json:"offloadedSize"`
	BookieSize           int64                          `json:"bookieSize"`
	CurrentLedgerEntries int64                          `json:"currentLedgerEntries"`
	CurrentLedgerSize    int64                          `json:"currentLedgerSize"`
	LastConfirmedEntry   string                         `json:"lastConfirmedEntry"`
	State                string                         `json:"state"`
	Ledgers              []InternalLedgerInfo           `json:"ledgers"`
	Cursors              map[string]InternalCursorStats `json:"cursors"`
	// Compaction state (package compact); absent if never compacted.
	CompactedLedger         *InternalLedgerInfo `json:"compactedLedger,omitempty"`
	CompactionHorizon       string              `json:"compactionHorizon,omitempty"`
	PendingCompactionLedger *int64              `json:"pendingCompactionLedger,omitempty"`
}

// InternalLedgerInfo is one ledger of InternalStats.
type InternalLedgerInfo struct {
	LedgerID  int64 `json:"ledgerId"`
	Entries   int64 `json:"entries"`
	Size      int64 `json:"size"`
	Timestamp int64 `json:"timestamp"`
	Offloaded bool  `json:"offloaded"`
	// UnderReplicated is Pulsar's field (always false here).
	UnderReplicated bool `json:"underReplicated"`
	// BookkeeperDeleted (Magnetar): the bookie copy of the offloaded
	// ledger is gone.
	BookkeeperDeleted bool `json:"bookkeeperDeleted"`
}

// InternalCursorStats is one cursor of InternalStats.
type InternalCursorStats struct {
	MarkDeletePosition                       string `json:"markDeletePosition"`
	ReadPosition                             string `json:"readPosition"`
	CursorLedger                             int64  `json:"cursorLedger"`
	State                                    string `json:"state"`
	NumberOfEntriesSinceFirstNotAckedMessage int64  `json:"numberOfEntriesSinceFirstNotAckedMessage"`
	TotalNonContiguousDeletedMessagesRange   int64  `json:"totalNonContiguousDeletedMessagesRange"`
	MessagesConsumedCounter                  int64  `json:"messagesConsumedCounter"`
	Durable                                  bool   `json:"durable"`
	BacklogMessages                          int64  `json:"backlogMessages"`
}

// InternalSource adds a feature's part to a topic's internal stats (the
// compaction fields), on the request's goroutine. A broker feature that
// implements it is asked.
type InternalSource interface {
	AddInternalStats(ctx context.Context, t broker.Topic, out *InternalStats)
}

// Internal returns Pulsar's internal stats of the topic: its managed
// ledger and cursors, and what the InternalSources add.
func (r Reader) Internal(ctx context.Context, t broker.Topic) InternalStats {
	if !t.Persistent() {
		// As Pulsar's non-persistent topic: no storage, one empty
		// cursor entry per subscription.
		out := InternalStats{EntriesAddedCounter: t.Counters().MsgIn, Ledgers: []InternalLedgerInfo{}, Cursors: map[string]InternalCursorStats{}}
		for _, s := range t.Subscriptions() {
			out.Cursors[s.Name()] = InternalCursorStats{}
		}
		return out
	}
	out := Ledger(t.Ledger().Stats())
	for _, s := range r.internal {
		s.AddInternalStats(ctx, t, &out)
	}
	return out
}

// Ledger is Pulsar's internal stats of a managed ledger (a topic's, or
// a feature's own, such as a transaction coordinator's log).
func Ledger(s mledger.Stats) InternalStats {
	out := InternalStats{
		EntriesAddedCounter: s.EntriesAddedCounter,
		NumberOfEntries:     s.NumberOfEntries,
		TotalSize:           s.TotalSize,
		OffloadedSize:       s.OffloadedSize,
		BookieSize:          s.BookieSize,
		LastConfirmedEntry:  posString(s.LastConfirmed),
		State:               "LedgerOpened",
		Ledgers:             []InternalLedgerInfo{},
		Cursors:             map[string]InternalCursorStats{},
	}
	if s.Terminated {
		out.State = "Terminated"
	}
	for _, l := range s.Ledgers {
		out.Ledgers = append(out.Ledgers, InternalLedgerInfo{LedgerID: l.LedgerID, Entries: l.Entries, Size: l.Size, Timestamp: l.Timestamp,
			Offloaded: l.Offload != nil && l.Offload.Complete, BookkeeperDeleted: l.Offload != nil && l.Offload.BookkeeperDeleted})
	}
	if n := len(s.Ledgers); n > 0 {
		out.CurrentLedgerEntries, out.CurrentLedgerSize = s.Ledgers[n-1].Entries, s.Ledgers[n-1].Size
	}
	for _, c := range s.Cursors {
		out.Cursors[c.Name] = InternalCursorStats{
			MarkDeletePosition:                       posString(c.MarkDelete),
			ReadPosition:                             posString(c.ReadPosition),
			CursorLedger:                             c.CursorLedger,
			State:                                    "Open",
			NumberOfEntriesSinceFirstNotAckedMessage: c.BacklogEntries,
			TotalNonContiguousDeletedMessagesRange:   c.IndividuallyDeletedCount,
			Durable:                                  c.Durable,
			BacklogMessages:                          c.BacklogMessages,
		}
	}
	return out
}

// posString is Pulsar's ledger:entry form of a position.
func posString(p mledger.Position) string { return fmt.Sprintf("%d:%d", p.LedgerID, p.EntryID) }
