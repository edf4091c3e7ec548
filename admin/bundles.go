package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/bundle"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/policy"
)

// A namespace's bundles as they are in force: the namespace policies
// answer the boundaries the cluster uses (its local policies, rewritten
// by splits), as Pulsar's GET /namespaces/{t}/{ns} does; DELETE of a
// bundle releases its ownership, refused (409) while a persistent topic
// of the namespace hashes into it unless force, as Pulsar's. The
// standalone is a cluster of one broker, so all of this holds there too.

func (a *API) registerBundleAdminRoutes(rt routeTable) {
	const ns = "/admin/v2/namespaces/{tenant}/{ns}"
	rt.Add(
		httpapi.Route{Method: "GET", Pattern: ns, Access: auth.AccessTenantAdmin, Response: policy.Policies{},
			Handler: nsValue(a, a.policiesInForce)},
		httpapi.Route{Method: "DELETE", Pattern: ns + "/{bundle}", Access: auth.AccessTenantAdmin, Handler: a.httpDeleteBundle},
	)
}

// policiesInForce is the namespace's policies with the bundles in force
// (a copy: the store's value is shared).
func (a *API) policiesInForce(ctx context.Context, ns string) (*policy.Policies, error) {
	p, err := a.pol.Get(ctx, ns)
	if err != nil || a.own.Cluster() == nil {
		return p, err
	}
	bs, err := a.own.Cluster().Bundles(ctx, ns)
	if err != nil {
		return p, nil // the stored value still answers
	}
	cp := *p
	cp.Bundles = bundlesData(bs)
	return &cp, nil
}

// bundlesData is bs as Pulsar's BundlesData (bundle.Bundles marshals
// to that JSON).
func bundlesData(bs bundle.Bundles) *policy.BundlesData {
	js, _ := json.Marshal(bs)
	var d policy.BundlesData
	_ = json.Unmarshal(js, &d)
	return &d
}

// bundlesInForce are ns's bundles: the cluster's, or on a broker outside
// one the namespace policies' (the one full bundle when unset).
func (a *API) bundlesInForce(ctx context.Context, ns string) (bundle.Bundles, error) {
	if c := a.own.Cluster(); c != nil {
		return c.Bundles(ctx, ns)
	}
	pol, err := a.pol.Get(ctx, ns)
	if err != nil {
		return bundle.Bundles{}, err
	}
	bd := pol.Bundles
	if bd == nil {
		bd = policy.DefaultBundles()
	}
	return bundle.FromData(bd.Boundaries, bd.NumBundles)
}

func (a *API) httpDeleteBundle(w http.ResponseWriter, r *http.Request, p params) {
	ns, ok := a.nsFromParams(w, r, p)
	if !ok {
		return
	}
	rg, err := a.namespaceBundle(r, ns, p["bundle"])
	if err != nil {
		a.serviceError(w, err)
		return
	}
	force, _ := strconv.ParseBool(r.URL.Query().Get("force"))
	topics, err := a.topics.TopicsOfNamespace(r.Context(), ns, true, false)
	if err != nil {
		a.serviceError(w, err)
		return
	}
	var inBundle []string
	for _, t := range topics {
		if rg.Contains(bundle.Hash(t)) {
			inBundle = append(inBundle, t)
		}
	}
	if len(inBundle) > 0 && !force {
		writeError(w, http.StatusConflict, "Cannot delete non empty bundle")
		return
	}
	ctx := context.WithoutCancel(r.Context())
	if c := a.own.Cluster(); c != nil {
		err = c.UnloadBundle(ctx, ns, rg)
	} else {
		for _, t := range inBundle {
			if _, err = a.life.UnloadTopic(t); err != nil {
				break
			}
		}
	}
	a.replyDone(w, err)
}
