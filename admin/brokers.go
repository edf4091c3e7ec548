package admin

import (
	"net/http"

	"github.com/magnetar-mq/magnetar/auth"
)

// Broker-level routes pulsar-admin's "brokers" commands use. Readiness,
// health, the leader, the broker list and the namespace bundles are the
// broker's own routes (broker/cluster_http.go).

func (a *API) registerBrokerRoutes(rt routeTable) {
	// Dynamic configuration: Magnetar has no setting that can be changed
	// at run time, so the list of updatable names and the map of
	// overridden values are empty (pulsar-admin prints them as such).
	rt.Handle("GET", "/admin/v2/brokers/configuration", auth.AccessSuperUser, func(w http.ResponseWriter, _ *http.Request, _ params) {
		writeJSON(w, http.StatusOK, []string{})
	})
	rt.Handle("GET", "/admin/v2/brokers/configuration/values", auth.AccessSuperUser, func(w http.ResponseWriter, _ *http.Request, _ params) {
		writeJSON(w, http.StatusOK, map[string]string{})
	})
}
