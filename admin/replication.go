package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/policy"
)

// Geo-replication endpoints: the cluster registry (/admin/v2/clusters),
// namespace replication clusters and topic-level overrides. All of them
// read and write the configuration store through policy.Store, so a
// change made through any cluster's API is seen by every cluster sharing
// that store (docs/geo-replication.md).

func (a *API) registerReplicationRoutes(rt routeTable) {
	rt.Handle("GET", "/admin/v2/clusters/{cluster}", a.httpGetCluster)
	rt.Handle("PUT", "/admin/v2/clusters/{cluster}", a.httpPutCluster(true))
	rt.Handle("POST", "/admin/v2/clusters/{cluster}", a.httpPutCluster(false))
	rt.Handle("DELETE", "/admin/v2/clusters/{cluster}", a.httpDeleteCluster)
	rt.Handle("GET", "/admin/v2/clusters/{cluster}/peers", a.httpClusterPeers)
	rt.Handle("POST", "/admin/v2/clusters/{cluster}/peers", a.httpSetClusterPeers)
	ns := "/admin/v2/namespaces/{tenant}/{ns}/replication"
	rt.Handle("GET", ns, a.httpGetNsReplication)
	rt.Handle("POST", ns, a.httpSetNsReplication)
	rt.Handle("PUT", ns, a.httpSetNsReplication)
	tp := "/admin/v2/{domain}/{tenant}/{ns}/{topic}/replication"
	rt.Handle("GET", tp, a.httpGetTopicReplication)
	rt.Handle("POST", tp, a.httpSetTopicReplication)
	rt.Handle("PUT", tp, a.httpSetTopicReplication)
	rt.Handle("DELETE", tp, a.httpDeleteTopicReplication)
}

func clusterError(w http.ResponseWriter, err error) {
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
		internalError(w, err)
	}
}

func (a *API) httpGetCluster(w http.ResponseWriter, r *http.Request, p params) {
	cd, err := a.pol.Cluster(r.Context(), p["cluster"])
	if err != nil {
		clusterError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, cd)
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
			writeError(w, http.StatusPreconditionFailed, err.Error())
			return
		}
		var err error
		if create {
			err = a.pol.CreateCluster(r.Context(), name, *cd)
		} else {
			err = a.pol.UpdateCluster(r.Context(), name, *cd)
		}
		if err != nil {
			clusterError(w, err)
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
			return fmt.Errorf("cluster %s cannot be its own peer", name)
		}
		if !slices.Contains(cs, pc) {
			return fmt.Errorf("peer cluster %s does not exist", pc)
		}
	}
	return nil
}

