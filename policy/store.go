package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/magnetar-mq/magnetar/internal/shrink"
	"github.com/magnetar-mq/magnetar/metadata"
)

// Path is the metadata node under which tenants (Path/<tenant>, a
// TenantInfo) and namespaces (Path/<tenant>/<ns>, a Policies document)
// live, as in Pulsar's configuration store.
const Path = "/admin/policies"

// Errors returned by Store. Callers use errors.Is.
var (
	ErrTenantNotFound    = errors.New("policy: tenant not found")
	ErrNamespaceNotFound = errors.New("policy: namespace not found")
	ErrExists            = errors.New("policy: already exists")
	ErrNotEmpty          = errors.New("policy: not empty")
	ErrInvalidName       = errors.New("policy: invalid name")
)

// BadValueError is a policy value the mutation refused; Err says why.
type BadValueError struct{ Err error }

func (e *BadValueError) Error() string { return e.Err.Error() }
func (e *BadValueError) Unwrap() error { return e.Err }

// Store reads and writes tenants, namespaces and namespace policies in a
// metadata.Store, caches each namespace's Policies, and tells subscribers
// when a namespace's policies changed. It knows nothing about brokers or
// topics.
//
// All methods are safe for concurrent use.
type Store struct {
	meta    metadata.Store
	cluster string
	watched watchSet // WatchNamespace / WatchTopic (watch.go)

	mu struct {
		sync.Mutex
		cache  map[string]*Policies
		topics map[string]*TopicPolicies // by TopicKey; nil: none
		shrink shrink.Tracker            // deletes from topics
		subs   map[int]func(ns string)
		next   int
		// gen counts invalidations of cache and topics. A read of the
		// store caches its result only if no invalidation happened
		// while it read: otherwise a read that began before a write
		// could put the older document back after the write dropped
		// it, and the cache would serve it until the next Refresh.
		gen uint64
		// overlay adjusts the broker defaults (SetDefaultsOverlay).
		overlay func(*Defaults)
		// shared is, by namespace, the policy its topics without
		// topic-level policies resolve to (ResolveTopic).
		shared map[string]sharedResolved
	}
}

// NewStore returns a store over meta; cluster is the default replication
// cluster of new namespaces.
func NewStore(meta metadata.Store, cluster string) *Store {
	s := &Store{meta: meta, cluster: cluster}
	s.mu.cache = make(map[string]*Policies)
	s.mu.topics = make(map[string]*TopicPolicies)
	s.mu.subs = make(map[int]func(string))
	return s
}

// Subscribe calls fn after every change to a namespace's policies made
// through this store (ns is "tenant/ns"), and with ns == "" after Refresh
// (any namespace may have changed). fn runs on the writer's goroutine,
// with no lock of the store held; it must not block for long. The
// returned function cancels the subscription.
func (s *Store) Subscribe(fn func(ns string)) (cancel func()) {
	s.mu.Lock()
	id := s.mu.next
	s.mu.next++
	s.mu.subs[id] = fn
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.mu.subs, id)
		s.mu.Unlock()
	}
}

func (s *Store) notify(ns string) {
	s.mu.Lock()
	fns := make([]func(string), 0, len(s.mu.subs))
	for _, fn := range s.mu.subs {
		fns = append(fns, fn)
	}
	s.mu.Unlock()
	for _, fn := range fns {
		fn(ns)
	}
}

// Refresh drops the cache (picking up writes made through other
// processes) and notifies the subscribers with ns == "".
func (s *Store) Refresh() {
	s.mu.Lock()
	clear(s.mu.cache)
	s.dropTopicsLocked()
	s.mu.gen++
	s.mu.Unlock()
	s.notify("")
}

func (s *Store) forget(ns string) {
	s.mu.Lock()
	delete(s.mu.cache, ns)
	s.mu.gen++
	s.mu.Unlock()
}

// Cached returns the cached policies of ns without touching the store
// (nil when not cached).
func (s *Store) Cached(ns string) *Policies {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.cache[ns]
}

