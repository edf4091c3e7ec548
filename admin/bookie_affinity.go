package admin

import (
	"context"
	"net/http"

	"github.com/magnetar-mq/magnetar/policy"
)

// A namespace's bookie affinity group (Pulsar's BookieAffinityGroupData),
// superusers only as in Pulsar:
//
//	GET|POST|DELETE /admin/v2/namespaces/{tenant}/{ns}/persistence/bookieAffinity
//
// The groups name groups of the bookies' rack information (package
// ledger, RackInfoPath); new ledgers of the namespace's topics are placed
// by them (docs/policies.md). GET of a namespace without one answers 204
// with no body (pulsaradmin: nil), as Pulsar answers its null for a
// namespace whose local policies hold no group; DELETE of a group that is
// not set is done (204).

func (a *API) registerBookieAffinityRoutes(rt routeTable) {
	superResource{Item: "/admin/v2/namespaces/{tenant}/{ns}/persistence/bookieAffinity", ItemType: policy.BookieAffinityGroup{},
		Get: a.onNamespace(func(w http.ResponseWriter, r *http.Request, ns string) {
			pol, err := a.pol.Get(r.Context(), ns)
			if err != nil {
				a.serviceError(w, err)
				return
			}
			writePolicyValue(w, pol.BookieAffinityGroup)
		}),
		Set: a.onNamespace(func(w http.ResponseWriter, r *http.Request, ns string) {
			var g policy.BookieAffinityGroup
			if decodeBody(w, r, &g, "body must be a BookieAffinityGroupData JSON object") {
				a.replyDone(w, a.setBookieAffinity(r.Context(), ns, &g))
			}
		}),
		Delete: a.onNamespace(func(w http.ResponseWriter, r *http.Request, ns string) {
			a.replyDone(w, a.setBookieAffinity(r.Context(), ns, nil))
		}),
	}.add(rt)
}

func (a *API) setBookieAffinity(ctx context.Context, ns string, g *policy.BookieAffinityGroup) error {
	if g != nil {
		if err := g.Validate(); err != nil {
			return &policy.BadValueError{Err: err}
		}
	}
	return a.pol.Update(ctx, ns, func(p *policy.Policies) error {
		p.BookieAffinityGroup = g
		return nil
	})
}
