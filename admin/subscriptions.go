package admin

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/topicreg"
)

func (a *API) registerSubscriptionRoutes(rt routeTable) {
	const sp = "/admin/v2/{domain}/{tenant}/{ns}/{topic}/subscription/{sub}"
	rt.Handle("PUT", sp, auth.AccessTenantAdmin, a.httpCreateSubscription)
	rt.Handle("DELETE", sp, auth.AccessTopicConsume, a.httpDeleteSubscription)
	rt.Handle("POST", sp+"/replicatedSubscriptionStatus", auth.AccessTenantAdmin, func(w http.ResponseWriter, r *http.Request, p params) {
		var on *bool
		if err := readJSONBody(r, &on); err != nil || on == nil {
			writeError(w, http.StatusBadRequest, "body must be true or false")
			return
		}
		a.forEachTarget(w, r, p, func(topic string) error {
			return a.subs.SetReplicatedSubscription(r.Context(), topic, p["sub"], *on)
		})
	})
	rt.Handle("POST", sp+"/skip/{n}", auth.AccessTopicConsume, func(w http.ResponseWriter, r *http.Request, p params) {
		n, err := strconv.ParseInt(p["n"], 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "skip count must be a non-negative integer")
			return
		}
		a.forEachTarget(w, r, p, func(topic string) error { return a.subs.SkipMessages(r.Context(), topic, p["sub"], n) })
	})
	rt.Handle("POST", sp+"/skip_all", auth.AccessTopicConsume, func(w http.ResponseWriter, r *http.Request, p params) {
		a.forEachTarget(w, r, p, func(topic string) error { return a.subs.SkipMessages(r.Context(), topic, p["sub"], -1) })
	})
	rt.Handle("POST", sp+"/expireMessages/{sec}", auth.AccessTopicConsume, func(w http.ResponseWriter, r *http.Request, p params) {
		sec, ok := expirySeconds(w, p)
		if !ok {
			return
		}
		a.forEachTarget(w, r, p, func(topic string) error { return a.subs.ExpireMessages(r.Context(), topic, p["sub"], sec) })
	})
	rt.Handle("POST", "/admin/v2/{domain}/{tenant}/{ns}/{topic}/all_subscription/expireMessages/{sec}", auth.AccessTopicConsume, func(w http.ResponseWriter, r *http.Request, p params) {
		sec, ok := expirySeconds(w, p)
		if !ok {
			return
		}
		a.forEachTarget(w, r, p, func(topic string) error { return a.subs.ExpireMessages(r.Context(), topic, "", sec) })
	})
	rt.Handle("POST", sp+"/resetcursor/{ts}", auth.AccessTopicConsume, func(w http.ResponseWriter, r *http.Request, p params) {
		ts, err := strconv.ParseInt(p["ts"], 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, "timestamp must be an integer (ms)")
			return
		}
		a.forEachTarget(w, r, p, func(topic string) error {
			return a.subs.ResetCursor(r.Context(), topic, p["sub"], broker.MessageID{}, true, ts)
		})
	})
	rt.Handle("POST", sp+"/resetcursor", auth.AccessTopicConsume, func(w http.ResponseWriter, r *http.Request, p params) {
		var raw struct {
			LedgerID       *int64 `json:"ledgerId"`
			EntryID        *int64 `json:"entryId"`
			PartitionIndex int    `json:"partitionIndex"`
		}
		if err := readRequiredJSON(r, &raw); err != nil {
			writeError(w, http.StatusBadRequest, "the body must be a message id {\"ledgerId\":L,\"entryId\":E}: "+err.Error())
			return
		}
		if raw.LedgerID == nil || raw.EntryID == nil {
			writeError(w, http.StatusBadRequest, "the message id needs ledgerId and entryId")
			return
		}
		id := messageIDJSON{LedgerID: *raw.LedgerID, EntryID: *raw.EntryID, PartitionIndex: raw.PartitionIndex}
		a.forEachTarget(w, r, p, func(topic string) error {
			return a.subs.ResetCursor(r.Context(), topic, p["sub"], fromJSONID(id), false, 0)
		})
	})
	rt.Handle("GET", sp+"/position/{n}", auth.AccessTopicConsume, a.httpPeek)
}

func expirySeconds(w http.ResponseWriter, p params) (int64, bool) {
	sec, err := strconv.ParseInt(p["sec"], 10, 64)
	if err != nil || sec < 0 || sec > policy.MaxInt32Value {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("expiry must be an integer between 0 and %d seconds", policy.MaxInt32Value))
		return 0, false
	}
	return sec, true
}

// fromJSONID maps a REST MessageId to the broker's; Earliest (-1:-1) and
// Latest (MaxInt64:MaxInt64) pass through as the broker's sentinels.
func fromJSONID(id messageIDJSON) broker.MessageID {
	return broker.MessageID{LedgerID: id.LedgerID, EntryID: id.EntryID, Partition: id.PartitionIndex, BatchIndex: -1}
}

