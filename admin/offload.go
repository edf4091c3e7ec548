package admin

import (
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker"
)

// registerOffloadRoutes installs the trigger and status of a topic's
// offload to tiered storage (the offload policies are policy values:
// policies.go, topicpolicies.go).
func (a *API) registerOffloadRoutes(rt routeTable) {
	if a.offloads == nil {
		return
	}
	const tp = "/admin/v2/{domain}/{tenant}/{ns}/{topic}"
	rt.Handle("PUT", tp+"/offload", auth.AccessTenantAdmin, a.httpOffload)
	rt.Handle("GET", tp+"/offload", auth.AccessTenantAdmin, topicValue(a, a.offloadStatus))

}

func (a *API) httpOffload(w http.ResponseWriter, r *http.Request, p params) {
	topic, ok := a.topicFromParams(w, r, p)
	if !ok {
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var id messageIDJSON
	if err := json.Unmarshal(body, &id); err != nil {
		writeError(w, http.StatusBadRequest, "body must be a MessageId: "+err.Error())
		return
	}
	if err := a.offloads.OffloadTopic(r.Context(), topic, broker.MessageID{LedgerID: id.LedgerID, EntryID: id.EntryID}); err != nil {
		a.serviceError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// offloadStatusJSON is Pulsar's OffloadProcessStatus.
type offloadStatusJSON struct {
	Status                  string        `json:"status"`
	LastError               string        `json:"lastError"`
	FirstUnoffloadedMessage messageIDJSON `json:"firstUnoffloadedMessage"`
}

// offloadStatus is a topic's last offload as Pulsar answers it.
func (a *API) offloadStatus(ctx context.Context, topic string) (offloadStatusJSON, error) {
	s, err := a.offloads.TopicOffloadStatus(ctx, topic)
	return offloadStatusJSON{Status: s.Status, LastError: s.LastError,
		FirstUnoffloadedMessage: messageIDJSON{LedgerID: s.FirstUnoffloadedMessage.LedgerID, EntryID: s.FirstUnoffloadedMessage.EntryID, PartitionIndex: -1}}, err
}