// Get returns the policies of namespace ns ("tenant/ns"), from the cache
// when present. A namespace without a stored document gets an empty one
// with the defaults filled in. The result is shared: do not modify it.
func (s *Store) Get(ctx context.Context, ns string) (*Policies, error) {
	s.mu.Lock()
	p, gen := s.mu.cache[ns], s.mu.gen
	s.mu.Unlock()
	if p != nil {
		return p, nil
	}
	p = &Policies{}
	data, _, err := s.meta.Get(ctx, Path+"/"+ns)
	if err != nil && !errors.Is(err, metadata.ErrNotFound) {
		return nil, err
	}
	if err == nil && len(data) > 0 {
		if err := json.Unmarshal(data, p); err != nil {
			return nil, fmt.Errorf("policy: policies of %s: %w", ns, err)
		}
	}
	s.fillDefaults(p)
	s.mu.Lock()
	if s.mu.gen == gen {
		s.mu.cache[ns] = p
	}
	s.mu.Unlock()
	return p, nil
}

func (s *Store) fillDefaults(p *Policies) {
	if p.ReplicationClusters == nil {
		p.ReplicationClusters = []string{s.cluster}
	}
	if p.Bundles == nil {
		p.Bundles = DefaultBundles()
	}
}

// Update applies mutate to the stored policies of ns with a
// compare-and-set (retried on conflict), refreshes the cache and
// notifies the subscribers. A mutate error is returned as a
// *BadValueError; ErrNamespaceNotFound if ns does not exist.
func (s *Store) Update(ctx context.Context, ns string, mutate func(*Policies) error) error {
	for range 10 {
		data, v, err := s.meta.Get(ctx, Path+"/"+ns)
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
			return &BadValueError{err}
		}
		out, _ := json.Marshal(p)
		_, err = s.meta.Put(ctx, Path+"/"+ns, out, v)
		if errors.Is(err, metadata.ErrBadVersion) {
			continue
		}
		if err != nil {
			return err
		}
		s.forget(ns)
		s.notify(ns)
		return nil
	}
	return errors.New("policy: policies update kept conflicting")
}

// Tenants lists the tenants.
func (s *Store) Tenants(ctx context.Context) ([]string, error) {
	return s.children(ctx, Path)
}

func (s *Store) children(ctx context.Context, path string) ([]string, error) {
	cs, err := s.meta.Children(ctx, path)
	if errors.Is(err, metadata.ErrNotFound) {
		return []string{}, nil
	}
	if cs == nil {
		cs = []string{}
	}
	return cs, err
}

// Tenant returns a tenant's info (ErrTenantNotFound).
func (s *Store) Tenant(ctx context.Context, tenant string) (TenantInfo, error) {
	var ti TenantInfo
	if !ValidName(tenant) {
		return ti, ErrTenantNotFound
	}
	data, _, err := s.meta.Get(ctx, Path+"/"+tenant)
	if errors.Is(err, metadata.ErrNotFound) {
		return ti, ErrTenantNotFound
	}
	if err != nil {
		return ti, err
	}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &ti); err != nil {
			return ti, err
		}
	}
	fillTenant(&ti)
	return ti, nil
}

func fillTenant(ti *TenantInfo) {
	if ti.AdminRoles == nil {
		ti.AdminRoles = []string{}
	}
	if ti.AllowedClusters == nil {
		ti.AllowedClusters = []string{}
	}
}

// TenantExists reports whether tenant is registered.
func (s *Store) TenantExists(ctx context.Context, tenant string) (bool, error) {
	if !ValidName(tenant) {
		return false, nil
	}
	return s.meta.Exists(ctx, Path+"/"+tenant)
}

// CreateTenant registers a tenant (ErrExists, ErrInvalidName).
func (s *Store) CreateTenant(ctx context.Context, tenant string, ti TenantInfo) error {
	if !ValidName(tenant) {
		return fmt.Errorf("%w: tenant %q", ErrInvalidName, tenant)
	}
	fillTenant(&ti)
	data, _ := json.Marshal(ti)
	_, err := s.meta.Put(ctx, Path+"/"+tenant, data, metadata.NotExists)
	if errors.Is(err, metadata.ErrExists) {
		return ErrExists
	}
	return err
}