func (a *API) httpDeleteCluster(w http.ResponseWriter, r *http.Request, p params) {
	if p["cluster"] == a.svc.ClusterName() {
		writeError(w, http.StatusPreconditionFailed, "Cannot delete the local cluster "+p["cluster"])
		return
	}
	if err := a.pol.DeleteCluster(r.Context(), p["cluster"]); err != nil {
		clusterError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) httpClusterPeers(w http.ResponseWriter, r *http.Request, p params) {
	cd, err := a.pol.Cluster(r.Context(), p["cluster"])
	if err != nil {
		clusterError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, cd.PeerClusterNames)
}

func (a *API) httpSetClusterPeers(w http.ResponseWriter, r *http.Request, p params) {
	var peers []string
	if err := readJSONBody(r, &peers); err != nil {
		writeError(w, http.StatusBadRequest, "body must be a JSON array of cluster names")
		return
	}
	cd, err := a.pol.Cluster(r.Context(), p["cluster"])
	if err != nil {
		clusterError(w, err)
		return
	}
	if err := a.checkPeers(r.Context(), p["cluster"], peers); err != nil {
		writeError(w, http.StatusPreconditionFailed, err.Error())
		return
	}
	cd.PeerClusterNames = peers
	if err := a.pol.UpdateCluster(r.Context(), p["cluster"], cd); err != nil {
		clusterError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) httpGetNsReplication(w http.ResponseWriter, r *http.Request, p params) {
	ns, ok := a.nsFromParams(w, r, p)
	if !ok {
		return
	}
	pol, err := a.pol.Get(r.Context(), ns)
	if err != nil {
		internalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, pol.ReplicationClusters)
}

// replicationError is a refused replication cluster list: its status
// and Pulsar's reason.
type replicationError struct {
	status int
	msg    string
}

func (e *replicationError) Error() string { return e.msg }

// checkReplicationClusters applies Pulsar's checks, in its order: not
// empty, no "global", every cluster registered (403), no two peers of
// each other (409), every cluster allowed for the tenant (403).
func (a *API) checkReplicationClusters(ctx context.Context, tenant, what string, list []string) ([]string, error) {
	if len(list) == 0 {
		return nil, &replicationError{http.StatusPreconditionFailed, "ClusterIds should not be null or empty"}
	}
	if slices.Contains(list, policy.GlobalCluster) {
		return nil, &replicationError{http.StatusPreconditionFailed, "Cannot specify global in the list of replication clusters"}
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
			return nil, &replicationError{http.StatusForbidden, "Invalid cluster id: " + c}
		}
	}
	for _, c := range out {
		cd, err := a.pol.Cluster(ctx, c)
		if err != nil {
			return nil, err
		}
		for _, peer := range cd.PeerClusterNames {
			if slices.Contains(out, peer) {
				return nil, &replicationError{http.StatusConflict, fmt.Sprintf("Peer-cluster can't be part of replication-cluster: %s is a peer of %s", peer, c)}
			}
		}
	}
	ti, err := a.pol.Tenant(ctx, tenant)
	if err != nil {
		return nil, err
	}
	for _, c := range out {
		if !slices.Contains(ti.AllowedClusters, c) {
			return nil, &replicationError{http.StatusForbidden, fmt.Sprintf("Cluster [%s] is not in the list of allowed clusters list for %s", c, what)}
		}
	}
	return out, nil
}

func writeReplicationError(w http.ResponseWriter, err error) {
	var re *replicationError
	if errors.As(err, &re) {
		writeError(w, re.status, re.msg)
		return
	}
	serviceError(w, err)
}

func (a *API) httpSetNsReplication(w http.ResponseWriter, r *http.Request, p params) {
	ns, ok := a.nsFromParams(w, r, p)
	if !ok {
		return
	}
	var list []string
	if err := readJSONBody(r, &list); err != nil {
		writeError(w, http.StatusBadRequest, "body must be a JSON array of cluster names")
		return
	}
	list, err := a.checkReplicationClusters(r.Context(), p["tenant"], "namespace ["+ns+"]", list)
	if err != nil {
		writeReplicationError(w, err)
		return
	}
	err = a.pol.Update(r.Context(), ns, func(pol *policy.Policies) error {
		pol.ReplicationClusters = list
		return nil
	})
	if err != nil {
		serviceError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// topicPolicyName returns the name topic-level policies are kept under:
// a partition's parent.
func (a *API) topicPolicyName(w http.ResponseWriter, r *http.Request, p params) (string, string, bool) {
	full, ok := a.topicFromParams(w, r, p)
	if !ok {
		return "", "", false
	}
	tn, err := broker.ParseTopicName(full)
	if err != nil {
		writeError(w, http.StatusPreconditionFailed, err.Error())
		return "", "", false
	}
	if tn.IsPartition() {
		tn = tn.Parent()
	}
	return tn.String(), tn.NamespaceName(), true
}

func (a *API) httpGetTopicReplication(w http.ResponseWriter, r *http.Request, p params) {
	name, ns, ok := a.topicPolicyName(w, r, p)
	if !ok {
		return
	}
	rc, err := a.pol.TopicReplicationClusters(r.Context(), name)
	if err != nil {
		serviceError(w, err)
		return
	}
	if rc != nil {
		writeJSON(w, http.StatusOK, rc)
		return
	}
	if r.URL.Query().Get("applied") != "true" {
		writeJSON(w, http.StatusOK, []string{})
		return
	}
	pol, err := a.pol.Get(r.Context(), ns)
	if err != nil {
		internalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, pol.ReplicationClusters)
}

func (a *API) httpSetTopicReplication(w http.ResponseWriter, r *http.Request, p params) {
	name, _, ok := a.topicPolicyName(w, r, p)
	if !ok {
		return
	}
	var list []string
	if err := readJSONBody(r, &list); err != nil {
		writeError(w, http.StatusBadRequest, "body must be a JSON array of cluster names")
		return
	}
	list, err := a.checkReplicationClusters(r.Context(), p["tenant"], "topic ["+name+"]", list)
	if err != nil {
		writeReplicationError(w, err)
		return
	}
	if err := a.pol.SetTopicReplicationClusters(r.Context(), name, list); err != nil {
		serviceError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) httpDeleteTopicReplication(w http.ResponseWriter, r *http.Request, p params) {
	name, _, ok := a.topicPolicyName(w, r, p)
	if !ok {
		return
	}
	if err := a.pol.SetTopicReplicationClusters(r.Context(), name, nil); err != nil {
		serviceError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
