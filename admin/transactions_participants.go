package admin

// Pulsar's /admin/v3/transactions endpoints of the participant side:
// transactionBufferStats, transactionInBufferStats, pendingAckStats,
// transactionInPendingAckStats (persistent topics; the path names
// tenant/namespace/topic as in Pulsar's v3 API). The coordinator side is
// in transactions.go.

import (
	"context"
	"net/http"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/txn"
	"github.com/magnetar-mq/magnetar/txn/server"
)

// TxnParticipants is what these endpoints need of the participant side
// (*txn/server.Server has it).
type TxnParticipants interface {
	TxnBufferStats(ctx context.Context, topic string) (server.BufferStats, error)
	TxnInBufferStats(ctx context.Context, topic string, id txn.ID) (server.InBufferStats, error)
	PendingAckStats(ctx context.Context, topic, sub string) (server.PendingAckStats, error)
	TxnInPendingAckStats(ctx context.Context, topic, sub string, id txn.ID) (server.InPendingAckStats, error)
}

func (a *API) registerTransactionParticipantRoutes(rt routeTable) {
	const base = "/admin/v3/transactions"
	const tp = "/{tenant}/{namespace}/{topic}"
	rt.Handle("GET", base+"/transactionBufferStats"+tp, auth.AccessAny,
		participantValue(a, func(ctx context.Context, tp TxnParticipants, topic string, _ params) (server.BufferStats, error) {
			return tp.TxnBufferStats(ctx, topic)
		}))
	rt.Handle("GET", base+"/transactionInBufferStats"+tp+"/{most}/{least}", auth.AccessAny,
		participantValue(a, func(ctx context.Context, tp TxnParticipants, topic string, p params) (server.InBufferStats, error) {
			id, err := txnIDOf(p)
			if err != nil {
				return server.InBufferStats{}, err
			}
			return tp.TxnInBufferStats(ctx, topic, id)
		}))
	rt.Handle("GET", base+"/pendingAckStats"+tp+"/{sub}", auth.AccessAny,
		participantValue(a, func(ctx context.Context, tp TxnParticipants, topic string, p params) (server.PendingAckStats, error) {
			return tp.PendingAckStats(ctx, topic, p["sub"])
		}))
	rt.Handle("GET", base+"/transactionInPendingAckStats"+tp+"/{sub}/{most}/{least}", auth.AccessAny,
		participantValue(a, func(ctx context.Context, tp TxnParticipants, topic string, p params) (server.InPendingAckStats, error) {
			id, err := txnIDOf(p)
			if err != nil {
				return server.InPendingAckStats{}, err
			}
			return tp.TxnInPendingAckStats(ctx, topic, p["sub"], id)
		}))
}

// participantValue serves a GET of the participant side about the path's
// persistent topic (503 without transactions, as txnValue).
func participantValue[T any](a *API, get func(ctx context.Context, tp TxnParticipants, topic string, p params) (T, error)) handler {
	return txnValue(a, func(r *http.Request, _ TxnCoordinators, p params) (T, error) {
		if a.participants == nil {
			var zero T
			return zero, broker.ErrTxnDisabled
		}
		return get(r.Context(), a.participants, "persistent://"+p["tenant"]+"/"+p["namespace"]+"/"+p["topic"], p)
	})
}
