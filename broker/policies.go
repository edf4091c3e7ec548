package broker

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/magnetar-mq/magnetar/metadata"
)

// Policies is a namespace's policy document, stored as JSON at
// /admin/policies/<tenant>/<ns> with Apache Pulsar's field names. Unset
// (nil) fields mean "broker default".
type Policies struct {
	ReplicationClusters       []string                `json:"replication_clusters"`
	Bundles                   *bundlesData            `json:"bundles,omitempty"`
	AuthPolicies              json.RawMessage         `json:"auth_policies,omitempty"`
	RetentionPolicies         *RetentionPolicies      `json:"retention_policies,omitempty"`
	MessageTTLInSeconds       *int                    `json:"message_ttl_in_seconds,omitempty"`
	BacklogQuotaMap           map[string]BacklogQuota `json:"backlog_quota_map,omitempty"`
	DeduplicationEnabled      *bool                   `json:"deduplicationEnabled,omitempty"`
	MaxProducersPerTopic      *int                    `json:"max_producers_per_topic,omitempty"`
	MaxConsumersPerTopic      *int                    `json:"max_consumers_per_topic,omitempty"`
	AutoTopicCreationOverride *AutoTopicCreation      `json:"autoTopicCreationOverride,omitempty"`
}

type bundlesData struct {
	Boundaries []string `json:"boundaries"`
	NumBundles int      `json:"numBundles"`
}

func defaultBundles() *bundlesData {
	b, _ := namespaceBundlesPolicy(nil)
	return b
}

// RetentionPolicies keeps acknowledged data for a time and/or size
// (-1: unlimited, 0: none).
type RetentionPolicies struct {
	RetentionTimeInMinutes int   `json:"retentionTimeInMinutes"`
	RetentionSizeInMB      int64 `json:"retentionSizeInMB"`
}

// Backlog quota policies.
const (
	quotaHold      = "producer_request_hold"
	quotaException = "producer_exception"
	quotaEviction  = "consumer_backlog_eviction"
)

// BacklogQuota bounds a topic's backlog (the largest subscription
// backlog) by size in bytes and/or age in seconds.
type BacklogQuota struct {
	LimitSize int64  `json:"limitSize"`
	LimitTime int64  `json:"limitTime"`
	Policy    string `json:"policy"`
}

// AutoTopicCreation overrides the broker's auto topic creation for a
// namespace.
type AutoTopicCreation struct {
	Allow                bool   `json:"allowAutoTopicCreation"`
	TopicType            string `json:"topicType"`
	DefaultNumPartitions *int   `json:"defaultNumPartitions,omitempty"`
}

// adminExt holds the admin API's broker-side state: the namespace
// policy cache and per-topic policy state.
type adminExt struct {
	b  *Broker
	mu sync.Mutex
	ns map[string]*Policies // cache; absent: read from the store

	topics    sync.Map     // *topic -> *topicPol
	heldCount atomic.Int64 // held sends over all topics (skip dropHeld at 0)

	loopOnce sync.Once
}

func newAdminExt(b *Broker) *adminExt {
	return &adminExt{b: b, ns: make(map[string]*Policies)}
}

// policies returns the (cached) policies of ns; unknown namespaces get
// an empty document.
func (x *adminExt) policies(ctx context.Context, ns string) (*Policies, error) {
	x.mu.Lock()
	p := x.ns[ns]
	x.mu.Unlock()
	if p != nil {
		return p, nil
	}
	p = &Policies{}
	data, _, err := x.b.deps.Metadata.Get(ctx, policiesPath+"/"+ns)
	if err != nil && !errors.Is(err, metadata.ErrNotFound) {
		return nil, err
	}
	if err == nil && len(data) > 0 {
		if err := json.Unmarshal(data, p); err != nil {
			return nil, err
		}
	}
	if p.ReplicationClusters == nil {
		p.ReplicationClusters = []string{x.b.cfg.ClusterName}
	}
	if p.Bundles == nil {
		p.Bundles = defaultBundles()
	}
	x.mu.Lock()
	x.ns[ns] = p
	x.mu.Unlock()
	x.ensureLoop()
	return p, nil
}

