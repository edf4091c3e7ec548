package broker

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/magnetar-mq/magnetar/metadata"
)

// BookieInfo is what the admin API and /metrics need to know about the
// storage nodes. The cmd wiring fills Deps.Bookies; nil means "no bookie
// information" (the bookie endpoints answer an empty list).
type BookieInfo interface {
	// Bookies lists the known bookies.
	Bookies() []BookieStatus
}

// BookieStatus is one bookie as the admin API reports it.
type BookieStatus struct {
	BookieID string `json:"bookieId"`
	// ReadOnly is true when the bookie refuses new writes.
	ReadOnly bool `json:"readOnly"`
	// Stats are optional numeric gauges/counters exported on /metrics as
	// bookie_<name>{bookie="<id>"} (e.g. "journal_fsync_latency_ms_avg",
	// "group_commit_size_avg", "add_latency_ms_avg", "cache_hit_ratio").
	Stats map[string]float64 `json:"-"`
}

// LocalBookie adapts one in-process bookie to BookieInfo (the
// standalone's): ReadOnly reports its state, Stats (optional) its
// numeric stats for /metrics.
type LocalBookie struct {
	ID       string
	ReadOnly func() bool
	Stats    func() map[string]float64
}

// Bookies implements BookieInfo.
func (l LocalBookie) Bookies() []BookieStatus {
	s := BookieStatus{BookieID: l.ID}
	if l.ReadOnly != nil {
		s.ReadOnly = l.ReadOnly()
	}
	if l.Stats != nil {
		s.Stats = l.Stats()
	}
	return []BookieStatus{s}
}

// registerTenantRoutes installs clusters, brokers, bookies, tenants and
// namespaces CRUD.
func (b *Broker) registerTenantRoutes(rt *Router) {
	rt.Handle("GET", "/admin/v2/clusters/{cluster}", b.httpGetCluster)
	rt.Handle("PUT", "/admin/v2/clusters/{cluster}", notImplemented)
	rt.Handle("POST", "/admin/v2/clusters/{cluster}", notImplemented)
	rt.Handle("DELETE", "/admin/v2/clusters/{cluster}", notImplemented)
	rt.Handle("GET", "/admin/v2/brokers/{cluster}", b.httpListBrokers)
	rt.Handle("GET", "/admin/v2/bookies/all", b.httpListBookies)
	rt.Handle("GET", "/admin/v2/tenants", b.httpListTenants)
	rt.Handle("GET", "/admin/v2/tenants/{tenant}", b.httpGetTenant)
	rt.Handle("PUT", "/admin/v2/tenants/{tenant}", b.httpPutTenant(true))
	rt.Handle("POST", "/admin/v2/tenants/{tenant}", b.httpPutTenant(false))
	rt.Handle("DELETE", "/admin/v2/tenants/{tenant}", b.httpDeleteTenant)
	rt.Handle("GET", "/admin/v2/namespaces/{tenant}", b.httpListNamespaces)
	rt.Handle("GET", "/admin/v2/namespaces/{tenant}/{ns}", b.httpGetNamespace)
	rt.Handle("PUT", "/admin/v2/namespaces/{tenant}/{ns}", b.httpCreateNamespace)
	rt.Handle("DELETE", "/admin/v2/namespaces/{tenant}/{ns}", b.httpDeleteNamespace)
}

// notImplemented answers a known Pulsar endpoint Magnetar does not serve.
func notImplemented(w http.ResponseWriter, r *http.Request, _ Params) {
	writeError(w, http.StatusNotImplemented, "Not implemented in Magnetar: "+r.Method+" "+r.URL.Path)
}

func internalError(w http.ResponseWriter, err error) {
	writeError(w, http.StatusInternalServerError, err.Error())
}

func (b *Broker) httpGetCluster(w http.ResponseWriter, r *http.Request, p Params) {
	cs, err := b.reg.clusters(r.Context())
	if err != nil {
		internalError(w, err)
		return
	}
	if !slices.Contains(cs, p["cluster"]) {
		writeError(w, http.StatusNotFound, "Cluster does not exist")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"serviceUrl":       b.webURL(),
		"brokerServiceUrl": b.serviceURL(),
		"peerClusterNames": []string{},
	})
}

// brokerID is the broker's "host:port" id as Pulsar lists it.
func (b *Broker) brokerID() string {
	return strings.TrimPrefix(b.webURL(), "http://")
}

func (b *Broker) httpListBrokers(w http.ResponseWriter, r *http.Request, p Params) {
	if p["cluster"] != b.cfg.ClusterName {
		writeError(w, http.StatusNotFound, "Cluster does not exist")
		return
	}
	ids, err := b.liveBrokers(r.Context())
	if err != nil {
		internalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ids)
}

