package admin

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/policy"
)

// Geo-replication endpoints: the cluster registry (/admin/v2/clusters),
// namespace replication clusters and topic-level overrides. All of them
// read and write the configuration store through policy.Store, so a
// change made through any cluster's API is seen by every cluster sharing
// that store (docs/geo-replication.md).

func (a *API) registerReplicationRoutes(rt routeTable) {
	rt.Handle("GET", "/admin/v2/clusters/{cluster}", auth.AccessAny, a.clusterValue(func(cd policy.ClusterData) any { return cd }))
	rt.Handle("PUT", "/admin/v2/clusters/{cluster}", auth.AccessSuperUser, a.httpPutCluster(true))
	rt.Handle("POST", "/admin/v2/clusters/{cluster}", auth.AccessSuperUser, a.httpPutCluster(false))
	rt.Handle("DELETE", "/admin/v2/clusters/{cluster}", auth.AccessSuperUser, a.httpDeleteCluster)
	rt.Handle("GET", "/admin/v2/clusters/{cluster}/peers", auth.AccessSuperUser, a.clusterValue(func(cd policy.ClusterData) any { return cd.PeerClusterNames }))
	rt.Handle("POST", "/admin/v2/clusters/{cluster}/peers", auth.AccessSuperUser, a.httpSetClusterPeers)
	ns := "/admin/v2/namespaces/{tenant}/{ns}/replication"
	rt.Add(httpapi.Route{Method: "GET", Pattern: ns, Access: auth.AccessTenantAdmin, Response: []string{},
		Handler: a.getPolicy(func(p *policy.Policies) any { return p.ReplicationClusters })})
	setNs := a.onNamespace(func(w http.ResponseWriter, r *http.Request, ns string) {
		tenant, _, _ := strings.Cut(ns, "/")
		if list, ok := a.readClusters(w, r, tenant, "namespace ["+ns+"]"); ok {
			a.replyDone(w, a.pol.Update(r.Context(), ns, func(pol *policy.Policies) error {
				pol.ReplicationClusters = list
				return nil
			}))
		}
	})
	rt.Handle("POST", ns, auth.AccessTenantAdmin, setNs)
	rt.Handle("PUT", ns, auth.AccessTenantAdmin, setNs)
	tp := "/admin/v2/{domain}/{tenant}/{ns}/{topic}/replication"
	rt.Handle("GET", tp, auth.AccessTenantAdmin, a.onPolicyTopic(a.getTopicReplication))
	setTopic := a.onPolicyTopic(func(w http.ResponseWriter, r *http.Request, name, ns string) {
		tenant, _, _ := strings.Cut(ns, "/")
		if list, ok := a.readClusters(w, r, tenant, "topic ["+name+"]"); ok {
			a.replyDone(w, a.pol.SetTopicReplicationClusters(r.Context(), name, list))
		}
	})
	rt.Handle("POST", tp, auth.AccessTenantAdmin, setTopic)
	rt.Handle("PUT", tp, auth.AccessTenantAdmin, setTopic)
	rt.Handle("DELETE", tp, auth.AccessTenantAdmin, a.onPolicyTopic(func(w http.ResponseWriter, r *http.Request, name, _ string) {
		a.replyDone(w, a.pol.SetTopicReplicationClusters(r.Context(), name, nil))
	}))
}

func (a *API) clusterError(w http.ResponseWriter, err error) {
	var bad *policy.BadValueError
	switch {
	case errors.Is(err, policy.ErrClusterNotFound):
		writeError(w, http.StatusNotFound, "Cluster does not exist")
	case errors.Is(err, policy.ErrClusterExists):
		writeError(w, http.StatusConflict, "Cluster already exists")
	case errors.Is(err, policy.ErrInvalidName):
		writeError(w, http.StatusPreconditionFailed, "Cluster name is not valid")
	case errors.As(err, &bad):
		writeError(w, http.StatusBadRequest, bad.Error())
	case errors.Is(err, policy.ErrNotEmpty):
		writeError(w, http.StatusPreconditionFailed, err.Error())
	default:
		a.internalError(w, err)
	}
}

