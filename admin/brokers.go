package admin

import (
	"context"
	"errors"
	"net/http"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/dynconfig"
	"github.com/magnetar-mq/magnetar/httpapi"
)

// Broker-level routes pulsar-admin's "brokers" commands use: the
// broker's configuration (runtime values, internal configuration) and
// its dynamic configuration (package dynconfig). Readiness, health, the
// leader, the broker list and the namespace bundles are in cluster.go.
// Superuser only, as in Pulsar.

// BrokerConfig is the broker's configuration and dynamic configuration
// (*dynconfig.Config).
type BrokerConfig interface {
	// Names lists the keys that can be changed at run time.
	Names() []string
	// Values are the stored overrides.
	Values(ctx context.Context) (map[string]string, error)
	// Update stores and applies an override (dynconfig.ErrNotDynamic,
	// dynconfig.ErrBadValue).
	Update(ctx context.Context, name, value string) error
	// Delete removes an override (dynconfig.ErrNotDynamic).
	Delete(ctx context.Context, name string) error
	// Runtime is every configuration key with its value in force,
	// secrets left out.
	Runtime() map[string]string
	// Internal is Pulsar's InternalConfigurationData.
	Internal() dynconfig.InternalData
	// Watch calls fn with a dynamic key's override now (when set), on
	// every change and on its removal (set false); stop ends the calls.
	Watch(name string, fn func(value string, set bool)) (stop func())
}

func (a *API) registerBrokerRoutes(rt routeTable) {
	if a.conf == nil {
		return
	}
	const c = "/admin/v2/brokers/configuration"
	rt.Add(
		httpapi.Route{Method: "GET", Pattern: c, Access: auth.AccessSuperUser, Response: []string{},
			Handler: func(w http.ResponseWriter, _ *http.Request, _ params) { writeJSON(w, http.StatusOK, a.conf.Names()) }},
		httpapi.Route{Method: "GET", Pattern: c + "/values", Access: auth.AccessSuperUser, Response: map[string]string{},
			Handler: func(w http.ResponseWriter, r *http.Request, _ params) {
				v, err := a.conf.Values(r.Context())
				a.reply(w, v, err)
			}},
		httpapi.Route{Method: "GET", Pattern: c + "/runtime", Access: auth.AccessSuperUser, Response: map[string]string{},
			Handler: func(w http.ResponseWriter, _ *http.Request, _ params) { writeJSON(w, http.StatusOK, a.conf.Runtime()) }},
		httpapi.Route{Method: "POST", Pattern: c + "/{name}/{value}", Access: auth.AccessSuperUser,
			Handler: func(w http.ResponseWriter, r *http.Request, p params) {
				a.replyConfig(w, a.conf.Update(r.Context(), p["name"], p["value"]), http.StatusOK)
			}},
		httpapi.Route{Method: "DELETE", Pattern: c + "/{name}", Access: auth.AccessSuperUser,
			Handler: func(w http.ResponseWriter, r *http.Request, p params) {
				a.replyConfig(w, a.conf.Delete(r.Context(), p["name"]), http.StatusNoContent)
			}},
		httpapi.Route{Method: "GET", Pattern: "/admin/v2/brokers/internal-configuration", Access: auth.AccessSuperUser,
			Response: dynconfig.InternalData{},
			Handler:  func(w http.ResponseWriter, _ *http.Request, _ params) { writeJSON(w, http.StatusOK, a.conf.Internal()) }},
	)
}

// replyConfig answers a dynamic configuration write: done (Pulsar answers
// an update 200 with no body), or 412 for a key that cannot change at run
// time or a bad value, as Pulsar's.
func (a *API) replyConfig(w http.ResponseWriter, err error, done int) {
	switch {
	case err == nil:
		w.WriteHeader(done)
	case errors.Is(err, dynconfig.ErrNotDynamic):
		writeError(w, http.StatusPreconditionFailed, "Can't update non-dynamic configuration: "+err.Error())
	case errors.Is(err, dynconfig.ErrBadValue):
		writeError(w, http.StatusPreconditionFailed, "Invalid dynamic-config value: "+err.Error())
	default:
		a.replyDone(w, err)
	}
}
