package admin

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/bundle"
	"github.com/magnetar-mq/magnetar/policy"
)

// registerNamespaceExtraRoutes installs persistence, antiAffinity,
// maxConsumersPerSubscription, encryptionRequired and clearBacklog
// (docs/policies.md).
func (a *API) registerNamespaceExtraRoutes(rt routeTable) {
	const base = "/admin/v2/namespaces/{tenant}/{ns}/"
	rt.Handle("GET", base+"persistence", a.getPolicy(func(p *policy.Policies) any { return p.Persistence }))
	rt.Handle("POST", base+"persistence", a.setPolicy(func(p *policy.Policies, body []byte) error {
		v, err := a.decodePersistence(body)
		if err != nil {
			return err
		}
		p.Persistence = &v
		return nil
	}))
	rt.Handle("DELETE", base+"persistence", a.setPolicy(func(p *policy.Policies, _ []byte) error { p.Persistence = nil; return nil }))

	rt.Handle("GET", base+"antiAffinity", func(w http.ResponseWriter, r *http.Request, prm params) {
		ns, ok := a.nsFromParams(w, r, prm)
		if !ok {
			return
		}
		p, err := a.pol.Get(r.Context(), ns)
		if err != nil {
			internalError(w, err)
			return
		}
		// Pulsar answers the bare group name (empty when unset).
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(p.AntiAffinityGroup))
	})
	rt.Handle("POST", base+"antiAffinity", a.setPolicy(func(p *policy.Policies, body []byte) error {
		g := strings.Trim(strings.TrimSpace(string(body)), `"`)
		if g == "" {
			return errors.New("anti-affinity group name must not be empty (use DELETE to remove it)")
		}
		if len(g) > 256 || strings.ContainsAny(g, "/\n\r\t") {
			return fmt.Errorf("invalid anti-affinity group name %.100q", g)
		}
		p.AntiAffinityGroup = g
		return nil
	}))
	rt.Handle("DELETE", base+"antiAffinity", a.setPolicy(func(p *policy.Policies, _ []byte) error { p.AntiAffinityGroup = ""; return nil }))
	rt.Handle("GET", "/admin/v2/namespaces/{cluster}/antiAffinity/{group}", a.httpAntiAffinityNamespaces)

	rt.Handle("GET", base+"maxConsumersPerSubscription", a.getPolicy(func(p *policy.Policies) any { return p.MaxConsumersPerSubscription }))
	rt.Handle("POST", base+"maxConsumersPerSubscription", a.setPolicy(intPolicy(func(p *policy.Policies) **int { return &p.MaxConsumersPerSubscription })))
	rt.Handle("DELETE", base+"maxConsumersPerSubscription", a.setPolicy(func(p *policy.Policies, _ []byte) error { p.MaxConsumersPerSubscription = nil; return nil }))

	rt.Handle("GET", base+"encryptionRequired", a.getPolicy(func(p *policy.Policies) any { return p.EncryptionRequired }))
	rt.Handle("POST", base+"encryptionRequired", a.setPolicy(func(p *policy.Policies, body []byte) error {
		v, err := parseBoolBody(body)
		if err != nil {
			return err
		}
		p.EncryptionRequired = v
		return nil
	}))

	rt.Handle("POST", base+"clearBacklog", a.clearBacklog(false, false))
	rt.Handle("POST", base+"clearBacklog/{sub}", a.clearBacklog(false, true))
	rt.Handle("POST", base+"{bundle}/clearBacklog", a.clearBacklog(true, false))
	rt.Handle("POST", base+"{bundle}/clearBacklog/{sub}", a.clearBacklog(true, true))
}