// forEachTarget runs fn on the path's topic, or on every partition of a
// partitioned topic, answering 204 when all succeed.
func (a *API) forEachTarget(w http.ResponseWriter, r *http.Request, p params, fn func(topic string) error) {
	topic, ok := a.topicFromParams(w, r, p)
	if !ok {
		return
	}
	targets := []string{topic}
	if n, err := a.topics.Partitions(r.Context(), topic); err != nil {
		a.internalError(w, err)
		return
	} else if n > 0 {
		targets = targets[:0]
		for i := range n {
			targets = append(targets, partitionName(topic, i))
		}
	}
	for _, t := range targets {
		if err := fn(t); err != nil {
			a.serviceError(w, err)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) httpCreateSubscription(w http.ResponseWriter, r *http.Request, p params) {
	id := messageIDJSON{LedgerID: math.MaxInt64, EntryID: math.MaxInt64}
	if err := readJSONBody(r, &id); err != nil {
		writeError(w, http.StatusBadRequest, "bad message id: "+err.Error())
		return
	}
	replicated := r.URL.Query().Get("replicated") == "true"
	a.forEachTarget(w, r, p, func(topic string) error {
		if err := a.subs.CreateSubscription(r.Context(), topic, p["sub"], fromJSONID(id)); err != nil || !replicated {
			return err
		}
		return a.subs.SetReplicatedSubscription(r.Context(), topic, p["sub"], true)
	})
}

func (a *API) httpDeleteSubscription(w http.ResponseWriter, r *http.Request, p params) {
	force := r.URL.Query().Get("force") == "true"
	a.forEachTarget(w, r, p, func(topic string) error {
		return a.subs.DeleteSubscription(r.Context(), topic, p["sub"], force)
	})
}

// autoSubscriptionAllowed reports whether topic's applied policy (topic,
// namespace, then broker) allows creating a subscription automatically.
func (a *API) autoSubscriptionAllowed(r *http.Request, p params, topic string) (bool, error) {
	key, err := topicreg.TopicPolicyKey(topic)
	if err != nil {
		return false, err
	}
	tp, err := a.pol.GetTopic(r.Context(), key)
	if err != nil {
		return false, err
	}
	ns, err := a.pol.Get(r.Context(), nsOf(p))
	if err != nil {
		return false, err
	}
	return policy.Resolve(a.node.PolicyDefaults(), tp.Layer(a.node.ClusterName()), ns).AutoSubscriptionCreation, nil
}

// httpPeek returns the n-th (1-based) message of the subscription's
// backlog; a subscription that does not exist is created at the earliest
// message first, and a partitioned topic is peeked partition by
// partition (405 on the partitioned topic itself), as in Pulsar.
func (a *API) httpPeek(w http.ResponseWriter, r *http.Request, p params) {
	n, err := strconv.ParseInt(p["n"], 10, 64)
	if err != nil || n < 1 {
		writeError(w, http.StatusBadRequest, "position must be a positive integer")
		return
	}
	topic, ok := a.topicFromParams(w, r, p)
	if !ok {
		return
	}
	if parts, err := a.topics.Partitions(r.Context(), topic); err != nil {
		a.internalError(w, err)
		return
	} else if parts > 0 {
		writeError(w, http.StatusMethodNotAllowed, "Peek messages on a partitioned topic is not allowed")
		return
	}
	id, data, err := a.subs.PeekMessage(r.Context(), topic, p["sub"], n)
	if errors.Is(err, broker.ErrSubscriptionNotFound) {
		// Pulsar creates the subscription a peek names, at the
		// earliest message, and peeks it; since apache/pulsar#26279
		// not where the topic's auto subscription creation is off.
		if allowed, aerr := a.autoSubscriptionAllowed(r, p, topic); aerr != nil {
			a.internalError(w, aerr)
			return
		} else if !allowed {
			writeError(w, http.StatusPreconditionFailed, "Subscription "+p["sub"]+" not found and auto subscription creation is disabled")
			return
		}
		err = a.subs.CreateSubscription(r.Context(), topic, p["sub"], broker.MessageID{LedgerID: -1, EntryID: -1, BatchIndex: -1})
		if err == nil || errors.Is(err, broker.ErrAlreadyExists) {
			id, data, err = a.subs.PeekMessage(r.Context(), topic, p["sub"], n)
		}
	}
	if errors.Is(err, broker.ErrNotAllowed) {
		writeError(w, http.StatusMethodNotAllowed, "peek is not supported on this subscription")
		return
	}
	if err != nil {
		a.serviceError(w, err)
		return
	}
	a.writeRawMessage(w, id, data)
}