func (a *API) httpPutCluster(create bool) handler {
	return func(w http.ResponseWriter, r *http.Request, p params) {
		name := p["cluster"]
		if create && !policy.ValidClusterName(name) {
			writeError(w, http.StatusPreconditionFailed, "Cluster name is not valid")
			return
		}
		var cd *policy.ClusterData
		if err := readJSONBody(r, &cd); err != nil {
			writeError(w, http.StatusBadRequest, "bad cluster data: "+err.Error())
			return
		}
		if cd == nil {
			writeError(w, http.StatusBadRequest, "cluster data is required")
			return
		}
		if err := a.checkPeers(r.Context(), name, cd.PeerClusterNames); err != nil {
			a.serviceError(w, err)
			return
		}
		var err error
		if create {
			err = a.pol.CreateCluster(r.Context(), name, *cd)
		} else {
			err = a.pol.UpdateCluster(r.Context(), name, *cd)
		}
		if err != nil {
			a.clusterError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// checkPeers refuses peer clusters that are not registered, or the
// cluster itself.
func (a *API) checkPeers(ctx context.Context, name string, peers []string) error {
	if len(peers) == 0 {
		return nil
	}
	cs, err := a.pol.Clusters(ctx)
	if err != nil {
		return err
	}
	for _, pc := range peers {
		if pc == name {
			return refuse(http.StatusPreconditionFailed, "cluster %s cannot be its own peer", name)
		}
		if !slices.Contains(cs, pc) {
			return refuse(http.StatusPreconditionFailed, "peer cluster %s does not exist", pc)
		}
	}
	return nil
}

func (a *API) httpDeleteCluster(w http.ResponseWriter, r *http.Request, p params) {
	if p["cluster"] == a.node.ClusterName() {
		writeError(w, http.StatusPreconditionFailed, "Cannot delete the local cluster "+p["cluster"])
		return
	}
	if a.iso != nil && policy.ValidName(p["cluster"]) {
		// Pulsar refuses a cluster with isolation policies and drops its
		// failure domains first.
		if err := a.iso.DeleteCluster(r.Context(), p["cluster"]); err != nil {
			a.isolationError(w, err)
			return
		}
	}
	if err := a.pol.DeleteCluster(r.Context(), p["cluster"]); err != nil {
		a.clusterError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) httpSetClusterPeers(w http.ResponseWriter, r *http.Request, p params) {
	var peers []string
	if err := readJSONBody(r, &peers); err != nil {
		writeError(w, http.StatusBadRequest, "body must be a JSON array of cluster names")
		return
	}
	cd, err := a.pol.Cluster(r.Context(), p["cluster"])
	if err != nil {
		a.clusterError(w, err)
		return
	}
	if err := a.checkPeers(r.Context(), p["cluster"], peers); err != nil {
		a.serviceError(w, err)
		return
	}
	cd.PeerClusterNames = peers
	if err := a.pol.UpdateCluster(r.Context(), p["cluster"], cd); err != nil {
		a.clusterError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// checkReplicationClusters applies Pulsar's checks, in its order: not
// empty, no "global", every cluster registered (403), no two peers of
// each other (409), every cluster allowed for the tenant (403).
func (a *API) checkReplicationClusters(ctx context.Context, tenant, what string, list []string) ([]string, error) {
	if len(list) == 0 {
		return nil, refuse(http.StatusPreconditionFailed, "ClusterIds should not be null or empty")
	}
	if slices.Contains(list, policy.GlobalCluster) {
		return nil, refuse(http.StatusPreconditionFailed, "Cannot specify global in the list of replication clusters")
	}
	out := slices.Clone(list)
	slices.Sort(out)
	out = slices.Compact(out)
	known, err := a.pol.Clusters(ctx)
	if err != nil {
		return nil, err
	}
	for _, c := range out {
		if !slices.Contains(known, c) {
			return nil, refuse(http.StatusForbidden, "Invalid cluster id: %s", c)
		}
	}
	for _, c := range out {
		cd, err := a.pol.Cluster(ctx, c)
		if err != nil {
			return nil, err
		}
		for _, peer := range cd.PeerClusterNames {
			if slices.Contains(out, peer) {
				return nil, refuse(http.StatusConflict, "Peer-cluster can't be part of replication-cluster: %s is a peer of %s", peer, c)
			}
		}
	}
	ti, err := a.pol.Tenant(ctx, tenant)
	if err != nil {
		return nil, err
	}
	for _, c := range out {
		if !slices.Contains(ti.AllowedClusters, c) {
			return nil, refuse(http.StatusForbidden, "Cluster [%s] is not in the list of allowed clusters list for %s", c, what)
		}
	}
	return out, nil
}

// clusterValue serves a GET of what a cluster's registration holds.
func (a *API) clusterValue(get func(policy.ClusterData) any) handler {
	return func(w http.ResponseWriter, r *http.Request, p params) {
		cd, err := a.pol.Cluster(r.Context(), p["cluster"])
		if err != nil {
			a.clusterError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, get(cd))
	}
}

// readClusters reads a replication-cluster list body and checks it
// against the tenant's allowed clusters (what names the target in
// errors).
func (a *API) readClusters(w http.ResponseWriter, r *http.Request, tenant, what string) ([]string, bool) {
	var list []string
	if err := readJSONBody(r, &list); err != nil {
		writeError(w, http.StatusBadRequest, "body must be a JSON array of cluster names")
		return nil, false
	}
	list, err := a.checkReplicationClusters(r.Context(), tenant, what, list)
	if err != nil {
		a.serviceError(w, err)
		return nil, false
	}
	return list, true
}

// getTopicReplication answers a topic's replication clusters: its own,
// else (?applied=true) its namespace's, else none.
func (a *API) getTopicReplication(w http.ResponseWriter, r *http.Request, name, ns string) {
	rc, err := a.pol.TopicReplicationClusters(r.Context(), name)
	switch {
	case err != nil:
		a.serviceError(w, err)
	case rc != nil:
		writeJSON(w, http.StatusOK, rc)
	case r.URL.Query().Get("applied") != "true":
		writeJSON(w, http.StatusOK, []string{})
	default:
		pol, err := a.pol.Get(r.Context(), ns)
		if err != nil {
			a.internalError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, pol.ReplicationClusters)
	}
}

// onPolicyTopic serves a route of a topic's topic-level policies: the
// path's topic (a partition's are its partitioned topic's) and its
// namespace.
func (a *API) onPolicyTopic(f func(w http.ResponseWriter, r *http.Request, name, ns string)) handler {
	return func(w http.ResponseWriter, r *http.Request, p params) {
		if name, ns, ok := a.topicPolicyName(w, r, p); ok {
			f(w, r, name, ns)
		}
	}
}

// topicPolicyName resolves the path's topic for its topic-level
// policies: the name they are kept under (a partition's are its
// partitioned topic's) and its namespace.
func (a *API) topicPolicyName(w http.ResponseWriter, r *http.Request, p params) (name, ns string, ok bool) {
	tn, ok := a.topicNameFromParams(w, r, p)
	if tn.IsPartition() {
		tn = tn.Parent()
	}
	return tn.String(), tn.NamespaceName(), ok
}
