package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/magnetar-mq/magnetar/isolation"
	"github.com/magnetar-mq/magnetar/policy"
)

// A cluster's failure domains and namespace isolation policies
// (/admin/v2/clusters/{cluster}/failureDomains and
// /namespaceIsolationPolicies), superuser only, with Pulsar's status
// codes: a missing cluster is 412 (404 for the policies' list), a
// broker in two domains 409, a policy Pulsar's validation refuses 400.
// The placement that honours them is the cluster package's.

func (a *API) registerIsolationRoutes(rt routeTable) {
	const c = "/admin/v2/clusters/{cluster}"
	const nip = c + "/namespaceIsolationPolicies"
	superResource{List: c + "/failureDomains", Item: c + "/failureDomains/{domain}",
		ListType: map[string]isolation.FailureDomain{}, ItemType: isolation.FailureDomain{},
		GetAll: a.httpFailureDomains, Get: a.httpFailureDomain(),
		Set: a.httpSetFailureDomain(), Delete: a.httpDeleteFailureDomain()}.add(rt)
	superResource{List: nip, Item: nip + "/{policy}",
		ListType: map[string]isolation.Policy{}, ItemType: isolation.Policy{},
		GetAll: a.httpIsolationPolicies(), Get: a.httpIsolationPolicy(),
		Set: a.httpSetIsolationPolicy(), Delete: a.httpDeleteIsolationPolicy()}.add(rt)
	superResource{List: nip + "/brokers", Item: nip + "/brokers/{broker}",
		ListType: []isolation.BrokerData{}, ItemType: isolation.BrokerData{},
		GetAll: a.httpIsolationBrokers(), Get: a.httpIsolationBroker()}.add(rt)
}

// isolationCluster checks the isolation role is there, the names of the
// path are valid and the cluster exists (missing: status, Pulsar's
// 412 or 404 depending on the route).
func (a *API) isolationCluster(w http.ResponseWriter, r *http.Request, p params, missing int, names ...string) (string, bool) {
	if a.iso == nil {
		writeError(w, http.StatusServiceUnavailable, "failure domains and isolation policies are not available on this broker")
		return "", false
	}
	cluster := p["cluster"]
	for _, n := range names {
		if !policy.ValidName(p[n]) {
			writeError(w, http.StatusPreconditionFailed, "invalid "+n+" name "+strconv.Quote(p[n]))
			return "", false
		}
	}
	if _, err := a.pol.Cluster(r.Context(), cluster); errors.Is(err, policy.ErrClusterNotFound) {
		writeError(w, missing, "Cluster "+cluster+" does not exist.")
		return "", false
	} else if err != nil {
		a.internalError(w, err)
		return "", false
	}
	return cluster, true
}

// isolationError answers the isolation store's errors.
func (a *API) isolationError(w http.ResponseWriter, err error) {
	var bad *isolation.InvalidError
	var own *isoStatus
	switch {
	case errors.Is(err, isolation.ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, isolation.ErrConflict):
		writeError(w, http.StatusConflict, err.Error())
	case errors.Is(err, isolation.ErrNotEmpty):
		writeError(w, http.StatusPreconditionFailed, "Cluster not empty")
	case errors.As(err, &bad):
		writeError(w, http.StatusBadRequest, bad.Error())
	case errors.As(err, &own):
		writeError(w, own.code, own.text)
	default:
		a.internalError(w, err)
	}
}

func (a *API) httpFailureDomains(w http.ResponseWriter, r *http.Request, p params) {
	if a.iso == nil {
		writeError(w, http.StatusServiceUnavailable, "failure domains are not available on this broker")
		return
	}
	if !policy.ValidName(p["cluster"]) {
		writeJSON(w, http.StatusOK, map[string]isolation.FailureDomain{})
		return
	}
	// Pulsar lists without checking the cluster: none is {}.
	ds, err := a.iso.FailureDomains(r.Context(), p["cluster"])
	if err != nil {
		a.isolationError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ds)
}

// isoStatus is a refusal of the handler's own: the status and text.
type isoStatus struct {
	code int
	text string
}

func (e *isoStatus) Error() string { return e.text }

// onIsolation serves an isolation route: the cluster of the path
// (isolationCluster, answering missing when it does not exist, names
// validated), then fn, whose answer is its status with its value as JSON
// (nil: no body), or its error by isolationError.
func (a *API) onIsolation(missing int, names []string, fn func(r *http.Request, p params, cluster string) (int, any, error)) handler {
	return func(w http.ResponseWriter, r *http.Request, p params) {
		cluster, ok := a.isolationCluster(w, r, p, missing, names...)
		if !ok {
			return
		}
		switch status, v, err := fn(r, p, cluster); {
		case err != nil:
			a.isolationError(w, err)
		case v == nil:
			w.WriteHeader(status)
		default:
			writeJSON(w, status, v)
		}
	}
}

// isoOK answers v with 200.
func isoOK[T any](v T, err error) (int, any, error) { return http.StatusOK, v, err }

var (
	domainName = []string{"domain"}
	policyName = []string{"policy"}
)