func (b *Broker) httpListBookies(w http.ResponseWriter, _ *http.Request, _ Params) {
	list := []BookieStatus{}
	if b.deps.Bookies != nil {
		list = append(list, b.deps.Bookies.Bookies()...)
	}
	type bk struct {
		BookieID string `json:"bookieId"`
		State    string `json:"state"`
		ReadOnly bool   `json:"readOnly"`
	}
	out := make([]bk, 0, len(list))
	for _, s := range list {
		st := "writable"
		if s.ReadOnly {
			st = "read-only"
		}
		out = append(out, bk{s.BookieID, st, s.ReadOnly})
	}
	writeJSON(w, http.StatusOK, map[string]any{"bookies": out})
}

func (b *Broker) httpListTenants(w http.ResponseWriter, r *http.Request, _ Params) {
	ts, err := b.reg.tenants(r.Context())
	if err != nil {
		internalError(w, err)
		return
	}
	slices.Sort(ts)
	writeJSON(w, http.StatusOK, ts)
}

func (b *Broker) getTenant(ctx context.Context, tenant string) (TenantInfo, error) {
	var ti TenantInfo
	if !validNamePart(tenant) {
		return ti, ErrTenantNotFound
	}
	data, _, err := b.deps.Metadata.Get(ctx, policiesPath+"/"+tenant)
	if errors.Is(err, metadata.ErrNotFound) {
		return ti, ErrTenantNotFound
	}
	if err != nil {
		return ti, err
	}
	if err := json.Unmarshal(data, &ti); err != nil {
		return ti, err
	}
	if ti.AdminRoles == nil {
		ti.AdminRoles = []string{}
	}
	if ti.AllowedClusters == nil {
		ti.AllowedClusters = []string{}
	}
	return ti, nil
}

func (b *Broker) httpGetTenant(w http.ResponseWriter, r *http.Request, p Params) {
	ti, err := b.getTenant(r.Context(), p["tenant"])
	if errors.Is(err, ErrTenantNotFound) {
		writeError(w, http.StatusNotFound, "Tenant does not exist")
		return
	}
	if err != nil {
		internalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ti)
}

// readJSONBody decodes an optional JSON body into v; an empty body or
// "null" leaves v unchanged.
func readJSONBody(r *http.Request, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return err
	}
	s := strings.TrimSpace(string(body))
	if s == "" || s == "null" {
		return nil
	}
	return json.Unmarshal(body, v)
}