// cachedPolicies returns the policies of ns, or nil if they cannot be
// read (callers then apply broker defaults).
func (x *adminExt) cachedPolicies(ns string) *Policies {
	// Fast path (every SEND comes here): a cache hit needs no context.
	x.mu.Lock()
	p := x.ns[ns]
	x.mu.Unlock()
	if p != nil {
		return p
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	p, err := x.policies(ctx, ns)
	if err != nil {
		return nil
	}
	return p
}

func (x *adminExt) forget(ns string) {
	x.mu.Lock()
	delete(x.ns, ns)
	x.mu.Unlock()
}

// updatePolicies applies mutate to the stored policies of ns with a
// compare-and-set, then refreshes the cache.
func (x *adminExt) updatePolicies(ctx context.Context, ns string, mutate func(*Policies) error) error {
	for range 10 {
		data, v, err := x.b.deps.Metadata.Get(ctx, policiesPath+"/"+ns)
		if errors.Is(err, metadata.ErrNotFound) {
			return ErrNamespaceNotFound
		}
		if err != nil {
			return err
		}
		p := &Policies{}
		if len(data) > 0 {
			if err := json.Unmarshal(data, p); err != nil {
				return err
			}
		}
		if err := mutate(p); err != nil {
			return errBadPolicy{err}
		}
		out, _ := json.Marshal(p)
		_, err = x.b.deps.Metadata.Put(ctx, policiesPath+"/"+ns, out, v)
		if errors.Is(err, metadata.ErrBadVersion) {
			continue
		}
		if err != nil {
			return err
		}
		x.forget(ns)
		return nil
	}
	return errors.New("broker: policies update kept conflicting")
}

func (b *Broker) registerPolicyRoutes(rt *Router) {
	const base = "/admin/v2/namespaces/{tenant}/{ns}/"
	rt.Handle("GET", base+"retention", b.getPolicy(func(p *Policies) any { return p.RetentionPolicies }))
	rt.Handle("POST", base+"retention", b.reopenAfter(b.setPolicy(func(p *Policies, body []byte) error {
		var r RetentionPolicies
		if err := json.Unmarshal(body, &r); err != nil {
			return err
		}
		if r.RetentionTimeInMinutes < -1 || r.RetentionSizeInMB < -1 {
			return errors.New("retention limits must be >= -1")
		}
		p.RetentionPolicies = &r
		return nil
	})))
	rt.Handle("DELETE", base+"retention", b.reopenAfter(b.setPolicy(func(p *Policies, _ []byte) error { p.RetentionPolicies = nil; return nil })))

	rt.Handle("GET", base+"messageTTL", b.getPolicy(func(p *Policies) any { return p.MessageTTLInSeconds }))
	rt.Handle("POST", base+"messageTTL", b.setPolicy(intPolicy(func(p *Policies) **int { return &p.MessageTTLInSeconds })))
	rt.Handle("DELETE", base+"messageTTL", b.setPolicy(func(p *Policies, _ []byte) error { p.MessageTTLInSeconds = nil; return nil }))

	rt.Handle("GET", base+"maxProducersPerTopic", b.getPolicy(func(p *Policies) any { return p.MaxProducersPerTopic }))
	rt.Handle("POST", base+"maxProducersPerTopic", b.setPolicy(intPolicy(func(p *Policies) **int { return &p.MaxProducersPerTopic })))
	rt.Handle("DELETE", base+"maxProducersPerTopic", b.setPolicy(func(p *Policies, _ []byte) error { p.MaxProducersPerTopic = nil; return nil }))
	rt.Handle("GET", base+"maxConsumersPerTopic", b.getPolicy(func(p *Policies) any { return p.MaxConsumersPerTopic }))
	rt.Handle("POST", base+"maxConsumersPerTopic", b.setPolicy(intPolicy(func(p *Policies) **int { return &p.MaxConsumersPerTopic })))
	rt.Handle("DELETE", base+"maxConsumersPerTopic", b.setPolicy(func(p *Policies, _ []byte) error { p.MaxConsumersPerTopic = nil; return nil }))

	rt.Handle("GET", base+"deduplication", b.getPolicy(func(p *Policies) any { return p.DeduplicationEnabled }))
	rt.Handle("POST", base+"deduplication", b.setPolicy(func(p *Policies, body []byte) error {
		v, err := strconv.ParseBool(strings.Trim(strings.TrimSpace(string(body)), `"`))
		if err != nil {
			return err
		}
		p.DeduplicationEnabled = &v
		return nil
	}))
	rt.Handle("DELETE", base+"deduplication", b.setPolicy(func(p *Policies, _ []byte) error { p.DeduplicationEnabled = nil; return nil }))

	rt.Handle("GET", base+"autoTopicCreation", b.getPolicy(func(p *Policies) any { return p.AutoTopicCreationOverride }))
	rt.Handle("POST", base+"autoTopicCreation", b.setPolicy(func(p *Policies, body []byte) error {
		var a AutoTopicCreation
		if err := json.Unmarshal(body, &a); err != nil {
			return err
		}
		switch a.TopicType {
		case "", "non-partitioned":
			a.TopicType = "non-partitioned"
		case "partitioned":
			if a.DefaultNumPartitions == nil || *a.DefaultNumPartitions < 1 {
				return errors.New("defaultNumPartitions must be >= 1 for partitioned auto creation")
			}
		default:
			return errors.New("topicType must be partitioned or non-partitioned")
		}
		p.AutoTopicCreationOverride = &a
		return nil
	}))
	rt.Handle("DELETE", base+"autoTopicCreation", b.setPolicy(func(p *Policies, _ []byte) error { p.AutoTopicCreationOverride = nil; return nil }))

	rt.Handle("GET", base+"backlogQuotaMap", b.getPolicy(func(p *Policies) any {
		if p.BacklogQuotaMap == nil {
			return map[string]BacklogQuota{}
		}
		return p.BacklogQuotaMap
	}))
	rt.Handle("POST", base+"backlogQuota", func(w http.ResponseWriter, r *http.Request, prm Params) {
		typ := quotaType(r)
		b.setPolicy(func(p *Policies, body []byte) error {
			q, err := parseBacklogQuota(body)
			if err != nil {
				return err
			}
			if p.BacklogQuotaMap == nil {
				p.BacklogQuotaMap = map[string]BacklogQuota{}
			}
			p.BacklogQuotaMap[typ] = q
			return nil
		})(w, r, prm)
	})
	rt.Handle("DELETE", base+"backlogQuota", func(w http.ResponseWriter, r *http.Request, prm Params) {
		typ := quotaType(r)
		b.setPolicy(func(p *Policies, _ []byte) error {
			delete(p.BacklogQuotaMap, typ)
			if len(p.BacklogQuotaMap) == 0 {
				p.BacklogQuotaMap = nil
			}
			return nil
		})(w, r, prm)
	})
	for _, v := range []string{"persistence", "permissions", "replication", "antiAffinity", "schemaValidationEnforced",
		"schemaCompatibilityStrategy", "schemaAutoUpdateCompatibilityStrategy", "maxConsumersPerSubscription",
		"compactionThreshold", "offloadThreshold", "offloadDeletionLagMs", "dispatchRate", "subscriptionDispatchRate",
		"publishRate", "subscribeRate", "clearBacklog", "encryptionRequired", "subscriptionAuthMode"} {
		for _, m := range []string{"GET", "POST", "PUT", "DELETE"} {
			rt.Handle(m, base+v, notImplemented)
		}
	}
}

func quotaType(r *http.Request) string {
	if t := r.URL.Query().Get("backlogQuotaType"); t != "" {
		return t
	}
	return "destination_storage"
}

// parseBacklogQuota accepts pulsaradmin's {"limitSize","limitTime",
// "policy"} and the older {"limit":"N","policy"} (limit as a number or a
// quoted string).
func parseBacklogQuota(body []byte) (BacklogQuota, error) {
	var raw struct {
		Limit     json.RawMessage `json:"limit"`
		LimitSize json.RawMessage `json:"limitSize"`
		LimitTime json.RawMessage `json:"limitTime"`
		Policy    string          `json:"policy"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return BacklogQuota{}, err
	}
	num := func(m json.RawMessage) (int64, error) {
		s := strings.Trim(strings.TrimSpace(string(m)), `"`)
		if s == "" || s == "null" {
			return 0, nil
		}
		return strconv.ParseInt(s, 10, 64)
	}
	var q BacklogQuota
	var err error
	if q.LimitSize, err = num(raw.LimitSize); err != nil {
		return q, err
	}
	if q.LimitSize == 0 {
		if q.LimitSize, err = num(raw.Limit); err != nil {
			return q, err
		}
	}
	if q.LimitTime, err = num(raw.LimitTime); err != nil {
		return q, err
	}
	switch raw.Policy {
	case quotaHold, quotaException, quotaEviction:
		q.Policy = raw.Policy
	default:
		return q, errors.New("unknown backlog quota policy " + strconv.Quote(raw.Policy))
	}
	return q, nil
}

func intPolicy(field func(*Policies) **int) func(*Policies, []byte) error {
	return func(p *Policies, body []byte) error {
		n, err := strconv.Atoi(strings.Trim(strings.TrimSpace(string(body)), `"`))
		if err != nil {
			return errors.New("body must be an integer")
		}
		if n < 0 {
			return errors.New("value must be >= 0")
		}
		*field(p) = &n
		return nil
	}
}

func (b *Broker) getPolicy(get func(*Policies) any) HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, prm Params) {
		ns, ok := b.nsFromParams(w, r, prm)
		if !ok {
			return
		}
		p, err := b.ext.policies(r.Context(), ns)
		if err != nil {
			internalError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, get(p))
	}
}

