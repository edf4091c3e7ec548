package admin

import (
	"context"
	"errors"
	"net/http"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/bundle"
	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/httpapi"
)

// Pulsar's /admin/v2/resource-quotas: the default resource quota and
// the quotas of namespace bundles, kept in the metadata store
// (cluster.Quotas) where the clustered broker's placement reads them.
// Superuser only, as in Pulsar.

// ResourceQuotas keeps the resource quotas (*cluster.Quotas).
type ResourceQuotas interface {
	DefaultQuota(ctx context.Context) (cluster.ResourceQuota, error)
	SetDefaultQuota(ctx context.Context, q cluster.ResourceQuota) error
	// BundleQuota is the bundle's own quota, else the default.
	BundleQuota(ctx context.Context, ns string, r bundle.Range) (cluster.ResourceQuota, error)
	SetBundleQuota(ctx context.Context, ns string, r bundle.Range, q cluster.ResourceQuota) error
	ResetBundleQuota(ctx context.Context, ns string, r bundle.Range) error
}

func (a *API) registerResourceQuotaRoutes(rt routeTable) {
	if a.quotas == nil {
		return
	}
	const bq = "/admin/v2/resource-quotas/{tenant}/{ns}/{bundle}"
	rt.Add(
		httpapi.Route{Method: "GET", Pattern: "/admin/v2/resource-quotas", Access: auth.AccessSuperUser,
			Response: cluster.ResourceQuota{}, Handler: a.httpDefaultQuota},
		httpapi.Route{Method: "POST", Pattern: "/admin/v2/resource-quotas", Access: auth.AccessSuperUser,
			Request: cluster.ResourceQuota{}, Handler: a.httpSetDefaultQuota},
		httpapi.Route{Method: "GET", Pattern: bq, Access: auth.AccessSuperUser,
			Response: cluster.ResourceQuota{}, Handler: a.onQuotaBundle(a.httpBundleQuota)},
		httpapi.Route{Method: "POST", Pattern: bq, Access: auth.AccessSuperUser,
			Request: cluster.ResourceQuota{}, Handler: a.onQuotaBundle(a.httpSetBundleQuota)},
		httpapi.Route{Method: "DELETE", Pattern: bq, Access: auth.AccessSuperUser,
			Handler: a.onQuotaBundle(func(w http.ResponseWriter, r *http.Request, ns string, br bundle.Range) {
				a.replyDone(w, a.quotas.ResetBundleQuota(r.Context(), ns, br))
			})},
	)
}

func (a *API) httpDefaultQuota(w http.ResponseWriter, r *http.Request, _ params) {
	q, err := a.quotas.DefaultQuota(r.Context())
	a.reply(w, q, err)
}

func (a *API) httpSetDefaultQuota(w http.ResponseWriter, r *http.Request, _ params) {
	q, ok := readQuota(w, r)
	if ok {
		a.replyQuota(w, a.quotas.SetDefaultQuota(r.Context(), q))
	}
}

func (a *API) httpBundleQuota(w http.ResponseWriter, r *http.Request, ns string, br bundle.Range) {
	q, err := a.quotas.BundleQuota(r.Context(), ns, br)
	a.reply(w, q, err)
}

func (a *API) httpSetBundleQuota(w http.ResponseWriter, r *http.Request, ns string, br bundle.Range) {
	q, ok := readQuota(w, r)
	if ok {
		a.replyQuota(w, a.quotas.SetBundleQuota(r.Context(), ns, br, q))
	}
}

// readQuota decodes a ResourceQuota body (400 when it is missing or not
// one).
func readQuota(w http.ResponseWriter, r *http.Request) (cluster.ResourceQuota, bool) {
	var q cluster.ResourceQuota
	if err := readRequiredJSON(r, &q); err != nil {
		writeError(w, http.StatusBadRequest, "body must be a ResourceQuota: "+err.Error())
		return q, false
	}
	return q, true
}

func (a *API) replyQuota(w http.ResponseWriter, err error) {
	if errors.Is(err, cluster.ErrBadQuota) {
		writeError(w, http.StatusPreconditionFailed, err.Error())
		return
	}
	a.replyDone(w, err)
}

// onQuotaBundle serves a route of one bundle of an existing namespace: the
// path's {bundle} must be a range "0x........_0x........" (412).
func (a *API) onQuotaBundle(f func(w http.ResponseWriter, r *http.Request, ns string, br bundle.Range)) handler {
	return func(w http.ResponseWriter, r *http.Request, p params) {
		ns, ok := a.nsFromParams(w, r, p)
		if !ok {
			return
		}
		br, err := bundle.ParseRange(p["bundle"])
		if err != nil {
			writeError(w, http.StatusPreconditionFailed, "Invalid bundle range: "+err.Error())
			return
		}
		f(w, r, ns, br)
	}
}