func (b *Broker) httpPutTenant(create bool) HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p Params) {
		tenant := p["tenant"]
		if !validNamePart(tenant) {
			writeError(w, http.StatusPreconditionFailed, "Tenant name is not valid")
			return
		}
		var ti TenantInfo
		if err := readJSONBody(r, &ti); err != nil {
			writeError(w, http.StatusBadRequest, "bad tenant info: "+err.Error())
			return
		}
		if ti.AdminRoles == nil {
			ti.AdminRoles = []string{}
		}
		if ti.AllowedClusters == nil {
			ti.AllowedClusters = []string{}
		}
		cs, err := b.reg.clusters(r.Context())
		if err != nil {
			internalError(w, err)
			return
		}
		for _, c := range ti.AllowedClusters {
			if !slices.Contains(cs, c) {
				writeError(w, http.StatusPreconditionFailed, "Clusters do not exist: "+c)
				return
			}
		}
		data, _ := json.Marshal(ti)
		if create {
			_, err = b.deps.Metadata.Put(r.Context(), policiesPath+"/"+tenant, data, metadata.NotExists)
			if errors.Is(err, metadata.ErrExists) {
				writeError(w, http.StatusConflict, "Tenant already exists")
				return
			}
		} else {
			var v metadata.Version
			_, v, err = b.deps.Metadata.Get(r.Context(), policiesPath+"/"+tenant)
			if errors.Is(err, metadata.ErrNotFound) {
				writeError(w, http.StatusNotFound, "Tenant does not exist")
				return
			}
			if err == nil {
				_, err = b.deps.Metadata.Put(r.Context(), policiesPath+"/"+tenant, data, v)
			}
		}
		if err != nil {
			internalError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

func (b *Broker) httpDeleteTenant(w http.ResponseWriter, r *http.Request, p Params) {
	tenant := p["tenant"]
	nss, err := b.reg.namespaces(r.Context(), tenant)
	if errors.Is(err, ErrTenantNotFound) {
		writeError(w, http.StatusNotFound, "Tenant does not exist")
		return
	}
	if err != nil {
		internalError(w, err)
		return
	}
	if len(nss) > 0 {
		writeError(w, http.StatusConflict, "The tenant still has active namespaces")
		return
	}
	if err := b.deps.Metadata.Delete(r.Context(), policiesPath+"/"+tenant, metadata.AnyVersion); err != nil && !errors.Is(err, metadata.ErrNotFound) {
		internalError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (b *Broker) httpListNamespaces(w http.ResponseWriter, r *http.Request, p Params) {
	nss, err := b.reg.namespaces(r.Context(), p["tenant"])
	if errors.Is(err, ErrTenantNotFound) {
		writeError(w, http.StatusNotFound, "Tenant does not exist")
		return
	}
	if err != nil {
		internalError(w, err)
		return
	}
	slices.Sort(nss)
	writeJSON(w, http.StatusOK, nss)
}

// nsFromParams returns "tenant/ns", writing 404 when it is not registered.
func (b *Broker) nsFromParams(w http.ResponseWriter, r *http.Request, p Params) (string, bool) {
	ns := p["tenant"] + "/" + p["ns"]
	ok, err := b.reg.namespaceExists(r.Context(), ns)
	if err != nil {
		internalError(w, err)
		return "", false
	}
	if !ok {
		writeError(w, http.StatusNotFound, "Namespace does not exist")
		return "", false
	}
	return ns, true
}

func (b *Broker) httpGetNamespace(w http.ResponseWriter, r *http.Request, p Params) {
	ns, ok := b.nsFromParams(w, r, p)
	if !ok {
		return
	}
	pol, err := b.ext.policies(r.Context(), ns)
	if err != nil {
		internalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, pol)
}

func (b *Broker) httpCreateNamespace(w http.ResponseWriter, r *http.Request, p Params) {
	ns := p["tenant"] + "/" + p["ns"]
	if !validNamePart(p["ns"]) {
		writeError(w, http.StatusPreconditionFailed, "Namespace name is not valid")
		return
	}
	pol := Policies{}
	if err := readJSONBody(r, &pol); err != nil {
		writeError(w, http.StatusBadRequest, "bad policies: "+err.Error())
		return
	}
	if len(pol.ReplicationClusters) == 0 {
		pol.ReplicationClusters = []string{b.cfg.ClusterName}
	}
	bs, err := namespaceBundlesPolicy(pol.Bundles)
	if err != nil {
		writeError(w, http.StatusPreconditionFailed, err.Error())
		return
	}
	pol.Bundles = bs
	data, _ := json.Marshal(pol)
	err = b.reg.createNamespace(r.Context(), ns, data)
	switch {
	case errors.Is(err, ErrTenantNotFound):
		writeError(w, http.StatusNotFound, "Tenant does not exist")
	case errors.Is(err, ErrAlreadyExists):
		writeError(w, http.StatusConflict, "Namespace already exists")
	case errors.Is(err, ErrInvalidTopicName):
		writeError(w, http.StatusPreconditionFailed, err.Error())
	case err != nil:
		internalError(w, err)
	default:
		b.ext.forget(ns)
		w.WriteHeader(http.StatusNoContent)
	}
}

func (b *Broker) httpDeleteNamespace(w http.ResponseWriter, r *http.Request, p Params) {
	ns, ok := b.nsFromParams(w, r, p)
	if !ok {
		return
	}
	ctx := r.Context()
	force := r.URL.Query().Get("force") == "true"
	topics, err := b.topicsOfNamespace(ctx, ns, true, true)
	if err != nil {
		internalError(w, err)
		return
	}
	if len(topics) > 0 && !force {
		writeError(w, http.StatusConflict, "Cannot delete non empty namespace")
		return
	}
	for _, tn := range topics {
		if err := b.DeleteTopic(ctx, tn); err != nil && !errors.Is(err, ErrTopicNotFound) {
			internalError(w, err)
			return
		}
	}
	for _, domain := range []string{"persistent", "non-persistent"} {
		parts, _ := b.reg.partitionedTopics(ctx, ns, domain)
		for _, pt := range parts {
			if tn, err := parseTopicName(pt); err == nil {
				_ = b.reg.deletePartitioned(ctx, tn)
			}
		}
	}
	if err := b.deps.Metadata.Delete(ctx, policiesPath+"/"+ns, metadata.AnyVersion); err != nil && !errors.Is(err, metadata.ErrNotFound) {
		internalError(w, err)
		return
	}
	b.ext.forget(ns)
	w.WriteHeader(http.StatusNoContent)
}
