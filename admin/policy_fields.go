package admin

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/policy"
)

// Policy values as data. A namespace's policies (policy.Policies) and a
// topic's own (policy.TopicPolicies) are records of optional values, and
// every value has the same three routes at its level: GET reads it, a
// write (POST, and PUT where Pulsar takes it) stores the body's value,
// DELETE unsets it. A policyField declares one value once; the namespace
// list (policies.go) and the topic list (topicpolicies.go) are lists of
// fields, and one loop per level turns a list into routes. The parsers
// below check a body the same way at both levels.

// policyField is one policy value of a record R.
type policyField[R any] struct {
	name string
	// get answers GET (nil: no GET route); on an empty record its value
	// documents the route's response type.
	get func(rec *R) any
	// set stores the request's value (nil: no write routes); an error
	// refuses the request with 412 and changes nothing.
	set func(rec *R, r *http.Request, body []byte) error
	// clear answers DELETE (nil: no DELETE route).
	clear func(rec *R, r *http.Request) error
	// writes are the write methods (default POST).
	writes []string
	// deletes are more paths whose DELETE clears the value.
	deletes []string
	// applied answers a topic-level GET with ?applied=true: the value in
	// force (topic, else namespace, else broker default).
	applied func(res *policy.Resolved) any
}

// writePolicyValue answers a policy GET: the value, or 204 No Content
// for an unset one (a nil value or nil pointer), as Pulsar answers a
// null (pulsaradmin reads the empty body as "not set").
func writePolicyValue(w http.ResponseWriter, v any) {
	if rv := reflect.ValueOf(v); v == nil || (rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Map || rv.Kind() == reflect.Slice) && rv.IsNil() {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// policyRoutes declares the routes of fields under base (tenant
// admins): GET served by read, the writes and DELETE by update.
func policyRoutes[R any](rt routeTable, base string, fields []policyField[R], read func(policyField[R]) handler,
	update func(set func(rec *R, r *http.Request, body []byte) error) handler) {
	for _, f := range fields {
		if f.get != nil {
			var empty R
			rt.Add(httpapi.Route{Method: http.MethodGet, Pattern: base + f.name, Access: auth.AccessTenantAdmin,
				Response: f.get(&empty), Handler: read(f)})
		}
		if f.set != nil {
			for _, m := range f.writeMethods() {
				rt.Handle(m, base+f.name, auth.AccessTenantAdmin, update(f.set))
			}
		}
		if f.clear != nil {
			clear := update(func(rec *R, r *http.Request, _ []byte) error { return f.clear(rec, r) })
			for _, name := range append([]string{f.name}, f.deletes...) {
				rt.Handle(http.MethodDelete, base+name, auth.AccessTenantAdmin, clear)
			}
		}
	}
}

// methods returns f written by the given methods.
func (f policyField[R]) methods(m ...string) policyField[R] { f.writes = m; return f }

// inForce returns f with the topic level's ?applied=true answer.
func (f policyField[R]) inForce(applied func(*policy.Resolved) any) policyField[R] {
	f.applied = applied
	return f
}

// writeMethods are the methods of f's write routes.
func (f policyField[R]) writeMethods() []string {
	if len(f.writes) == 0 {
		return []string{http.MethodPost}
	}
	return f.writes
}

// parser reads a policy value from a write request.
type parser[T any] func(r *http.Request, body []byte) (T, error)

// stored is a value a record holds in its own way: get answers GET,
// put stores a write's parsed value and, given nil, unsets it (DELETE).
func stored[R, T any](name string, get func(*R) any, put func(rec *R, v *T), parse parser[T]) policyField[R] {
	return policyField[R]{name: name, get: get,
		set: func(rec *R, r *http.Request, body []byte) error {
			v, err := parse(r, body)
			if err == nil {
				put(rec, &v)
			}
			return err
		},
		clear: func(rec *R, _ *http.Request) error { put(rec, nil); return nil },
	}
}

// optional is a value kept as a pointer, nil while unset: GET answers it
// (204 No Content when unset).
func optional[R, T any](name string, field func(*R) **T, parse parser[T]) policyField[R] {
	return stored(name, func(rec *R) any { return *field(rec) }, func(rec *R, v *T) { *field(rec) = v }, parse)
}

// optionalOr is optional whose GET answers def while the value is unset.
func optionalOr[R, T any](name string, field func(*R) **T, parse parser[T], def T) policyField[R] {
	f := optional(name, field, parse)
	f.get = func(rec *R) any {
		if v := *field(rec); v != nil {
			return *v
		}
		return def
	}
	return f
}

// perCluster is a namespace value Pulsar keeps per cluster (the rate
// maps): the routes read and write this broker's cluster's entry.
func perCluster[V any](name, cluster string, field func(*policy.Policies) *map[string]V, parse parser[V]) policyField[policy.Policies] {
	get := func(p *policy.Policies) any {
		if v, ok := (*field(p))[cluster]; ok {
			return v
		}
		return nil
	}
	return stored(name, get, func(p *policy.Policies, v *V) { putEntry(field(p), cluster, v) }, parse)
}

// putEntry sets m[key] to *v, or (v nil) deletes it; an empty map is nil.
func putEntry[V any](m *map[string]V, key string, v *V) {
	switch {
	case v == nil:
		delete(*m, key)
	case *m == nil:
		*m = map[string]V{key: *v}
	default:
		(*m)[key] = *v
	}
	if len(*m) == 0 {
		*m = nil
	}
}

// backlogQuotas are the two backlog-quota fields of a record: GET
// backlogQuotaMap, and POST / DELETE backlogQuota of the
// ?backlogQuotaType= (default destination_storage).
func backlogQuotas[R any](quotas func(*R) *map[string]policy.BacklogQuota) []policyField[R] {
	return []policyField[R]{
		{name: "backlogQuotaMap",
			get: func(rec *R) any {
				if m := *quotas(rec); m != nil {
					return m
				}
				return map[string]policy.BacklogQuota{}
			},
			applied: func(res *policy.Resolved) any {
				if res.BacklogQuotas == nil {
					return map[string]policy.BacklogQuota{}
				}
				return res.BacklogQuotas
			}},
		{name: "backlogQuota",
			set: func(rec *R, r *http.Request, body []byte) error {
				qt, err := quotaTypeOf(r)
				if err != nil {
					return err
				}
				q, err := policy.ParseBacklogQuota(body)
				if err == nil {
					putEntry(quotas(rec), qt, &q)
				}
				return err
			},
			clear: func(rec *R, r *http.Request) error {
				qt, err := quotaTypeOf(r)
				if err == nil {
					putEntry(quotas(rec), qt, nil)
				}
				return err
			}},
	}
}

// quotaTypeOf reads the backlogQuotaType query parameter (default
// destination_storage).
func quotaTypeOf(r *http.Request) (string, error) {
	switch t := r.URL.Query().Get("backlogQuotaType"); t {
	case "":
		return policy.QuotaStorage, nil
	case policy.QuotaStorage, policy.QuotaMessageAge:
		return t, nil
	default:
		return "", fmt.Errorf("backlogQuotaType %.100q must be %s or %s", t, policy.QuotaStorage, policy.QuotaMessageAge)
	}
}

// bareValue is a body holding a bare value, quoted or not ("5", 5).
func bareValue(body []byte) string { return strings.Trim(strings.TrimSpace(string(body)), `"`) }

// jsonValue parses a JSON object of type T, then applies check. An empty
// body or null is refused (DELETE removes a policy).
func jsonValue[T any](check func(*T) error) parser[T] {
	return func(_ *http.Request, body []byte) (T, error) {
		var v T
		if err := decodeRequired(body, &v); err != nil {
			return v, err
		}
		if check == nil {
			return v, nil
		}
		return v, check(&v)
	}
}

// count parses a count in 0..2^31-1 (Pulsar's int fields); with query
// set, the query parameter of that name, when present, is the value.
func count(query string) parser[int] {
	return func(r *http.Request, body []byte) (int, error) {
		s := bareValue(body)
		if q := r.URL.Query().Get(query); query != "" && q != "" {
			s = q
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, errors.New("the value must be an integer")
		}
		if err := policy.Nonneg32(n); err != nil {
			return 0, err
		}
		return int(n), nil
	}
}

// countOr is count whose negative value is refused as Pulsar refuses it:
// 412 with Pulsar's reason, as is.
func countOr(reason string) parser[int] {
	return func(r *http.Request, body []byte) (int, error) {
		if n, err := strconv.ParseInt(bareValue(body), 10, 64); err == nil && n < 0 {
			return 0, refuse(http.StatusPreconditionFailed, "%s", reason)
		}
		return count("")(r, body)
	}
}

// atLeastOr parses an int64 of at least min; a smaller one is refused
// with Pulsar's reason, as is (412).
func atLeastOr(name string, min int64, reason string) parser[int64] {
	return func(r *http.Request, body []byte) (int64, error) {
		if n, err := strconv.ParseInt(bareValue(body), 10, 64); err == nil && n < min {
			return 0, refuse(http.StatusPreconditionFailed, "%s", reason)
		}
		return atLeast(name, min)(r, body)
	}
}

// atLeast parses an int64 of at least min.
func atLeast(name string, min int64) parser[int64] {
	return func(_ *http.Request, body []byte) (int64, error) {
		n, err := strconv.ParseInt(bareValue(body), 10, 64)
		if err != nil {
			return 0, errors.New(name + " must be an integer")
		}
		if n < min {
			return 0, fmt.Errorf("%s must be >= %d", name, min)
		}
		return n, nil
	}
}

// boolean parses true or false.
func boolean(_ *http.Request, body []byte) (bool, error) {
	switch strings.ToLower(bareValue(body)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errors.New("the value must be true or false")
}

// The JSON policy values and their checks, the same at both levels.
var (
	retentionValue           = jsonValue(func(v *policy.RetentionPolicies) error { return v.Validate() })
	publishRate              = jsonValue(func(v *policy.PublishRate) error { return v.Validate() })
	dispatchRate             = jsonValue((*policy.DispatchRate).Normalize)
	subscribeRate            = jsonValue((*policy.SubscribeRate).Normalize)
	inactiveTopics           = jsonValue((*policy.InactiveTopicPolicies).Normalize)
	delayedDelivery          = jsonValue((*policy.DelayedDeliveryPolicies).Validate)
	autoSubscriptionCreation = jsonValue[policy.AutoSubscriptionCreation](nil)
)

// persistenceValue reads PersistencePolicies and checks them (E >= Qw >=
// Qa >= 1, and no more than the writable bookies when the broker knows
// its bookies).
func (a *API) persistenceValue(r *http.Request, body []byte) (policy.PersistencePolicies, error) {
	v, err := jsonValue(func(v *policy.PersistencePolicies) error { return v.Validate() })(r, body)
	if err != nil {
		return v, err
	}
	if bs := a.bookieList(); len(bs) > 0 {
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

// offloadValue reads OffloadPolicies: valid, and naming only the roots
// and endpoints the operator allowed (docs/tiered-storage.md).
func (a *API) offloadValue(r *http.Request, body []byte) (policy.OffloadPolicies, error) {
	return jsonValue(func(o *policy.OffloadPolicies) error {
		if err := o.Validate(); err != nil {
			return err
		}
		return o.CheckAllowed(a.node.PolicyDefaults().OffloadAllowed)
	})(r, body)
}
