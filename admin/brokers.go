package admin

import (
	"io"
	"net/http"
	"strings"
)

// Broker-level routes pulsar-admin's "brokers" commands use, and the
// namespace bundle routes. A Magnetar namespace has one bundle covering
// the whole hash range (fullBundle); unloading it, or the namespace,
// unloads every loaded topic of the namespace (clients reconnect).

// fullBundle is the one bundle of every namespace, in Pulsar's
// "0xLOWER_0xUPPER" notation.
const fullBundle = "0x00000000_0xffffffff"

func (a *API) registerBrokerRoutes(rt routeTable) {
	rt.Handle("GET", "/admin/v2/brokers/ready", func(w http.ResponseWriter, _ *http.Request, _ params) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok")
	})
	// This broker leads its cluster (one broker answers for it).
	rt.Handle("GET", "/admin/v2/brokers/leaderBroker", func(w http.ResponseWriter, _ *http.Request, _ params) {
		writeJSON(w, http.StatusOK, map[string]string{
			"serviceUrl": a.svc.WebURL(),
			"brokerId":   strings.TrimPrefix(a.svc.WebURL(), "http://"),
		})
	})
	// Dynamic configuration: Magnetar has no setting that can be changed
	// at run time, so the list of updatable names and the map of
	// overridden values are empty (pulsar-admin prints them as such).
	rt.Handle("GET", "/admin/v2/brokers/configuration", func(w http.ResponseWriter, _ *http.Request, _ params) {
		writeJSON(w, http.StatusOK, []string{})
	})
	rt.Handle("GET", "/admin/v2/brokers/configuration/values", func(w http.ResponseWriter, _ *http.Request, _ params) {
		writeJSON(w, http.StatusOK, map[string]string{})
	})
	rt.Handle("GET", "/admin/v2/namespaces/{tenant}/{ns}/bundles", func(w http.ResponseWriter, r *http.Request, p params) {
		if _, ok := a.nsFromParams(w, r, p); !ok {
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"boundaries": []string{"0x00000000", "0xffffffff"}, "numBundles": 1})
	})
	rt.Handle("PUT", "/admin/v2/namespaces/{tenant}/{ns}/unload", a.httpUnloadNamespace)
	rt.Handle("PUT", "/admin/v2/namespaces/{tenant}/{ns}/{bundle}/unload", a.httpUnloadNamespace)
}

// httpUnloadNamespace unloads every loaded topic of the namespace (the
// whole namespace, or its one bundle).
func (a *API) httpUnloadNamespace(w http.ResponseWriter, r *http.Request, p params) {
	ns, ok := a.nsFromParams(w, r, p)
	if !ok {
		return
	}
	if b, ok := p["bundle"]; ok && b != fullBundle {
		writeError(w, http.StatusPreconditionFailed, "Invalid bundle range "+b+": namespace "+ns+" has the one bundle "+fullBundle)
		return
	}
	topics, err := a.svc.TopicsOfNamespace(r.Context(), ns, true, true)
	if err != nil {
		serviceError(w, err)
		return
	}
	for _, t := range topics {
		if _, err := a.svc.UnloadTopic(t); err != nil {
			internalError(w, err)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}