func (b *Broker) setPolicy(set func(*Policies, []byte) error) HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, prm Params) {
		ns, ok := b.nsFromParams(w, r, prm)
		if !ok {
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		err = b.ext.updatePolicies(r.Context(), ns, func(p *Policies) error { return set(p, body) })
		var bad errBadPolicy
		if errors.As(err, &bad) {
			writeError(w, http.StatusPreconditionFailed, "Invalid value: "+bad.err.Error())
			return
		}
		if err != nil {
			internalError(w, err)
			return
		}
		b.ext.policiesChanged(ns)
		w.WriteHeader(http.StatusNoContent)
	}
}

// errBadPolicy wraps a refusal of the request's policy value.
type errBadPolicy struct{ err error }

func (e errBadPolicy) Error() string { return e.err.Error() }

// statusWriter records the status code written through it.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

// reopenAfter runs h and, when it succeeded, unloads the namespace's
// loaded topics so that their managed ledgers reopen with the new
// retention (clients reconnect, as after an unload).
func (b *Broker) reopenAfter(h HandlerFunc) HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p Params) {
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h(sw, r, p)
		if sw.code >= 300 {
			return
		}
		for _, t := range b.loadedTopics(p["tenant"] + "/" + p["ns"]) {
			b.unloadTopic(t.full)
		}
	}
}
