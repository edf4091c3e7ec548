package broker

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/metadata"
)

// topicAdminPath reports whether the request is an admin call on one
// topic (/admin/v2/{persistent|non-persistent}/{tenant}/{ns}/{topic}/...)
// that the topic's owner must answer, and returns the topic. Calls on the
// partitioned topic's metadata (/partitions, partitioned-stats, ...) and
// namespace listings are answered by any broker.
func topicAdminPath(r *http.Request) (topicName, bool) {
	raw := strings.Split(strings.Trim(r.URL.EscapedPath(), "/"), "/")
	if len(raw) < 6 || raw[0] != "admin" || raw[1] != "v2" || (raw[2] != "persistent" && raw[2] != "non-persistent") {
		return topicName{}, false
	}
	if len(raw) > 6 {
		switch raw[6] {
		case "partitions", "partitioned-stats", "partitioned-internalStats", "createMissedPartitions":
			return topicName{}, false
		}
	}
	seg := make([]string, 4)
	for i := range seg {
		s, err := url.PathUnescape(raw[2+i])
		if err != nil {
			return topicName{}, false
		}
		seg[i] = s
	}
	tn, err := parseTopicName(seg[0] + "://" + seg[1] + "/" + seg[2] + "/" + seg[3])
	if err != nil {
		return topicName{}, false
	}
	return tn, true
}

// ownerRedirect sends topic admin calls to the broker that owns the
// topic's bundle with 307 Temporary Redirect, as Pulsar's brokers do, and
// takes ownership here when this broker is chosen. Partitioned topics are
// left to the handlers (their metadata lives in the metadata store; each
// partition is a topic of its own).
func (b *Broker) ownerRedirect(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b.cluster == nil {
			next.ServeHTTP(w, r)
			return
		}
		tn, ok := topicAdminPath(r)
		if !ok || tn.PartitionIndex < 0 && b.isPartitioned(r, tn) {
			next.ServeHTTP(w, r)
			return
		}
		auth := r.URL.Query().Get("authoritative") == "true"
		res, err := b.cluster.Lookup(r.Context(), tn.String(), auth)
		switch {
		case errors.Is(err, metadata.ErrNotFound):
			WriteError(w, http.StatusNotFound, "Namespace does not exist")
			return
		case errors.Is(err, cluster.ErrUnloading), errors.Is(err, cluster.ErrNotOwned), errors.Is(err, cluster.ErrNoBroker):
			w.Header().Set("Retry-After", "1")
			WriteError(w, http.StatusServiceUnavailable, err.Error())
			return
		case err != nil:
			WriteError(w, http.StatusInternalServerError, err.Error())
			return
		}
		base := res.Target.HTTPURL
		if r.TLS != nil && res.Target.HTTPURLTLS != "" {
			base = res.Target.HTTPURLTLS
		}
		if !res.Redirect && (base == b.webURL() || base == b.WebURLTLS()) {
			next.ServeHTTP(w, r)
			return
		}
		if base == "" {
			WriteError(w, http.StatusServiceUnavailable, "the owner of "+tn.String()+" has no HTTP address")
			return
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
	})
}

// isPartitioned reports whether tn is the base name of a partitioned
// topic (errors count as not partitioned: the handler reports them).
func (b *Broker) isPartitioned(r *http.Request, tn topicName) bool {
	n, err := b.Partitions(r.Context(), tn.String())
	return err == nil && n > 0
}
