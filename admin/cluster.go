package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/brokeradmin"
	"github.com/magnetar-mq/magnetar/bundle"
	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/policy"
)

// The serving broker in its cluster: topic lookup, the broker list,
// leader, readiness, health and load report, and the namespace bundles
// (list, unload, split, a topic's bundle). The standalone is a cluster
// of one broker. A broker started without a cluster (tests) gives a
// namespace the one bundle 0x00000000_0xffffffff, and unloading it, or
// the namespace, unloads every loaded topic of the namespace (clients
// reconnect).

func (a *API) registerLookupRoutes(rt routeTable) {
	rt.Add(
		httpapi.Route{Method: "GET", Pattern: "/lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}", Access: auth.AccessTopicLookup,
			Response: brokeradmin.LookupData{}, Handler: a.httpLookup},
		httpapi.Route{Method: "GET", Pattern: "/lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}/bundle", Access: auth.AccessTopicLookup,
			Response: "", Handler: a.httpTopicBundle},
	)
}

func (a *API) registerClusterBrokerRoutes(rt routeTable) {
	rt.Add(
		httpapi.Route{Method: "GET", Pattern: "/admin/v2/brokers/leaderBroker", Access: auth.AccessSuperUser,
			Response: cluster.LeaderInfo{}, Handler: a.httpLeaderBroker},
		httpapi.Route{Method: "GET", Pattern: "/admin/v2/brokers/health", Access: auth.AccessSuperUser, Response: "", Handler: a.httpHealth},
		httpapi.Route{Method: "GET", Pattern: "/admin/v2/brokers", Access: auth.AccessSuperUser, Response: []string{}, Handler: a.httpListLocalBrokers},
		httpapi.Route{Method: "GET", Pattern: "/admin/v2/brokers/{cluster}", Access: auth.AccessSuperUser, Response: []string{}, Handler: a.httpListBrokers},
		httpapi.Route{Method: "GET", Pattern: "/admin/v2/brokers/ready", Access: auth.AccessSuperUser, Response: "", Handler: a.httpReady},
		httpapi.Route{Method: "GET", Pattern: "/admin/v2/broker-stats/load-report", Access: auth.AccessSuperUser, Handler: a.httpLoadReport},
		httpapi.Route{Method: "GET", Pattern: "/admin/v2/brokers/{cluster}/{broker}/ownedNamespaces", Access: auth.AccessSuperUser, Handler: a.httpOwnedNamespaces},
	)
}

func (a *API) registerBundleRoutes(rt routeTable) {
	const ns = "/admin/v2/namespaces/{tenant}/{ns}"
	rt.Add(
		httpapi.Route{Method: "GET", Pattern: ns + "/bundles", Access: auth.AccessTenantAdmin, Response: bundle.Bundles{}, Handler: a.httpBundles},
		httpapi.Route{Name: "namespaces.bundle.unload.put", Method: "PUT", Pattern: ns + "/{bundle}/unload", Access: auth.AccessTenantAdmin, Handler: a.httpUnloadBundle},
		httpapi.Route{Method: "PUT", Pattern: ns + "/{bundle}/split", Access: auth.AccessTenantAdmin, Handler: a.httpSplitBundle},
		httpapi.Route{Method: "PUT", Pattern: ns + "/unload", Access: auth.AccessTenantAdmin, Handler: a.httpUnloadNamespace},
	)
}

// httpLookup answers /lookup/v2/topic/...: 200 with LookupData when the
// owner is known (or taken here), 307 to the broker that decides
// otherwise.
func (a *API) httpLookup(w http.ResponseWriter, r *http.Request, p params) {
	tn, ok := topicParams(w, p)
	if !ok {
		return
	}
	authoritative, _ := strconv.ParseBool(r.URL.Query().Get("authoritative"))
	data, redirect, err := a.own.LookupTopic(r.Context(), tn.String(), authoritative)
	switch {
	case errors.Is(err, broker.ErrNamespaceNotFound):
		writeError(w, http.StatusNotFound, "Namespace does not exist")
	case errors.Is(err, cluster.ErrNoBroker):
		writeError(w, http.StatusServiceUnavailable, err.Error())
	case err != nil:
		a.log.Warn("HTTP lookup failed", "topic", tn.String(), "err", err)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "Lookup of "+tn.String()+" failed; retry")
	case redirect != "":
		http.Redirect(w, r, redirect, http.StatusTemporaryRedirect)
	default:
		writeJSON(w, http.StatusOK, data)
	}
}

