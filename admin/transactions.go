package admin

// Pulsar's /admin/v3/transactions endpoints of the coordinator side:
// coordinators, coordinatorStats, transactionMetadata, slowTransactions,
// coordinatorInternalStats. The participant side (transaction buffer and
// pending-ack stats) is in transactions_participants.go.

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/txn"
	"github.com/magnetar-mq/magnetar/txn/coordinator"
)

// txnCoordinators is what the transaction endpoints need of the service
// (*broker.Broker has it).
type txnCoordinators interface {
	TxnCoordinator(ctx context.Context, id uint64) (*coordinator.Coordinator, error)
	TxnCoordinatorCount() int
	LoadedTxnCoordinators() []uint64
	TxnLogStats(ctx context.Context, id uint64) (string, broker.InternalStats, error)
	Cluster() *cluster.Service
}

// txnMetadata is Pulsar's TransactionMetadata.
type txnMetadata struct {
	TxnID              string                               `json:"txnId"`
	Status             string                               `json:"status"`
	OpenTimestamp      int64                                `json:"openTimestamp"`
	TimeoutAt          int64                                `json:"timeoutAt"` // the timeout in ms, as Pulsar reports it
	ProducedPartitions map[string]map[string]any            `json:"producedPartitions"`
	AckedPartitions    map[string]map[string]map[string]any `json:"ackedPartitions"`
}

func metadataOf(in coordinator.Info) txnMetadata {
	m := txnMetadata{
		TxnID: in.ID.String(), Status: in.Status.String(), OpenTimestamp: in.OpenTimestamp,
		TimeoutAt:          in.Timeout.Milliseconds(),
		ProducedPartitions: map[string]map[string]any{},
		AckedPartitions:    map[string]map[string]map[string]any{},
	}
	for _, p := range in.Partitions {
		m.ProducedPartitions[p] = map[string]any{}
	}
	for _, s := range in.Subscriptions {
		if m.AckedPartitions[s.Topic] == nil {
			m.AckedPartitions[s.Topic] = map[string]map[string]any{}
		}
		m.AckedPartitions[s.Topic][s.Subscription] = map[string]any{}
	}
	return m
}

func (a *API) registerTransactionRoutes(rt routeTable) {
	const base = "/admin/v3/transactions"
	rt.Handle("GET", base+"/coordinators", a.txn(a.httpListCoordinators))
	rt.Handle("GET", base+"/coordinatorStats", a.txn(a.httpCoordinatorStats))
	rt.Handle("GET", base+"/transactionMetadata/{most}/{least}", a.txn(a.httpTransactionMetadata))
	rt.Handle("GET", base+"/slowTransactions/{timeout}", a.txn(a.httpSlowTransactions))
	rt.Handle("GET", base+"/coordinatorInternalStats/{id}", a.txn(a.httpCoordinatorInternalStats))
}

type txnHandler func(w http.ResponseWriter, r *http.Request, p params, tc txnCoordinators)

// txn answers 503 as Pulsar does when the broker runs no coordinator.
func (a *API) txn(h txnHandler) handler {
	return func(w http.ResponseWriter, r *http.Request, p params) {
		tc, ok := a.svc.(txnCoordinators)
		if !ok || tc.TxnCoordinatorCount() == 0 {
			writeError(w, http.StatusServiceUnavailable, "This Broker is not configured with transactionCoordinatorEnabled=true.")
			return
		}
		h(w, r, p, tc)
	}
}

func txnStatus(err error) int {
	switch {
	case errors.Is(err, coordinator.ErrTxnNotFound), errors.Is(err, coordinator.ErrWrongCoordinator):
		return http.StatusNotFound
	case errors.Is(err, broker.ErrTxnDisabled):
		return http.StatusServiceUnavailable
	}
	return statusOf(err)
}

