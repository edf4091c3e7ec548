package admin

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/bookieinfo"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/internal/version"
	"github.com/magnetar-mq/magnetar/policy"
)

// registerClusterRoutes installs clusters, brokers, bookies and health.
func (a *API) registerClusterRoutes(rt routeTable) {
	rt.Handle("GET", "/admin/v2/brokers/version", auth.AccessSuperUser, func(w http.ResponseWriter, _ *http.Request, _ params) {
		// Pulsar answers the bare version string.
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, version.Get().Version)
	})
	rt.Handle("GET", "/admin/v2/clusters", auth.AccessAny, value(a, func(ctx context.Context, _ params) ([]string, error) {
		return a.node.Clusters(ctx)
	}))
	a.registerReplicationRoutes(rt)
	rt.Handle("GET", "/admin/v2/bookies/all", auth.AccessSuperUser, a.httpListBookies)
}

// registerTenantRoutes installs tenants and namespaces CRUD.
func (a *API) registerTenantRoutes(rt routeTable) {
	rt.Handle("GET", "/admin/v2/tenants", auth.AccessSuperUser, value(a, func(ctx context.Context, _ params) ([]string, error) {
		return sorted(a.pol.Tenants(ctx))
	}))
	rt.Add(httpapi.Route{Method: "GET", Pattern: "/admin/v2/tenants/{tenant}", Access: auth.AccessTenantAdmin, Response: policy.TenantInfo{},
		Handler: value(a, func(ctx context.Context, p params) (policy.TenantInfo, error) { return a.pol.Tenant(ctx, p["tenant"]) })})
	rt.Handle("PUT", "/admin/v2/tenants/{tenant}", auth.AccessSuperUser, a.httpPutTenant(true))
	rt.Handle("POST", "/admin/v2/tenants/{tenant}", auth.AccessSuperUser, a.httpPutTenant(false))
	rt.Handle("DELETE", "/admin/v2/tenants/{tenant}", auth.AccessSuperUser, a.httpDeleteTenant)
	rt.Handle("GET", "/admin/v2/namespaces/{tenant}", auth.AccessTenantAdmin, value(a, func(ctx context.Context, p params) ([]string, error) {
		return sorted(a.pol.Namespaces(ctx, p["tenant"]))
	}))
	// GET /admin/v2/namespaces/{tenant}/{ns}: bundles.go (the bundles in force).
	rt.Handle("PUT", "/admin/v2/namespaces/{tenant}/{ns}", auth.AccessTenantAdmin, a.httpCreateNamespace)
	rt.Handle("DELETE", "/admin/v2/namespaces/{tenant}/{ns}", auth.AccessTenantAdmin, a.httpDeleteNamespace)
}

// bookieList lists the known bookies (none without Deps.Bookies).
func (a *API) bookieList() []bookieinfo.Status {
	if a.bookies == nil {
		return nil
	}
	return a.bookies.Bookies()
}

func (a *API) httpListBookies(w http.ResponseWriter, _ *http.Request, _ params) {
	type bk struct {
		BookieID string `json:"bookieId"`
		State    string `json:"state"`
		ReadOnly bool   `json:"readOnly"`
	}
	list := a.bookieList()
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

func (a *API) httpPutTenant(create bool) handler {
	return func(w http.ResponseWriter, r *http.Request, p params) {
		tenant := p["tenant"]
		if !policy.ValidName(tenant) {
			writeError(w, http.StatusPreconditionFailed, "Tenant name is not valid")
			return
		}
		var ti policy.TenantInfo
		if err := readJSONBody(r, &ti); err != nil {
			writeError(w, http.StatusBadRequest, "bad tenant info: "+err.Error())
			return
		}
		cs, err := a.node.Clusters(r.Context())
		if err != nil {
			a.internalError(w, err)
			return
		}
		for _, c := range ti.AllowedClusters {
			if !slices.Contains(cs, c) {
				writeError(w, http.StatusPreconditionFailed, "Clusters do not exist: "+c)
				return
			}
		}
		if create {
			err = a.pol.CreateTenant(r.Context(), tenant, ti)
			if errors.Is(err, policy.ErrExists) {
				writeError(w, http.StatusConflict, "Tenant already exists")
				return
			}
		} else {
			err = a.pol.UpdateTenant(r.Context(), tenant, ti)
		}
		if err != nil {
			a.serviceError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

func (a *API) httpDeleteTenant(w http.ResponseWriter, r *http.Request, p params) {
	err := a.pol.DeleteTenant(r.Context(), p["tenant"])
	if errors.Is(err, policy.ErrNotEmpty) {
		writeError(w, http.StatusConflict, "The tenant still has active namespaces")
		return
	}
	a.replyDone(w, err)
}

func (a *API) httpCreateNamespace(w http.ResponseWriter, r *http.Request, p params) {
	ns := p["tenant"] + "/" + p["ns"]
	if !policy.ValidName(p["ns"]) {
		writeError(w, http.StatusPreconditionFailed, "Namespace name is not valid")
		return
	}
	pol := &policy.Policies{}
	if err := readJSONBody(r, pol); err != nil {
		writeError(w, http.StatusBadRequest, "bad policies: "+err.Error())
		return
	}
	if len(pol.ReplicationClusters) > 0 {
		list, err := a.checkReplicationClusters(r.Context(), p["tenant"], "namespace ["+ns+"]", pol.ReplicationClusters)
		if err != nil {
			a.serviceError(w, err)
			return
		}
		pol.ReplicationClusters = list
	}
	err := a.pol.CreateNamespace(r.Context(), ns, pol)
	switch {
	case errors.Is(err, policy.ErrExists):
		writeError(w, http.StatusConflict, "Namespace already exists")
	case err != nil:
		a.serviceError(w, err)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// httpDeleteNamespace deletes a namespace without topics, or (force=true)
// its topics first.
func (a *API) httpDeleteNamespace(w http.ResponseWriter, r *http.Request, p params) {
	ns, ok := a.nsFromParams(w, r, p)
	if !ok {
		return
	}
	ctx := r.Context()
	force := r.URL.Query().Get("force") == "true"
	topics, err := a.topics.TopicsOfNamespace(ctx, ns, true, true)
	if err != nil {
		a.serviceError(w, err)
		return
	}
	if len(topics) > 0 && !force {
		writeError(w, http.StatusConflict, "Cannot delete non empty namespace")
		return
	}
	for _, tn := range topics {
		if err := a.topics.DeleteTopic(ctx, tn, true); err != nil && !errors.Is(err, errTopicNotFound) {
			a.internalError(w, err)
			return
		}
	}
	for _, domain := range []string{"persistent", "non-persistent"} {
		parts, _ := a.topics.PartitionedTopics(ctx, ns, domain)
		for _, pt := range parts {
			if err := a.topics.DeletePartitionedTopic(ctx, pt); err != nil && !errors.Is(err, errTopicNotFound) {
				a.internalError(w, err)
				return
			}
		}
	}
	if err := a.pol.DeleteNamespace(ctx, ns); err != nil {
		a.internalError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
