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

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/topicstats"
	"github.com/magnetar-mq/magnetar/txn"
	"github.com/magnetar-mq/magnetar/txn/coordinator"
)

// TxnCoordinators is what the transaction endpoints need of the
// coordinator side (*txn/server.Server has it).
type TxnCoordinators interface {
	TxnCoordinator(ctx context.Context, id uint64) (*coordinator.Coordinator, error)
	TxnCoordinatorCount() int
	LoadedTxnCoordinators() []uint64
	TxnLogStats(ctx context.Context, id uint64) (string, topicstats.InternalStats, error)
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
	// Pulsar's TransactionsBase checks no permission on these reads:
	// any authenticated role reaches them (pulsar-client-go's tests read
	// transactionMetadata as the anonymous role). They show ids, states
	// and the topic and subscription names a transaction touched, never
	// message data.
	rt.Handle("GET", base+"/coordinators", auth.AccessAny, txnValue(a, a.coordinatorURLs))
	rt.Handle("GET", base+"/coordinatorStats", auth.AccessAny, txnValue(a, coordinatorStats))
	rt.Handle("GET", base+"/transactionMetadata/{most}/{least}", auth.AccessAny, txnValue(a, transactionMetadata))
	rt.Handle("GET", base+"/slowTransactions/{timeout}", auth.AccessAny, txnValue(a, slowTransactions))
	rt.Handle("GET", base+"/coordinatorInternalStats/{id}", auth.AccessAny, txnValue(a, coordinatorInternalStats))
}

// txnValue serves a GET of the transaction side. Without a coordinator
// on this broker it answers 503, as Pulsar does: every
// /admin/v3/transactions call needs transactionCoordinatorEnabled on the
// broker asked.
func txnValue[T any](a *API, get func(r *http.Request, tc TxnCoordinators, p params) (T, error)) handler {
	return func(w http.ResponseWriter, r *http.Request, p params) {
		tc := a.coordinators
		if tc == nil || tc.TxnCoordinatorCount() == 0 {
			writeError(w, http.StatusServiceUnavailable, "This Broker is not configured with transactionCoordinatorEnabled=true.")
			return
		}
		v, err := get(r, tc, p)
		switch {
		case err == nil:
			writeJSON(w, http.StatusOK, v)
		case errors.Is(err, coordinator.ErrTxnNotFound), errors.Is(err, coordinator.ErrWrongCoordinator):
			writeError(w, http.StatusNotFound, err.Error())
		case errors.Is(err, broker.ErrTxnDisabled):
			writeError(w, http.StatusServiceUnavailable, err.Error())
		default:
			a.serviceError(w, err)
		}
	}
}

// parseID reads a transaction or coordinator id.
func parseID(s, what string) (uint64, error) {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, refuse(http.StatusPreconditionFailed, "Invalid %s: %s", what, s)
	}
	return v, nil
}

// txnIDOf reads the transaction id of the path ({most}/{least}).
func txnIDOf(p params) (txn.ID, error) {
	most, err := parseID(p["most"], "mostSigBits")
	if err != nil {
		return txn.ID{}, err
	}
	least, err := parseID(p["least"], "leastSigBits")
	return txn.ID{Most: most, Least: least}, err
}

// servedIDs are the coordinators this broker serves: all of them on a
// single node, the ones it has loaded in a cluster.
func servedIDs(tc TxnCoordinators) []uint64 {
	if tc.Cluster() != nil {
		return tc.LoadedTxnCoordinators()
	}
	ids := make([]uint64, tc.TxnCoordinatorCount())
	for i := range ids {
		ids[i] = uint64(i)
	}
	return ids
}

// coordinatorURLs maps every coordinator this broker serves to its
// service URL.
func (a *API) coordinatorURLs(_ *http.Request, tc TxnCoordinators, _ params) (map[string]string, error) {
	out := map[string]string{}
	for _, id := range servedIDs(tc) {
		out[strconv.FormatUint(id, 10)] = a.node.ServiceURL()
	}
	return out, nil
}

// eachCoordinator calls f on the coordinators a request covers:
// ?coordinatorId= when given, else the ones this broker serves.
func eachCoordinator(r *http.Request, tc TxnCoordinators, f func(id uint64, co *coordinator.Coordinator)) error {
	ids := servedIDs(tc)
	if s := r.URL.Query().Get("coordinatorId"); s != "" {
		id, err := parseID(s, "coordinatorId")
		if err != nil {
			return err
		}
		ids = []uint64{id}
	}
	for _, id := range ids {
		co, err := tc.TxnCoordinator(r.Context(), id)
		if err != nil {
			return err
		}
		f(id, co)
	}
	return nil
}

// coordinatorStats answers one coordinator's stats (?coordinatorId=),
// or every coordinator's by id.
func coordinatorStats(r *http.Request, tc TxnCoordinators, _ params) (any, error) {
	out := map[string]coordinator.Stats{}
	var last coordinator.Stats
	err := eachCoordinator(r, tc, func(id uint64, co *coordinator.Coordinator) {
		last = co.Stats()
		out[strconv.FormatUint(id, 10)] = last
	})
	if r.URL.Query().Get("coordinatorId") != "" {
		return last, err
	}
	return out, err
}

func transactionMetadata(r *http.Request, tc TxnCoordinators, p params) (txnMetadata, error) {
	id, err := txnIDOf(p)
	if err != nil {
		return txnMetadata{}, err
	}
	co, err := tc.TxnCoordinator(r.Context(), id.Most)
	if err != nil {
		return txnMetadata{}, err
	}
	info, err := co.Txn(id)
	return metadataOf(info), err
}

// slowTransactions lists the transactions open longer than {timeout} ms.
func slowTransactions(r *http.Request, tc TxnCoordinators, p params) (map[string]txnMetadata, error) {
	ms, err := strconv.ParseInt(p["timeout"], 10, 64)
	if err != nil || ms < 0 {
		return nil, refuse(http.StatusPreconditionFailed, "Invalid timeout (milliseconds): %s", p["timeout"])
	}
	age := time.Duration(min(ms, int64(1<<63-1)/int64(time.Millisecond))) * time.Millisecond
	out := map[string]txnMetadata{}
	err = eachCoordinator(r, tc, func(_ uint64, co *coordinator.Coordinator) {
		for _, in := range co.Slow(age) {
			out[in.ID.String()] = metadataOf(in)
		}
	})
	return out, err
}

func coordinatorInternalStats(r *http.Request, tc TxnCoordinators, p params) (map[string]any, error) {
	id, err := parseID(p["id"], "coordinatorId")
	if err != nil {
		return nil, err
	}
	name, st, err := tc.TxnLogStats(r.Context(), id)
	return map[string]any{"transactionLogStats": map[string]any{
		"managedLedgerName": name, "managedLedgerInternalStats": st,
	}}, err
}
