package admin

import (
	"errors"
	"net/http"
	"strings"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// ownerServed reports whether rt is an admin call on one topic
// (/admin/v2/{domain}/{tenant}/{ns}/{topic}/...) that the topic's owner
// must answer, and returns the topic. Calls on a partitioned topic's
// metadata (partitions, partitioned stats, missed partitions) and
// namespace listings are answered by any broker.
func ownerServed(rt *httpapi.Route, p params) (pulsarproto.TopicName, bool) {
	const topicPrefix = "/admin/v2/{domain}/{tenant}/{ns}/{topic}"
	rest, ok := strings.CutPrefix(rt.Pattern, topicPrefix)
	if !ok {
		return pulsarproto.TopicName{}, false
	}
	switch strings.SplitN(strings.TrimPrefix(rest, "/"), "/", 2)[0] {
	case "partitions", "partitioned-stats", "partitioned-internalStats", "createMissedPartitions":
		return pulsarproto.TopicName{}, false
	}
	d := p["domain"]
	if d != "persistent" && d != "non-persistent" {
		return pulsarproto.TopicName{}, false
	}
	tn, err := broker.ParseTopicName(d + "://" + p["tenant"] + "/" + p["ns"] + "/" + p["topic"])
	return tn, err == nil
}

// ownerRedirect, the table's interceptor, sends a clustered broker's
// topic admin calls to the broker that owns the topic's bundle with 307
// Temporary Redirect, as Pulsar's brokers do, and takes ownership here
// when this broker is chosen; it reports whether it answered.
// Partitioned topics are left to the handlers (their metadata lives in
// the metadata store; each partition is a topic of its own).
func (a *API) ownerRedirect(w http.ResponseWriter, r *http.Request, rt *httpapi.Route, p params) bool {
	cl := a.own.Cluster()
	if cl == nil {
		return false
	}
	tn, ok := ownerServed(rt, p)
	if !ok || tn.PartitionIndex < 0 && a.isPartitioned(r, tn) {
		return false
	}
	res, err := cl.Lookup(r.Context(), tn.String(), r.URL.Query().Get("authoritative") == "true")
	switch {
	case errors.Is(err, metadata.ErrNotFound):
		writeError(w, http.StatusNotFound, "Namespace does not exist")
		return true
	case errors.Is(err, cluster.ErrUnloading), errors.Is(err, cluster.ErrNotOwned), errors.Is(err, cluster.ErrNoBroker):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return true
	case err != nil:
		a.internalError(w, err)
		return true
	}
	base := res.Target.HTTPURL
	if r.TLS != nil && res.Target.HTTPURLTLS != "" {
		base = res.Target.HTTPURLTLS
	}
	if !res.Redirect && (base == a.node.WebURL() || base == a.own.WebURLTLS()) {
		return false
	}
	if base == "" {
		writeError(w, http.StatusServiceUnavailable, "the owner of "+tn.String()+" has no HTTP address")
		return true
	}
	q := r.URL.Query()
	if res.Authoritative {
		q.Set("authoritative", "true")
	}
	loc := base + r.URL.EscapedPath()
	if enc := q.Encode(); enc != "" {
		loc += "?" + enc
	}
	http.Redirect(w, r, loc, http.StatusTemporaryRedirect)
	return true
}

// isPartitioned reports whether tn is the base name of a partitioned
// topic (errors count as not partitioned: the handler reports them).
func (a *API) isPartitioned(r *http.Request, tn pulsarproto.TopicName) bool {
	n, err := a.topics.Partitions(r.Context(), tn.String())
	return err == nil && n > 0
}