// UpdateTenant replaces a tenant's info (ErrTenantNotFound).
func (s *Store) UpdateTenant(ctx context.Context, tenant string, ti TenantInfo) error {
	if !ValidName(tenant) {
		return ErrTenantNotFound
	}
	fillTenant(&ti)
	data, _ := json.Marshal(ti)
	_, v, err := s.meta.Get(ctx, Path+"/"+tenant)
	if errors.Is(err, metadata.ErrNotFound) {
		return ErrTenantNotFound
	}
	if err != nil {
		return err
	}
	_, err = s.meta.Put(ctx, Path+"/"+tenant, data, v)
	return err
}

// DeleteTenant removes a tenant without namespaces (ErrTenantNotFound,
// ErrNotEmpty).
func (s *Store) DeleteTenant(ctx context.Context, tenant string) error {
	nss, err := s.Namespaces(ctx, tenant)
	if err != nil {
		return err
	}
	if len(nss) > 0 {
		return ErrNotEmpty
	}
	err = s.meta.Delete(ctx, Path+"/"+tenant, metadata.AnyVersion)
	if errors.Is(err, metadata.ErrNotFound) {
		return nil
	}
	return err
}

// Namespaces lists the namespaces of tenant as "tenant/ns"
// (ErrTenantNotFound).
func (s *Store) Namespaces(ctx context.Context, tenant string) ([]string, error) {
	ok, err := s.TenantExists(ctx, tenant)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrTenantNotFound
	}
	cs, err := s.children(ctx, Path+"/"+tenant)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, tenant+"/"+c)
	}
	return out, nil
}

// NamespaceExists reports whether "tenant/ns" is registered.
func (s *Store) NamespaceExists(ctx context.Context, ns string) (bool, error) {
	t, n, ok := strings.Cut(ns, "/")
	if !ok || !ValidName(t) || !ValidName(n) {
		return false, nil
	}
	return s.meta.Exists(ctx, Path+"/"+ns)
}

// CreateNamespace registers "tenant/ns" with policies p (nil: empty);
// unset replication clusters default to the store's cluster
// (ErrTenantNotFound, ErrExists, ErrInvalidName).
func (s *Store) CreateNamespace(ctx context.Context, ns string, p *Policies) error {
	t, n, ok := strings.Cut(ns, "/")
	if !ok || !ValidName(n) {
		return fmt.Errorf("%w: namespace %q", ErrInvalidName, ns)
	}
	if ok, err := s.TenantExists(ctx, t); err != nil {
		return err
	} else if !ok {
		return ErrTenantNotFound
	}
	if p == nil {
		p = &Policies{}
	}
	if len(p.ReplicationClusters) == 0 {
		p.ReplicationClusters = []string{s.cluster}
	}
	bs, err := NormalizeBundles(p.Bundles)
	if err != nil {
		return fmt.Errorf("%w: bundles: %v", ErrInvalidName, err)
	}
	p.Bundles = bs
	data, _ := json.Marshal(p)
	_, err = s.meta.Put(ctx, Path+"/"+ns, data, metadata.NotExists)
	if errors.Is(err, metadata.ErrExists) {
		return ErrExists
	}
	if err != nil {
		return err
	}
	s.forget(ns)
	s.notify(ns)
	return nil
}

// DeleteNamespace removes the namespace node (its topics must be gone:
// the caller deletes them first). A missing namespace is not an error.
func (s *Store) DeleteNamespace(ctx context.Context, ns string) error {
	err := s.meta.Delete(ctx, Path+"/"+ns, metadata.AnyVersion)
	if err != nil && !errors.Is(err, metadata.ErrNotFound) {
		return err
	}
	s.forget(ns)
	s.notify(ns)
	return nil
}