func (a *API) needCluster(w http.ResponseWriter) bool {
	if a.own.Cluster() == nil {
		writeError(w, http.StatusPreconditionFailed, "not a clustered broker (standalone owns every bundle)")
		return false
	}
	return true
}

func (a *API) httpLeaderBroker(w http.ResponseWriter, r *http.Request, _ params) {
	if a.own.Cluster() == nil {
		writeJSON(w, http.StatusOK, cluster.LeaderInfo{BrokerID: a.own.BrokerID(), ServiceURL: a.node.WebURL()})
		return
	}
	li, err := a.own.Cluster().Leader(r.Context())
	a.replyCluster(w, li, err)
}

// replyCluster is reply for the cluster service's errors: a namespace
// or leader it does not know is 404.
func (a *API) replyCluster(w http.ResponseWriter, v any, err error) {
	switch {
	case errors.Is(err, metadata.ErrNotFound):
		writeError(w, http.StatusNotFound, "Namespace does not exist")
	case errors.Is(err, cluster.ErrNoLeader):
		writeError(w, http.StatusNotFound, "Couldn't find leader broker")
	default:
		a.reply(w, v, err)
	}
}

func (a *API) httpReady(w http.ResponseWriter, _ *http.Request, _ params) {
	if !a.own.Ready() {
		writeError(w, http.StatusInternalServerError, "broker is not ready")
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte("ok"))
}

func (a *API) httpLoadReport(w http.ResponseWriter, r *http.Request, _ params) {
	if a.own.Cluster() == nil {
		writeJSON(w, http.StatusOK, a.standaloneLoadReport(r.Context()))
		return
	}
	writeJSON(w, http.StatusOK, a.own.Cluster().LoadReport())
}

