package admin

// Pulsar's /admin/v3/transactions endpoints of the participant side:
// transactionBufferStats, transactionInBufferStats, pendingAckStats,
// transactionInPendingAckStats (persistent topics; the path names
// tenant/namespace/topic as in Pulsar's v3 API). The coordinator side is
// in transactions.go.

import (
	"context"
	"net/http"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/txn"
)

// txnParticipants is what these endpoints need of the service
// (*broker.Broker has it).
type txnParticipants interface {
	TxnBufferStats(ctx context.Context, topic string) (broker.TxnBufferStats, error)
	TxnInBufferStats(ctx context.Context, topic string, id txn.ID) (broker.TxnInBufferStats, error)
	PendingAckStats(ctx context.Context, topic, sub string) (broker.PendingAckStats, error)
	TxnInPendingAckStats(ctx context.Context, topic, sub string, id txn.ID) (broker.TxnInPendingAckStats, error)
}

func (a *API) registerTransactionParticipantRoutes(rt routeTable) {
	const base = "/admin/v3/transactions"
	const tp = "/{tenant}/{namespace}/{topic}"
	rt.Handle("GET", base+"/transactionBufferStats"+tp, a.participant(a.httpTxnBufferStats))
	rt.Handle("GET", base+"/transactionInBufferStats"+tp+"/{most}/{least}", a.participant(a.httpTxnInBufferStats))
	rt.Handle("GET", base+"/pendingAckStats"+tp+"/{sub}", a.participant(a.httpPendingAckStats))
	rt.Handle("GET", base+"/transactionInPendingAckStats"+tp+"/{sub}/{most}/{least}", a.participant(a.httpTxnInPendingAckStats))
}

type participantHandler func(w http.ResponseWriter, r *http.Request, p params, tp txnParticipants, topic string)

func (a *API) participant(h participantHandler) handler {
	return func(w http.ResponseWriter, r *http.Request, p params) {
		tp, ok := a.svc.(txnParticipants)
		tc, coord := a.svc.(txnCoordinators)
		if !ok || !coord || tc.TxnCoordinatorCount() == 0 {
			// As Pulsar: every /admin/v3/transactions call needs
			// transactionCoordinatorEnabled on the broker asked.
			writeError(w, http.StatusServiceUnavailable, "This Broker is not configured with transactionCoordinatorEnabled=true.")
			return
		}
		h(w, r, p, tp, "persistent://"+p["tenant"]+"/"+p["namespace"]+"/"+p["topic"])
	}
}

func txnIDOf(w http.ResponseWriter, p params) (txn.ID, bool) {
	most, ok := parseID(w, p["most"], "mostSigBits")
	if !ok {
		return txn.ID{}, false
	}
	least, ok := parseID(w, p["least"], "leastSigBits")
	return txn.ID{Most: most, Least: least}, ok
}

func (a *API) httpTxnBufferStats(w http.ResponseWriter, r *http.Request, _ params, tp txnParticipants, topic string) {
	st, err := tp.TxnBufferStats(r.Context(), topic)
	if err != nil {
		serviceError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (a *API) httpTxnInBufferStats(w http.ResponseWriter, r *http.Request, p params, tp txnParticipants, topic string) {
	id, ok := txnIDOf(w, p)
	if !ok {
		return
	}
	st, err := tp.TxnInBufferStats(r.Context(), topic, id)
	if err != nil {
		serviceError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (a *API) httpPendingAckStats(w http.ResponseWriter, r *http.Request, p params, tp txnParticipants, topic string) {
	st, err := tp.PendingAckStats(r.Context(), topic, p["sub"])
	if err != nil {
		serviceError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (a *API) httpTxnInPendingAckStats(w http.ResponseWriter, r *http.Request, p params, tp txnParticipants, topic string) {
	id, ok := txnIDOf(w, p)
	if !ok {
		return
	}
	st, err := tp.TxnInPendingAckStats(r.Context(), topic, p["sub"], id)
	if err != nil {
		serviceError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}
