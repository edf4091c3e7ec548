package broker

import (
	"context"
	"fmt"
	"slices"

	"github.com/magnetar-mq/magnetar/txn"
)

// Participant statistics for Pulsar's /admin/v3/transactions
// transactionBufferStats, pendingAckStats, transactionInBufferStats and
// transactionInPendingAckStats (admin/transactions_participants.go).

// TxnBufferStats is Pulsar's TransactionBufferStats.
type TxnBufferStats struct {
	// State is "Ready", or "NoSnapshot" for a topic that never used
	// transactions (Pulsar's buffer is then not initialised either).
	State string `json:"state"`
	// MaxReadPosition is the last position readers may read ("L:E").
	MaxReadPosition        string `json:"maxReadPosition"`
	LastSnapshotTimestamps int64  `json:"lastSnapshotTimestamps"`
	OngoingTxnSize         int64  `json:"ongoingTxnSize"`
	// AbortedTxnSize is the number of aborted ids kept (their entries
	// still exist); the counts are over the topic's lifetime.
	AbortedTxnSize    int64 `json:"abortedTxnSize"`
	CommittedTxnCount int64 `json:"committedTxnCount"`
	AbortedTxnCount   int64 `json:"abortedTxnCount"`
	// RecoverStartTime and RecoverEndTime (ms since the epoch) bound the
	// buffer's rebuild at topic load; 0: no buffer.
	RecoverStartTime int64 `json:"recoverStartTime"`
	RecoverEndTime   int64 `json:"recoverEndTime"`
}

// TxnInBufferStats is Pulsar's TransactionInBufferStats.
type TxnInBufferStats struct {
	StartPosition string `json:"startPosition,omitempty"`
	Aborted       bool   `json:"aborted"`
}

// PendingAckStats is Pulsar's TransactionPendingAckStats.
type PendingAckStats struct {
	State          string `json:"state"`
	OngoingTxnSize int64  `json:"ongoingTxnSize"`
	// PendingAckedMessages is the number of entries held by open
	// transactions; the counts are since the subscription was loaded.
	PendingAckedEntries int64 `json:"pendingAckedEntries"`
	CommittedTxnCount   int64 `json:"committedTxnCount"`
	AbortedTxnCount     int64 `json:"abortedTxnCount"`
	// RecoverStartTime and RecoverEndTime (ms since the epoch) bound the
	// log's replay at topic load; 0: no pending-ack store.
	RecoverStartTime int64 `json:"recoverStartTime"`
	RecoverEndTime   int64 `json:"recoverEndTime"`
}

// TxnInPendingAckStats is Pulsar's TransactionInPendingAckStats.
type TxnInPendingAckStats struct {
	CumulativeAckPosition string   `json:"cumulativeAckPosition,omitempty"`
	IndividualAcks        []string `json:"individualAckPositions,omitempty"`
}

func (b *Broker) persistentTopic(ctx context.Context, topic string) (*topic, error) {
	t, err := b.loadedOrLoad(ctx, topic)
	if err != nil {
		return nil, err
	}
	if !t.persistent() {
		return nil, reason(ErrNotAllowed, "Transactions need a persistent topic")
	}
	return t, nil
}