func (a *API) httpOwnedNamespaces(w http.ResponseWriter, r *http.Request, p params) {
	if p["cluster"] != a.node.ClusterName() {
		writeError(w, http.StatusNotFound, "Cluster does not exist")
		return
	}
	type status struct {
		Assignment   string `json:"broker_assignment"`
		IsControlled bool   `json:"is_controlled"`
		IsActive     bool   `json:"is_active"`
	}
	out := map[string]status{}
	if a.own.Cluster() == nil {
		// The standalone owns the one bundle of every namespace.
		if p["broker"] != a.own.BrokerID() {
			writeError(w, http.StatusNotFound, "broker not found")
			return
		}
		full, _ := bundle.Even(1)
		nss, err := a.allNamespaces(r.Context())
		if err != nil {
			a.internalError(w, err)
			return
		}
		for _, ns := range nss {
			for _, rg := range full.Ranges() {
				out[ns+"/"+rg.String()] = status{Assignment: "shared", IsActive: true}
			}
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	if p["broker"] != a.own.BrokerID() {
		rep, err := a.own.Cluster().Report(r.Context(), p["broker"])
		if err != nil {
			writeError(w, http.StatusNotFound, "broker not found")
			return
		}
		http.Redirect(w, r, rep.WebServiceURL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
		return
	}
	for _, k := range a.own.Cluster().OwnedBundles() {
		out[k] = status{Assignment: "shared", IsActive: true}
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *API) httpBundles(w http.ResponseWriter, r *http.Request, p params) {
	ns := p["tenant"] + "/" + p["ns"]
	if a.own.Cluster() == nil {
		one, _ := bundle.Even(1)
		writeJSON(w, http.StatusOK, one)
		return
	}
	bs, err := a.own.Cluster().Bundles(r.Context(), ns)
	a.replyCluster(w, bs, err)
}

// bundleParam parses {bundle} and checks that it is a current bundle of
// the namespace (412 otherwise, 404 for an unknown namespace).
func (a *API) bundleParam(w http.ResponseWriter, r *http.Request, p params) (string, bundle.Range, bool) {
	ns := p["tenant"] + "/" + p["ns"]
	rg, err := bundle.ParseRange(p["bundle"])
	if err != nil {
		writeError(w, http.StatusPreconditionFailed, err.Error())
		return "", rg, false
	}
	bs, ok := a.namespaceBundles(w, r, ns)
	switch {
	case !ok:
		return "", rg, false
	case !bs.Has(rg):
		writeError(w, http.StatusPreconditionFailed, "Namespace bundle "+ns+"/"+rg.String()+" does not exist")
		return "", rg, false
	}
	return ns, rg, true
}

// redirectToOwner sends a bundle request to the bundle's owner (307);
// false when this broker owns it or nobody does (unowned).
func (a *API) redirectToOwner(w http.ResponseWriter, r *http.Request, ns string, rg bundle.Range) (redirected, owned bool) {
	if a.own.Cluster().Owns(cluster.BundleKey(ns, rg)) {
		return false, true
	}
	od, ok, err := a.own.Cluster().Owner(r.Context(), ns, rg)
	if err != nil {
		a.internalError(w, err)
		return true, false
	}
	if !ok {
		return false, false
	}
	u := *r.URL
	q := u.Query()
	q.Set("authoritative", "true")
	u.RawQuery = q.Encode()
	http.Redirect(w, r, od.HTTPURL+u.RequestURI(), http.StatusTemporaryRedirect)
	return true, false
}

// onBundle serves a request on {bundle} of a clustered broker's
// namespace at the bundle's owner: the request for a bundle another
// broker owns is sent there (307); f learns whether this broker owns it
// (false: nobody does).
func (a *API) onBundle(f func(w http.ResponseWriter, r *http.Request, ns string, rg bundle.Range, owned bool)) handler {
	return func(w http.ResponseWriter, r *http.Request, p params) {
		ns, rg, ok := a.bundleParam(w, r, p)
		if !ok {
			return
		}
		if redirected, owned := a.redirectToOwner(w, r, ns, rg); !redirected {
			f(w, r, ns, rg, owned)
		}
	}
}

func (a *API) httpUnloadBundle(w http.ResponseWriter, r *http.Request, p params) {
	if a.own.Cluster() == nil {
		a.standaloneUnload(w, r, p)
		return
	}
	a.onBundle(func(w http.ResponseWriter, r *http.Request, ns string, rg bundle.Range, owned bool) {
		if owned {
			if err := a.own.Cluster().Unload(context.WithoutCancel(r.Context()), ns, rg); err != nil && !errors.Is(err, cluster.ErrNotOwned) {
				writeError(w, http.StatusPreconditionFailed, err.Error())
				return
			}
		}
		// Not owned by anyone: a no-op, as Pulsar's.
		w.WriteHeader(http.StatusNoContent)
	})(w, r, p)
}

func (a *API) httpUnloadNamespace(w http.ResponseWriter, r *http.Request, p params) {
	if a.own.Cluster() == nil {
		a.standaloneUnload(w, r, p)
		return
	}
	ns := nsOf(p)
	bs, ok := a.namespaceBundles(w, r, ns)
	if !ok {
		return
	}
	ctx := context.WithoutCancel(r.Context())
	var err error
	for _, rg := range bs.Ranges() {
		if err = a.own.Cluster().UnloadBundle(ctx, ns, rg); err != nil {
			err = fmt.Errorf("unload bundle %s/%s: %w", ns, rg, err)
			break
		}
	}
	a.replyDone(w, err)
}

// namespaceBundles returns the bundles of ns in the cluster, writing the
// 404 of an unknown namespace (or the 500).
func (a *API) namespaceBundles(w http.ResponseWriter, r *http.Request, ns string) (bundle.Bundles, bool) {
	bs, err := a.own.Cluster().Bundles(r.Context(), ns)
	if err != nil {
		a.replyCluster(w, nil, err)
	}
	return bs, err == nil
}

func (a *API) httpSplitBundle(w http.ResponseWriter, r *http.Request, p params) {
	if !a.needCluster(w) {
		return
	}
	a.onBundle(func(w http.ResponseWriter, r *http.Request, ns string, rg bundle.Range, owned bool) {
		if !owned {
			// A standalone takes it, as Pulsar's lookup would place it there.
			var err error
			if owned, err = a.own.Cluster().ClaimUnowned(r.Context(), ns, rg); err != nil {
				a.internalError(w, err)
				return
			}
		}
		if !owned {
			writeError(w, http.StatusPreconditionFailed, "Namespace bundle "+ns+"/"+rg.String()+" is not owned by any broker; look one of its topics up first")
			return
		}
		q := r.URL.Query()
		unload, _ := strconv.ParseBool(q.Get("unload"))
		algo := q.Get("splitAlgorithmName")
		var topics []string
		if algo == cluster.SplitTopicCount {
			topics = a.own.LoadedTopicsOf(cluster.BundleKey(ns, rg))
		}
		if _, err := a.own.Cluster().Split(context.WithoutCancel(r.Context()), ns, rg, algo, topics, unload); err != nil {
			writeError(w, http.StatusPreconditionFailed, "Split bundle failed due to invalid request: "+err.Error())
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})(w, r, p)
}

func (a *API) httpTopicBundle(w http.ResponseWriter, r *http.Request, p params) {
	tn, ok := topicParams(w, p)
	if !ok {
		return
	}
	if exists, err := a.pol.NamespaceExists(r.Context(), tn.NamespaceName()); err != nil || !exists {
		writeError(w, http.StatusNotFound, "Namespace does not exist")
		return
	}
	// Pulsar answers the range as plain text (pulsaradmin takes the
	// body as it is), on a standalone too.
	var rg bundle.Range
	if a.own.Cluster() == nil {
		one, _ := bundle.Even(1)
		rg = one.Ranges()[0]
	} else {
		var err error
		if _, rg, err = a.own.Cluster().TopicBundle(r.Context(), tn.String()); err != nil {
			a.internalError(w, err)
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte(rg.String()))
}

// httpListBrokers is /admin/v2/brokers/{cluster}: the live brokers.
func (a *API) httpListBrokers(w http.ResponseWriter, r *http.Request, p params) {
	if p["cluster"] != a.node.ClusterName() {
		writeError(w, http.StatusNotFound, "Cluster does not exist")
		return
	}
	ids, err := a.liveBrokers(r.Context())
	if err != nil {
		a.internalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ids)
}

// httpListLocalBrokers is GET /admin/v2/brokers: the live brokers of
// this broker's cluster (Pulsar 2.10 and later).
func (a *API) httpListLocalBrokers(w http.ResponseWriter, r *http.Request, _ params) {
	ids, err := a.liveBrokers(r.Context())
	if err != nil {
		a.internalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ids)
}

// allNamespaces lists every namespace of every tenant ("tenant/ns").
func (a *API) allNamespaces(ctx context.Context) ([]string, error) {
	tenants, err := a.pol.Tenants(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range tenants {
		nss, err := a.pol.Namespaces(ctx, t)
		if errors.Is(err, policy.ErrTenantNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, nss...)
	}
	return out, nil
}

// liveBrokers lists the cluster's live brokers (this one on a single
// node).
func (a *API) liveBrokers(ctx context.Context) ([]string, error) {
	if a.own.Cluster() == nil {
		return []string{a.own.BrokerID()}, nil
	}
	return a.own.Cluster().Brokers(ctx)
}

// httpHealth is /admin/v2/brokers/health: a real check, as Pulsar's: the
// metadata store answers (and, in a cluster, the broker's session lease
// holds), and a message written through a managed ledger to the bookies
// reads back equal. 200 "ok", else 503 with the failing step.
func (a *API) httpHealth(w http.ResponseWriter, r *http.Request, _ params) {
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	if err := a.own.HealthCheck(ctx); err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte("ok"))
}

// standaloneUnload serves bundle and namespace unload on a single node:
// the namespace has the one bundle 0x00000000_0xffffffff, and unloading it
// unloads every loaded topic of the namespace (clients reconnect).
func (a *API) standaloneUnload(w http.ResponseWriter, r *http.Request, p params) {
	ns, ok := a.nsFromParams(w, r, p)
	if !ok {
		return
	}
	const full = "0x00000000_0xffffffff"
	if bd, ok := p["bundle"]; ok && bd != full {
		writeError(w, http.StatusPreconditionFailed, "Invalid bundle range "+bd+": namespace "+ns+" has the one bundle "+full)
		return
	}
	topics, err := a.topics.TopicsOfNamespace(r.Context(), ns, true, true)
	for _, t := range topics {
		if _, err = a.life.UnloadTopic(t); err != nil {
			break
		}
	}
	a.replyDone(w, err)
}
