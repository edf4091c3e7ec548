package admin

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/ledgerinfo"
)

// A persistent topic's managed ledger (package ledgerinfo):
//
//	GET /admin/v2/persistent/{t}/{ns}/{topic}/internal-info           Pulsar's ManagedLedgerInfo; of a partitioned topic, one per partition by name
//	GET /admin/v2/persistent/{t}/{ns}/{topic}/messageid/{timestamp}   the first message written at or after timestamp (Unix ms)
//
// Both are Pulsar's: internal-info needs what stats need (lookup),
// messageid what peeking needs (consume). A non-persistent topic gets
// 405; messageid of a partitioned topic 405 too (ask a partition); of a
// topic with no ledgers 404 "Message ID not found".

// messageIDByTime is Pulsar's MessageIdImpl as its admin API writes it.
type messageIDByTime struct {
	LedgerID       int64 `json:"ledgerId"`
	EntryID        int64 `json:"entryId"`
	PartitionIndex int   `json:"partitionIndex"`
	BatchSize      int   `json:"batchSize"`
	BatchIndex     int   `json:"batchIndex"`
}

func (a *API) registerLedgerInfoRoutes(rt routeTable) {
	const tp = "/admin/v2/{domain}/{tenant}/{ns}/{topic}"
	rt.Add(httpapi.Route{Method: "GET", Pattern: tp + "/internal-info", Access: auth.AccessTopicLookup, Response: ledgerinfo.Info{},
		Handler: a.onTopic(func(w http.ResponseWriter, r *http.Request, topic string) {
			if a.ledgers == nil {
				writeError(w, http.StatusServiceUnavailable, "managed ledger information is not available on this broker")
				return
			}
			n, err := a.topics.Partitions(r.Context(), topic)
			if err != nil || n == 0 {
				info, err := a.ledgers.ManagedLedgerInfo(r.Context(), topic)
				a.reply(w, info, notPersistent(err, "Get internal info"))
				return
			}
			out := map[string]ledgerinfo.Info{}
			for i := range n {
				part := fmt.Sprintf("%s-partition-%d", topic, i)
				info, err := a.ledgers.ManagedLedgerInfo(r.Context(), part)
				if err != nil {
					a.serviceError(w, notPersistent(err, "Get internal info"))
					return
				}
				out[part] = info
			}
			writeJSON(w, http.StatusOK, out)
		})})
	rt.Add(httpapi.Route{Method: "GET", Pattern: tp + "/messageid/{timestamp}", Access: auth.AccessTopicConsume, Response: messageIDByTime{},
		Handler: func(w http.ResponseWriter, r *http.Request, p params) {
			ts, err := strconv.ParseInt(p["timestamp"], 10, 64)
			if err != nil {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("timestamp must be an integer (Unix ms), got %.40q", p["timestamp"]))
				return
			}
			topic, ok := a.topicFromParams(w, r, p)
			if !ok {
				return
			}
			if a.ledgers == nil {
				writeError(w, http.StatusServiceUnavailable, "managed ledger information is not available on this broker")
				return
			}
			if n, err := a.topics.Partitions(r.Context(), topic); err == nil && n > 0 {
				writeError(w, http.StatusMethodNotAllowed, "Get message ID by timestamp on a partitioned topic is not allowed, please try do it on specific topic partition")
				return
			}
			id, found, err := a.ledgers.MessageIDByTimestamp(r.Context(), topic, ts)
			switch {
			case err != nil:
				a.serviceError(w, notPersistent(err, "Get message ID by timestamp"))
			case !found:
				writeError(w, http.StatusNotFound, "Message ID not found")
			default:
				writeJSON(w, http.StatusOK, messageIDByTime{LedgerID: id.LedgerID, EntryID: id.EntryID,
					PartitionIndex: id.Partition, BatchIndex: -1})
			}
		}})
}

// notPersistent gives a refusal of a non-persistent topic Pulsar's
// wording.
func notPersistent(err error, what string) error {
	if err != nil && errors.Is(err, broker.ErrNotAllowed) {
		return refuse(http.StatusMethodNotAllowed, "%s on a non-persistent topic is not allowed", what)
	}
	return err
}
