package broker

import (
	"net/http"
	"strconv"
)

// registerRoutes installs the broker's own HTTP endpoints: topic lookup
// and /metrics. The admin REST API (package admin) is added through
// Router before Start.
func (b *Broker) registerRoutes(rt *Router) {
	rt.Handle("GET", "/lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}", b.httpLookup)
	b.registerClusterRoutes(rt)
	m := b.metricsHandler()
	rt.Handle("GET", "/metrics", m)
	rt.Handle("GET", "/metrics/", m)
}

// TopicFromParams canonicalises the {domain}/{tenant}/{ns}/{topic} path
// parameters, writing a 4xx and returning ok=false on bad input.
func TopicFromParams(w http.ResponseWriter, p Params) (topicName, bool) {
	d := p["domain"]
	if d != "persistent" && d != "non-persistent" {
		WriteError(w, http.StatusNotFound, "unknown topic domain "+strconv.Quote(d))
		return topicName{}, false
	}
	tn, err := parseTopicName(d + "://" + p["tenant"] + "/" + p["ns"] + "/" + p["topic"])
	if err != nil {
		WriteError(w, http.StatusPreconditionFailed, err.Error())
		return topicName{}, false
	}
	return tn, true
}

func (b *Broker) httpLookup(w http.ResponseWriter, r *http.Request, p Params) {
	tn, ok := TopicFromParams(w, p)
	if !ok {
		return
	}
	exists, err := b.reg.namespaceExists(r.Context(), tn.NamespaceName())
	if err != nil {
		WriteError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if !exists {
		WriteError(w, http.StatusNotFound, "Namespace does not exist")
		return
	}
	if b.cluster != nil {
		b.httpClusterLookup(w, r, tn)
		return
	}
	plain, _ := b.lookupURLs()
	WriteJSON(w, http.StatusOK, map[string]string{
		"brokerUrl":    plain,
		"brokerUrlTls": b.ServiceURLTLS(),
		"httpUrl":      b.webURL(),
		"httpUrlTls":   b.WebURLTLS(),
		"nativeUrl":    plain,
	})
}