// TxnBufferStats returns the transaction buffer statistics of a topic.
func (b *Broker) TxnBufferStats(ctx context.Context, topic string) (TxnBufferStats, error) {
	t, err := b.persistentTopic(ctx, topic)
	if err != nil {
		return TxnBufferStats{}, err
	}
	lac, ok := t.ml.LastConfirmed()
	if !ok { // empty: "<current ledger>:-1", as the internal stats say
		lac = toPos(t.ml.Stats().LastConfirmed)
	}
	st := TxnBufferStats{State: "NoSnapshot", MaxReadPosition: lac.String()}
	tb := t.txnBuf.Load()
	if tb == nil {
		return st, nil
	}
	st.State = "Ready"
	if bound, ok := tb.readBound(); ok {
		if p, ok := prevPosition(t.ml.Stats().Ledgers, bound); ok {
			st.MaxReadPosition = p.String()
		} else {
			st.MaxReadPosition = position{bound.LedgerID, bound.EntryID - 1}.String()
		}
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	st.LastSnapshotTimestamps = tb.lastSnap.UnixMilli()
	st.OngoingTxnSize = int64(len(tb.ongoing))
	st.AbortedTxnSize = int64(len(tb.aborted))
	st.CommittedTxnCount, st.AbortedTxnCount = tb.nCommitted, tb.nAborted
	st.RecoverStartTime, st.RecoverEndTime = tb.recoverStart.UnixMilli(), tb.recoverEnd.UnixMilli()
	return st, nil
}

// TxnInBufferStats returns what a topic's buffer knows of transaction
// id; ErrPreconditionFailed-free: an unknown id gives zero values.
func (b *Broker) TxnInBufferStats(ctx context.Context, topic string, id txn.ID) (TxnInBufferStats, error) {
	t, err := b.persistentTopic(ctx, topic)
	if err != nil {
		return TxnInBufferStats{}, err
	}
	var st TxnInBufferStats
	if tb := t.txnBuf.Load(); tb != nil {
		tb.mu.Lock()
		if o := tb.ongoing[id]; o != nil && !o.provisional {
			st.StartPosition = o.first.String()
		}
		_, st.Aborted = tb.aborted[id]
		tb.mu.Unlock()
	}
	return st, nil
}

func (b *Broker) txnSub(ctx context.Context, topic, sub string) (*subscription, error) {
	t, err := b.persistentTopic(ctx, topic)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	s := t.mu.subs[sub]
	t.mu.Unlock()
	if s == nil {
		return nil, reason(ErrSubscriptionNotFound, "Subscription not found")
	}
	return s, nil
}

// PendingAckStats returns the pending-ack statistics of a subscription.
func (b *Broker) PendingAckStats(ctx context.Context, topic, sub string) (PendingAckStats, error) {
	s, err := b.txnSub(ctx, topic, sub)
	if err != nil {
		return PendingAckStats{}, err
	}
	st := PendingAckStats{State: "None"}
	if !s.call(func() {
		pa := s.txnAcks
		if pa == nil {
			return
		}
		st.State = "Ready"
		st.OngoingTxnSize = int64(len(pa.txns))
		st.PendingAckedEntries = int64(len(pa.holds))
		st.CommittedTxnCount, st.AbortedTxnCount = pa.nCommit, pa.nAbort
		st.RecoverStartTime, st.RecoverEndTime = pa.recoverStart.UnixMilli(), pa.recoverEnd.UnixMilli()
	}) {
		return st, reason(ErrClosed, "Subscription is closed")
	}
	return st, nil
}

// TxnInPendingAckStats returns what transaction id holds on a
// subscription.
func (b *Broker) TxnInPendingAckStats(ctx context.Context, topic, sub string, id txn.ID) (TxnInPendingAckStats, error) {
	s, err := b.txnSub(ctx, topic, sub)
	if err != nil {
		return TxnInPendingAckStats{}, err
	}
	var st TxnInPendingAckStats
	var ps []position
	if !s.call(func() {
		if s.txnAcks == nil {
			return
		}
		ta := s.txnAcks.txns[id]
		if ta == nil {
			return
		}
		if ta.cum != nil {
			st.CumulativeAckPosition = ta.cum.String()
		}
		for p := range ta.whole {
			ps = append(ps, p)
		}
		for p := range ta.partial {
			ps = append(ps, p)
		}
	}) {
		return st, reason(ErrClosed, "Subscription is closed")
	}
	slices.SortFunc(ps, position.Compare)
	for _, p := range ps {
		st.IndividualAcks = append(st.IndividualAcks, fmt.Sprint(p))
	}
	return st, nil
}