func parseBoolBody(body []byte) (bool, error) {
	switch strings.ToLower(strings.Trim(strings.TrimSpace(string(body)), `"`)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errors.New("body must be true or false")
}

// decodePersistence reads a PersistencePolicies body and validates it
// (E >= Qw >= Qa >= 1, and no more than the writable bookies when the
// broker knows its bookies).
func (a *API) decodePersistence(body []byte) (policy.PersistencePolicies, error) {
	var v policy.PersistencePolicies
	if err := decodeRequired(body, &v); err != nil {
		return v, err
	}
	if err := v.Validate(); err != nil {
		return v, err
	}
	if bs := a.svc.Bookies(); len(bs) > 0 {
		n := 0
		for _, b := range bs {
			if !b.ReadOnly {
				n++
			}
		}
		if v.BookkeeperEnsemble > n {
			//lint:ignore ST1005 Pulsar's capitalised wording, shown to admin clients
			return v, fmt.Errorf("Bookkeeper Ensemble (%d) > available bookies (%d)", v.BookkeeperEnsemble, n)
		}
	}
	return v, nil
}

// httpAntiAffinityNamespaces lists the namespaces of ?tenant=<tenant>
// (or ?property=, every tenant without either) whose anti-affinity group
// is {group}. The cluster must exist. With authorization on only a
// superuser may call it (auth's rules: the path names no tenant).
func (a *API) httpAntiAffinityNamespaces(w http.ResponseWriter, r *http.Request, p params) {
	ctx := r.Context()
	clusters, err := a.svc.Clusters(ctx)
	if err != nil {
		internalError(w, err)
		return
	}
	if !slices.Contains(clusters, p["cluster"]) {
		writeError(w, http.StatusPreconditionFailed, "Cluster "+p["cluster"]+" does not exist")
		return
	}
	q := r.URL.Query()
	tenants := []string{q.Get("tenant")} // v2's name; pulsaradmin sends v1's "property"
	if tenants[0] == "" {
		tenants[0] = q.Get("property")
	}
	if tenants[0] == "" {
		if tenants, err = a.pol.Tenants(ctx); err != nil {
			internalError(w, err)
			return
		}
	}
	out := []string{}
	for _, t := range tenants {
		nss, err := a.pol.Namespaces(ctx, t)
		if err != nil {
			serviceError(w, err)
			return
		}
		for _, ns := range nss {
			pol, err := a.pol.Get(ctx, ns)
			if err != nil {
				continue // deleted meanwhile
			}
			if pol.AntiAffinityGroup == p["group"] {
				out = append(out, ns)
			}
		}
	}
	slices.Sort(out)
	writeJSON(w, http.StatusOK, out)
}

// clearBacklog skips every backlog to its end: of all subscriptions (or
// {sub} only) of the namespace's persistent topics (or the topics of
// {bundle}). A subscription skipped on one topic but absent on another
// is not an error; a {sub} that exists nowhere is a 404 as in Pulsar's
// per-topic call.
func (a *API) clearBacklog(byBundle, oneSub bool) handler {
	return func(w http.ResponseWriter, r *http.Request, p params) {
		ns, ok := a.nsFromParams(w, r, p)
		if !ok {
			return
		}
		ctx := r.Context()
		var rg *bundle.Range
		if byBundle {
			got, err := a.namespaceBundle(r, ns, p["bundle"])
			if err != nil {
				writeError(w, http.StatusPreconditionFailed, err.Error())
				return
			}
			rg = &got
		}
		topics, err := a.svc.TopicsOfNamespace(ctx, ns, true, false)
		if err != nil {
			serviceError(w, err)
			return
		}
		found := false
		for _, topic := range topics {
			if rg != nil && !rg.Contains(bundle.Hash(topic)) {
				continue
			}
			subs, err := a.svc.Subscriptions(ctx, topic)
			if errors.Is(err, broker.ErrTopicNotFound) {
				continue // deleted meanwhile
			}
			if err != nil {
				serviceError(w, err)
				return
			}
			for _, s := range subs {
				if oneSub && s != p["sub"] {
					continue
				}
				found = true
				err := a.svc.SkipMessages(ctx, topic, s, -1)
				if err != nil && !errors.Is(err, broker.ErrSubscriptionNotFound) && !errors.Is(err, broker.ErrTopicNotFound) {
					serviceError(w, fmt.Errorf("clear backlog of %s on %s: %w", s, topic, err))
					return
				}
			}
		}
		if oneSub && !found {
			writeError(w, http.StatusNotFound, "Subscription not found")
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// namespaceBundle parses {bundle} and checks that it is one of ns's
// bundles.
func (a *API) namespaceBundle(r *http.Request, ns, s string) (bundle.Range, error) {
	rg, err := bundle.ParseRange(s)
	if err != nil {
		return rg, err
	}
	pol, err := a.pol.Get(r.Context(), ns)
	if err != nil {
		return rg, err
	}
	bd := pol.Bundles
	if bd == nil {
		bd = policy.DefaultBundles()
	}
	bs, err := bundle.FromData(bd.Boundaries, bd.NumBundles)
	if err != nil {
		return rg, err
	}
	if !bs.Has(rg) {
		//lint:ignore ST1005 Pulsar's capitalised wording, shown to admin clients
		return rg, fmt.Errorf("Namespace bundle %s/%s does not exist", ns, rg)
	}
	return rg, nil
}

// extraTopicPolicies are the topic-level persistence and
// maxConsumersPerSubscription endpoints (see topicPolicy).
func (a *API) extraTopicPolicies() []topicPolicy {
	return []topicPolicy{
		{
			name: "persistence",
			get:  func(tp *policy.TopicPolicies) any { return tp.Persistence },
			set: func(tp *policy.TopicPolicies, _ *http.Request, body []byte) error {
				v, err := a.decodePersistence(body)
				if err != nil {
					return err
				}
				tp.Persistence = &v
				return nil
			},
			clear: func(tp *policy.TopicPolicies, _ *http.Request) { tp.Persistence = nil },
			// null: the broker's managedLedgerDefault* values apply.
			applied: func(res *policy.Resolved, _ *http.Request) any { return res.Persistence },
		},
		{
			name: "maxConsumersPerSubscription",
			get:  func(tp *policy.TopicPolicies) any { return tp.MaxConsumersPerSubscription },
			set: func(tp *policy.TopicPolicies, _ *http.Request, body []byte) error {
				var n *int
				if err := intPolicy(func(p *policy.Policies) **int { return &n })(nil, body); err != nil {
					return err
				}
				tp.MaxConsumersPerSubscription = n
				return nil
			},
			clear:   func(tp *policy.TopicPolicies, _ *http.Request) { tp.MaxConsumersPerSubscription = nil },
			applied: func(res *policy.Resolved, _ *http.Request) any { return res.MaxConsumersPerSubscription },
		},
	}
}
