package server

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/brokercluster"
	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/topicstats"
	"github.com/magnetar-mq/magnetar/txn"
	"github.com/magnetar-mq/magnetar/txn/coordinator"
)

// Participant statistics for Pulsar's /admin/v3/transactions
// transactionBufferStats, pendingAckStats, transactionInBufferStats and
// transactionInPendingAckStats (admin/transactions_participants.go), and the coordinator side the
// admin API asks the Server for (admin/transactions.go).

// BufferStats is Pulsar's TransactionBufferStats.
type BufferStats struct {
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

// InBufferStats is Pulsar's TransactionInBufferStats.
type InBufferStats struct {
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

// InPendingAckStats is Pulsar's TransactionInPendingAckStats.
type InPendingAckStats struct {
	CumulativeAckPosition string   `json:"cumulativeAckPosition,omitempty"`
	IndividualAcks        []string `json:"individualAckPositions,omitempty"`
}

// persistentTopic returns a persistent topic's transaction state,
// loading the topic if it exists.
func (s *Server) persistentTopic(ctx context.Context, topic string) (*topicTxn, error) {
	t, err := s.b.Topic(ctx, topic)
	if err != nil {
		return nil, err
	}
	tt := s.topics.Get(t)
	if tt == nil {
		return nil, broker.Reason(broker.ErrNotAllowed, "Transactions need a persistent topic")
	}
	return tt, nil
}

// TxnBufferStats returns the transaction buffer statistics of a topic.
func (s *Server) TxnBufferStats(ctx context.Context, topic string) (BufferStats, error) {
	tt, err := s.persistentTopic(ctx, topic)
	if err != nil {
		return BufferStats{}, err
	}
	ml := tt.t.Ledger()
	lac, ok := ml.LastConfirmed()
	if !ok { // empty: "<current ledger>:-1", as the internal stats say
		l := ml.Stats().LastConfirmed
		lac = l
	}
	st := BufferStats{State: "NoSnapshot", MaxReadPosition: lac.String()}
	tb := tt.buf.Load()
	if tb == nil {
		return st, nil
	}
	st.State = "Ready"
	if bound, ok := tb.readBound(); ok {
		if p, ok := tt.t.PositionBefore(bound); ok {
			st.MaxReadPosition = p.String()
		} else {
			st.MaxReadPosition = storage.Position{LedgerID: bound.LedgerID, EntryID: bound.EntryID - 1}.String()
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

// TxnInBufferStats returns what a topic's buffer knows of transaction id
// (zero values for an unknown id).
func (s *Server) TxnInBufferStats(ctx context.Context, topic string, id txn.ID) (InBufferStats, error) {
	tt, err := s.persistentTopic(ctx, topic)
	if err != nil {
		return InBufferStats{}, err
	}
	var st InBufferStats
	if tb := tt.buf.Load(); tb != nil {
		tb.mu.Lock()
		if o := tb.ongoing[id]; o != nil && !o.provisional {
			st.StartPosition = o.first.String()
		}
		_, st.Aborted = tb.aborted[id]
		tb.mu.Unlock()
	}
	return st, nil
}

func (s *Server) subscription(ctx context.Context, topic, sub string) (broker.Subscription, error) {
	tt, err := s.persistentTopic(ctx, topic)
	if err != nil {
		return broker.Subscription{}, err
	}
	v, ok := tt.t.Subscription(sub)
	if !ok {
		return broker.Subscription{}, broker.Reason(broker.ErrSubscriptionNotFound, "Subscription not found")
	}
	return v, nil
}

// PendingAckStats returns the pending-ack statistics of a subscription.
func (s *Server) PendingAckStats(ctx context.Context, topic, sub string) (PendingAckStats, error) {
	v, err := s.subscription(ctx, topic, sub)
	if err != nil {
		return PendingAckStats{}, err
	}
	st := PendingAckStats{State: "None"}
	if !v.Call(func(sl broker.SubLoop) {
		pa := s.subs.Get(sl)
		if pa == nil {
			return
		}
		st.State = "Ready"
		st.OngoingTxnSize = int64(len(pa.txns))
		st.PendingAckedEntries = int64(len(pa.holds))
		st.CommittedTxnCount, st.AbortedTxnCount = pa.nCommit, pa.nAbort
		st.RecoverStartTime, st.RecoverEndTime = pa.recoverStart.UnixMilli(), pa.recoverEnd.UnixMilli()
	}) {
		return st, broker.Reason(broker.ErrClosed, "Subscription is closed")
	}
	return st, nil
}

// TxnInPendingAckStats returns what transaction id holds on a subscription.
func (s *Server) TxnInPendingAckStats(ctx context.Context, topic, sub string, id txn.ID) (InPendingAckStats, error) {
	v, err := s.subscription(ctx, topic, sub)
	if err != nil {
		return InPendingAckStats{}, err
	}
	var st InPendingAckStats
	var ps []storage.Position
	if !v.Call(func(sl broker.SubLoop) {
		pa := s.subs.Get(sl)
		if pa == nil {
			return
		}
		ta := pa.txns[id]
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
		return st, broker.Reason(broker.ErrClosed, "Subscription is closed")
	}
	slices.SortFunc(ps, storage.Position.Compare)
	for _, p := range ps {
		st.IndividualAcks = append(st.IndividualAcks, fmt.Sprint(p))
	}
	return st, nil
}

// TxnCoordinator returns coordinator id, loading it if needed.
func (s *Server) TxnCoordinator(ctx context.Context, id uint64) (*coordinator.Coordinator, error) {
	return s.tc.get(ctx, id)
}

// TxnCoordinatorCount returns the partitions of the assign topic.
func (s *Server) TxnCoordinatorCount() int { return s.tc.n }

// LoadedTxnCoordinators lists the ids of the coordinators this broker
// serves now, ascending.
func (s *Server) LoadedTxnCoordinators() []uint64 { return s.tc.loaded() }

// Cluster returns the broker's cluster membership (nil on a single
// node): the coordinators a listing covers depend on it.
func (s *Server) Cluster() *cluster.Service { return brokercluster.Service(s.b) }

// TxnLogStats is a coordinator log's managed-ledger name and internal stats
// (Pulsar's coordinatorInternalStats).
func (s *Server) TxnLogStats(ctx context.Context, id uint64) (string, topicstats.InternalStats, error) {
	if _, err := s.tc.get(ctx, id); err != nil {
		return "", topicstats.InternalStats{}, err
	}
	s.tc.mu.Lock()
	l := s.tc.mu.coords[id]
	s.tc.mu.Unlock()
	if l == nil || l.log == nil {
		return "", topicstats.InternalStats{}, fmt.Errorf("%w: transaction coordinator %d was unloaded", coordinator.ErrClosed, id)
	}
	// Pulsar's managed-ledger naming: tenant/namespace/domain/local.
	name := "pulsar/system/persistent/" + strings.TrimPrefix(l.log.name, "persistent://pulsar/system/")
	return name, topicstats.Ledger(l.log.ml.Stats()), nil
}