func (a *API) httpFailureDomain() handler {
	return a.onIsolation(http.StatusPreconditionFailed, domainName, func(r *http.Request, p params, cluster string) (int, any, error) {
		return isoOK(a.iso.FailureDomain(r.Context(), cluster, p["domain"]))
	})
}

func (a *API) httpSetFailureDomain() handler {
	return a.onIsolation(http.StatusPreconditionFailed, domainName, func(r *http.Request, p params, cluster string) (int, any, error) {
		var d isolation.FailureDomain
		if err := readJSONBody(r, &d); err != nil {
			return 0, nil, &isoStatus{http.StatusBadRequest, "body must be a FailureDomain: {\"brokers\":[...]}"}
		}
		return http.StatusNoContent, nil, a.iso.SetFailureDomain(r.Context(), cluster, p["domain"], d)
	})
}

func (a *API) httpDeleteFailureDomain() handler {
	return a.onIsolation(http.StatusPreconditionFailed, domainName, func(r *http.Request, p params, cluster string) (int, any, error) {
		// Pulsar answers 200 here.
		return http.StatusOK, nil, a.iso.DeleteFailureDomain(r.Context(), cluster, p["domain"])
	})
}

func (a *API) httpIsolationPolicies() handler {
	return a.onIsolation(http.StatusNotFound, nil, func(r *http.Request, p params, cluster string) (int, any, error) {
		return isoOK(a.iso.Policies(r.Context(), cluster))
	})
}

func (a *API) httpIsolationPolicy() handler {
	return a.onIsolation(http.StatusPreconditionFailed, policyName, func(r *http.Request, p params, cluster string) (int, any, error) {
		m, err := a.iso.Policies(r.Context(), cluster)
		if err != nil {
			return 0, nil, err
		}
		pol, found := m[p["policy"]]
		if !found {
			return 0, nil, &isoStatus{http.StatusNotFound, "Cannot find NamespaceIsolationPolicy " + p["policy"] + " for cluster " + cluster}
		}
		return http.StatusOK, pol, nil
	})
}

func (a *API) httpSetIsolationPolicy() handler {
	return a.onIsolation(http.StatusPreconditionFailed, policyName, func(r *http.Request, p params, cluster string) (int, any, error) {
		var pol isolation.Policy
		if err := readJSONBody(r, &pol); err != nil {
			return 0, nil, &isoStatus{http.StatusBadRequest, "body must be a NamespaceIsolationData"}
		}
		if err := a.iso.SetPolicy(r.Context(), cluster, p["policy"], pol); err != nil {
			return 0, nil, err
		}
		unload := true
		if v := r.URL.Query().Get("unloadBundles"); v != "" {
			unload, _ = strconv.ParseBool(v)
		}
		if unload && pol.UnloadScope != "none" {
			// The matching namespaces are placed again under the policy.
			if err := a.unloadMatching(context.WithoutCancel(r.Context()), cluster, &pol); err != nil {
				return 0, nil, err
			}
		}
		return http.StatusNoContent, nil, nil
	})
}

// unloadMatching unloads every bundle of the namespaces that replicate
// to cluster and that pol applies to, as Pulsar does after setting a
// policy (a single node has nowhere else to place them: nothing to do).
func (a *API) unloadMatching(ctx context.Context, cluster string, pol *isolation.Policy) error {
	c := a.own.Cluster()
	if c == nil || cluster != a.node.ClusterName() {
		return nil
	}
	nss, err := a.allNamespaces(ctx)
	if err != nil {
		return err
	}
	for _, ns := range nss {
		if !pol.AppliesTo(ns) {
			continue
		}
		if np, err := a.pol.Get(ctx, ns); err != nil || !slices.Contains(np.ReplicationClusters, cluster) {
			continue
		}
		bs, err := c.Bundles(ctx, ns)
		if err != nil {
			continue // deleted meanwhile
		}
		for _, rg := range bs.Ranges() {
			if err := c.UnloadBundle(ctx, ns, rg); err != nil {
				return fmt.Errorf("unload %s/%s: %w", ns, rg, err)
			}
		}
	}
	return nil
}

func (a *API) httpDeleteIsolationPolicy() handler {
	return a.onIsolation(http.StatusPreconditionFailed, policyName, func(r *http.Request, p params, cluster string) (int, any, error) {
		return http.StatusNoContent, nil, a.iso.DeletePolicy(r.Context(), cluster, p["policy"])
	})
}

func (a *API) httpIsolationBrokers() handler {
	return a.onIsolation(http.StatusPreconditionFailed, nil, func(r *http.Request, p params, cluster string) (int, any, error) {
		live, err := a.liveBrokers(r.Context())
		if err != nil {
			return 0, nil, err
		}
		m, err := a.iso.Policies(r.Context(), cluster)
		if err != nil {
			return 0, nil, err
		}
		out := make([]isolation.BrokerData, 0, len(live))
		for _, id := range live {
			out = append(out, isolation.Broker(m, id))
		}
		return http.StatusOK, out, nil
	})
}

func (a *API) httpIsolationBroker() handler {
	return a.onIsolation(http.StatusPreconditionFailed, nil, func(r *http.Request, p params, cluster string) (int, any, error) {
		m, err := a.iso.Policies(r.Context(), cluster)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, isolation.Broker(m, p["broker"]), nil
	})
}
