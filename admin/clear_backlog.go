package admin

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/bundle"
	"github.com/magnetar-mq/magnetar/httpapi"
)

// registerClearBacklogRoutes installs a namespace's clearBacklog: of
// every subscription or {sub} only, of the whole namespace or one
// {bundle}.
func (a *API) registerClearBacklogRoutes(rt routeTable) {
	const base = "/admin/v2/namespaces/{tenant}/{ns}/"
	rt.Handle("POST", base+"clearBacklog", auth.AccessTenantAdmin, a.clearBacklog(false, false))
	rt.Handle("POST", base+"clearBacklog/{sub}", auth.AccessTenantAdmin, a.clearBacklog(false, true))
	rt.Add(httpapi.Route{Name: "namespaces.bundle.clearBacklog.post", Method: "POST", Pattern: base + "{bundle}/clearBacklog",
		Access: auth.AccessTenantAdmin, Handler: a.clearBacklog(true, false)})
	rt.Add(httpapi.Route{Name: "namespaces.bundle.clearBacklog.sub.post", Method: "POST", Pattern: base + "{bundle}/clearBacklog/{sub}",
		Access: auth.AccessTenantAdmin, Handler: a.clearBacklog(true, true)})
	rt.Handle("POST", base+"unsubscribe/{sub}", auth.AccessTenantAdmin, a.unsubscribeNamespace(false))
	rt.Add(httpapi.Route{Name: "namespaces.bundle.unsubscribe.sub.post", Method: "POST", Pattern: base + "{bundle}/unsubscribe/{sub}",
		Access: auth.AccessTenantAdmin, Handler: a.unsubscribeNamespace(true)})
}

// unsubscribeNamespace deletes subscription {sub} from every persistent
// topic of the namespace (or of {bundle}) that has it, as Pulsar's
// namespace unsubscribe: topics without it are skipped; a subscription
// with connected consumers is refused (412, the first such topic named)
// and the topics handled before it stay unsubscribed, as in Pulsar.
func (a *API) unsubscribeNamespace(byBundle bool) handler {
	return a.onBundleTopics(byBundle, func(w http.ResponseWriter, r *http.Request, p params, topics []string) {
		ctx := r.Context()
		for _, topic := range topics {
			err := a.subs.DeleteSubscription(ctx, topic, p["sub"], false)
			if err != nil && !errors.Is(err, broker.ErrSubscriptionNotFound) && !errors.Is(err, broker.ErrTopicNotFound) {
				a.serviceError(w, fmt.Errorf("unsubscribe %s from %s: %w", p["sub"], topic, err))
				return
			}
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// onBundleTopics serves a route over the persistent topics of the
// path's namespace, or (byBundle) of its bundle {bundle}.
func (a *API) onBundleTopics(byBundle bool, f func(w http.ResponseWriter, r *http.Request, p params, topics []string)) handler {
	return func(w http.ResponseWriter, r *http.Request, p params) {
		ns, ok := a.nsFromParams(w, r, p)
		if !ok {
			return
		}
		if topics, ok := a.topicsOfBundle(w, r, ns, byBundle, p); ok {
			f(w, r, p, topics)
		}
	}
}

// topicsOfBundle lists the persistent topics of ns, or (byBundle) those
// of its bundle {bundle}, writing the refusal when it fails.
func (a *API) topicsOfBundle(w http.ResponseWriter, r *http.Request, ns string, byBundle bool, p params) ([]string, bool) {
	var rg *bundle.Range
	if byBundle {
		got, err := a.namespaceBundle(r, ns, p["bundle"])
		if err != nil {
			a.serviceError(w, err)
			return nil, false
		}
		rg = &got
	}
	all, err := a.topics.TopicsOfNamespace(r.Context(), ns, true, false)
	if err != nil {
		a.serviceError(w, err)
		return nil, false
	}
	var out []string
	for _, topic := range all {
		if rg == nil || rg.Contains(bundle.Hash(topic)) {
			out = append(out, topic)
		}
	}
	return out, true
}

// clearBacklog skips every backlog to its end: of all subscriptions (or
// {sub} only) of the namespace's persistent topics (or the topics of
// {bundle}). A subscription skipped on one topic but absent on another
// is not an error; a {sub} that exists nowhere is a 404 as in Pulsar's
// per-topic call.
func (a *API) clearBacklog(byBundle, oneSub bool) handler {
	return a.onBundleTopics(byBundle, func(w http.ResponseWriter, r *http.Request, p params, topics []string) {
		ctx := r.Context()
		found := false
		for _, topic := range topics {
			subs, err := a.subs.Subscriptions(ctx, topic)
			if errors.Is(err, broker.ErrTopicNotFound) {
				continue // deleted meanwhile
			}
			if err != nil {
				a.serviceError(w, err)
				return
			}
			for _, s := range subs {
				if oneSub && s != p["sub"] {
					continue
				}
				found = true
				err := a.subs.SkipMessages(ctx, topic, s, -1)
				if err != nil && !errors.Is(err, broker.ErrSubscriptionNotFound) && !errors.Is(err, broker.ErrTopicNotFound) {
					a.serviceError(w, fmt.Errorf("clear backlog of %s on %s: %w", s, topic, err))
					return
				}
			}
		}
		if oneSub && !found {
			writeError(w, http.StatusNotFound, "Subscription not found")
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// namespaceBundle parses {bundle} and checks that it is one of ns's
// bundles: a bad or unknown range is a refusal (412); a failed read of
// the policies keeps its kind (404 for an unknown namespace, else
// internal).
func (a *API) namespaceBundle(r *http.Request, ns, s string) (bundle.Range, error) {
	rg, err := bundle.ParseRange(s)
	if err != nil {
		return rg, refuse(http.StatusPreconditionFailed, "%s", err)
	}
	bs, err := a.bundlesInForce(r.Context(), ns)
	if err != nil {
		return rg, err
	}
	if !bs.Has(rg) {
		return rg, refuse(http.StatusPreconditionFailed, "Namespace bundle %s/%s does not exist", ns, rg)
	}
	return rg, nil
}
