package admin

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/policy"
)

// registerOffloadRoutes installs the tiered-storage endpoints: trigger
// and status of a topic's offload, and the namespace offload policies
// (the policies object and Pulsar's older separate fields).
func (a *API) registerOffloadRoutes(rt routeTable) {
	const tp = "/admin/v2/{domain}/{tenant}/{ns}/{topic}"
	rt.Handle("PUT", tp+"/offload", a.httpOffload)
	rt.Handle("GET", tp+"/offload", a.httpOffloadStatus)

	const base = "/admin/v2/namespaces/{tenant}/{ns}/"
	rt.Handle("GET", base+"offloadPolicies", a.getPolicy(func(p *policy.Policies) any { return p.OffloadPolicies }))
	rt.Handle("POST", base+"offloadPolicies", a.setPolicy(func(p *policy.Policies, body []byte) error {
		var o policy.OffloadPolicies
		if err := json.Unmarshal(body, &o); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		p.OffloadPolicies = &o
		return nil
	}))
	remove := a.setPolicy(func(p *policy.Policies, _ []byte) error { p.OffloadPolicies = nil; return nil })
	rt.Handle("DELETE", base+"removeOffloadPolicies", remove)
	rt.Handle("DELETE", base+"offloadPolicies", remove)

	longField := func(name string, field func(*policy.Policies) **int64, def *int64, min int64) {
		rt.Handle("GET", base+name, a.getPolicy(func(p *policy.Policies) any {
			if v := *field(p); v != nil {
				return *v
			}
			if def != nil {
				return *def
			}
			return nil
		}))
		set := a.setPolicy(func(p *policy.Policies, body []byte) error {
			n, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(string(body)), `"`), 10, 64)
			if err != nil {
				return errors.New("body must be an integer")
			}
			if n < min {
				return errors.New(name + " must be >= " + strconv.FormatInt(min, 10))
			}
			*field(p) = &n
			return nil
		})
		rt.Handle("PUT", base+name, set)
		rt.Handle("POST", base+name, set)
		rt.Handle("DELETE", base+name, a.setPolicy(func(p *policy.Policies, _ []byte) error { *field(p) = nil; return nil }))
	}
	minusOne := int64(-1)
	longField("offloadThreshold", func(p *policy.Policies) **int64 { return &p.OffloadThreshold }, &minusOne, -1)
	longField("offloadThresholdInSeconds", func(p *policy.Policies) **int64 { return &p.OffloadThresholdInSeconds }, &minusOne, -1)
	longField("offloadDeletionLagMs", func(p *policy.Policies) **int64 { return &p.OffloadDeletionLagMs }, nil, -1<<63)
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
	if err := a.svc.OffloadTopic(r.Context(), topic, broker.MessageID{LedgerID: id.LedgerID, EntryID: id.EntryID}); err != nil {
		serviceError(w, err)
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

func (a *API) httpOffloadStatus(w http.ResponseWriter, r *http.Request, p params) {
	topic, ok := a.topicFromParams(w, r, p)
	if !ok {
		return
	}
	s, err := a.svc.TopicOffloadStatus(r.Context(), topic)
	if err != nil {
		serviceError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, offloadStatusJSON{Status: s.Status, LastError: s.LastError,
		FirstUnoffloadedMessage: messageIDJSON{LedgerID: s.FirstUnoffloadedMessage.LedgerID, EntryID: s.FirstUnoffloadedMessage.EntryID, PartitionIndex: -1}})
}