// coordinatorIDs are the coordinators a listing covers: all of them on a
// single node, the ones this broker serves in a cluster.
func coordinatorIDs(tc txnCoordinators) []uint64 {
	if tc.Cluster() != nil {
		return tc.LoadedTxnCoordinators()
	}
	ids := make([]uint64, tc.TxnCoordinatorCount())
	for i := range ids {
		ids[i] = uint64(i)
	}
	return ids
}

func (a *API) httpListCoordinators(w http.ResponseWriter, r *http.Request, _ params, tc txnCoordinators) {
	out := map[string]string{}
	for _, id := range coordinatorIDs(tc) {
		out[strconv.FormatUint(id, 10)] = a.svc.ServiceURL()
	}
	writeJSON(w, http.StatusOK, out)
}

func parseID(w http.ResponseWriter, s, what string) (uint64, bool) {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		writeError(w, http.StatusPreconditionFailed, "Invalid "+what+": "+s)
		return 0, false
	}
	return v, true
}

func (a *API) httpCoordinatorStats(w http.ResponseWriter, r *http.Request, _ params, tc txnCoordinators) {
	ctx := r.Context()
	if s := r.URL.Query().Get("coordinatorId"); s != "" {
		id, ok := parseID(w, s, "coordinatorId")
		if !ok {
			return
		}
		co, err := tc.TxnCoordinator(ctx, id)
		if err != nil {
			writeError(w, txnStatus(err), err.Error())
			return
		}
		writeJSON(w, http.StatusOK, co.Stats())
		return
	}
	out := map[string]coordinator.Stats{}
	for _, id := range coordinatorIDs(tc) {
		co, err := tc.TxnCoordinator(ctx, id)
		if err != nil {
			writeError(w, txnStatus(err), err.Error())
			return
		}
		out[strconv.FormatUint(id, 10)] = co.Stats()
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *API) httpTransactionMetadata(w http.ResponseWriter, r *http.Request, p params, tc txnCoordinators) {
	most, ok := parseID(w, p["most"], "mostSigBits")
	if !ok {
		return
	}
	least, ok := parseID(w, p["least"], "leastSigBits")
	if !ok {
		return
	}
	co, err := tc.TxnCoordinator(r.Context(), most)
	if err != nil {
		writeError(w, txnStatus(err), err.Error())
		return
	}
	info, err := co.Txn(txn.ID{Most: most, Least: least})
	if err != nil {
		writeError(w, txnStatus(err), err.Error())
		return
	}
	writeJSON(w, http.StatusOK, metadataOf(info))
}

func (a *API) httpSlowTransactions(w http.ResponseWriter, r *http.Request, p params, tc txnCoordinators) {
	ms, err := strconv.ParseInt(p["timeout"], 10, 64)
	if err != nil || ms < 0 {
		writeError(w, http.StatusPreconditionFailed, "Invalid timeout (milliseconds): "+p["timeout"])
		return
	}
	age := time.Duration(min(ms, int64(1<<63-1)/int64(time.Millisecond))) * time.Millisecond
	ids := coordinatorIDs(tc)
	if s := r.URL.Query().Get("coordinatorId"); s != "" {
		id, ok := parseID(w, s, "coordinatorId")
		if !ok {
			return
		}
		ids = []uint64{id}
	}
	out := map[string]txnMetadata{}
	for _, id := range ids {
		co, err := tc.TxnCoordinator(r.Context(), id)
		if err != nil {
			writeError(w, txnStatus(err), err.Error())
			return
		}
		for _, in := range co.Slow(age) {
			out[in.ID.String()] = metadataOf(in)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *API) httpCoordinatorInternalStats(w http.ResponseWriter, r *http.Request, p params, tc txnCoordinators) {
	id, ok := parseID(w, p["id"], "coordinatorId")
	if !ok {
		return
	}
	name, st, err := tc.TxnLogStats(r.Context(), id)
	if err != nil {
		writeError(w, txnStatus(err), err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"transactionLogStats": map[string]any{
		"managedLedgerName": name, "managedLedgerInternalStats": st,
	}})
}
