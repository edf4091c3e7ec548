package isolation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/magnetar-mq/magnetar/metadata"
)

// clustersPath is Pulsar's configuration-store root of clusters.
const clustersPath = "/admin/clusters"

// DomainsPath is the parent of a cluster's failure domains.
func DomainsPath(cluster string) string { return clustersPath + "/" + cluster + "/failureDomain" }

// PoliciesPath is the node holding a cluster's isolation policies.
func PoliciesPath(cluster string) string {
	return clustersPath + "/" + cluster + "/namespaceIsolationPolicies"
}

// Store reads and writes failure domains and isolation policies in the
// configuration store. It does not check that the cluster exists (the
// admin API does, with Pulsar's status codes). Safe for concurrent use.
type Store struct{ meta metadata.Store }

// NewStore returns a store over meta.
func NewStore(meta metadata.Store) *Store { return &Store{meta: meta} }

// FailureDomains returns the cluster's domains by name (empty: none).
func (s *Store) FailureDomains(ctx context.Context, cluster string) (map[string]FailureDomain, error) {
	names, err := s.meta.Children(ctx, DomainsPath(cluster))
	if errors.Is(err, metadata.ErrNotFound) {
		return map[string]FailureDomain{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string]FailureDomain, len(names))
	for _, n := range names {
		d, err := s.FailureDomain(ctx, cluster, n)
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out[n] = d
	}
	return out, nil
}

// FailureDomain returns one domain (ErrNotFound).
func (s *Store) FailureDomain(ctx context.Context, cluster, name string) (FailureDomain, error) {
	var d FailureDomain
	data, _, err := s.meta.Get(ctx, DomainsPath(cluster)+"/"+name)
	if errors.Is(err, metadata.ErrNotFound) {
		return d, fmt.Errorf("%w: failure domain %s of cluster %s", ErrNotFound, name, cluster)
	}
	if err != nil {
		return d, err
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return d, fmt.Errorf("isolation: failure domain %s: %w", name, err)
	}
	if d.Brokers == nil {
		d.Brokers = []string{}
	}
	return d, nil
}

// SetFailureDomain creates or replaces a domain. A broker another domain
// of the cluster lists is refused (an error wrapping ErrConflict that
// names the brokers and the domain).
func (s *Store) SetFailureDomain(ctx context.Context, cluster, name string, d FailureDomain) error {
	all, err := s.FailureDomains(ctx, cluster)
	if err != nil {
		return err
	}
	for other, od := range all {
		if other == name {
			continue
		}
		var dup []string
		for _, b := range od.Brokers {
			if slices.Contains(d.Brokers, b) {
				dup = append(dup, b)
			}
		}
		if len(dup) > 0 {
			return fmt.Errorf("%w: %v already exists in %s", ErrConflict, dup, other)
		}
	}
	if d.Brokers == nil {
		d.Brokers = []string{}
	}
	data, _ := json.Marshal(d)
	_, err = s.meta.Put(ctx, DomainsPath(cluster)+"/"+name, data, metadata.AnyVersion)
	return err
}

// DeleteFailureDomain removes a domain (ErrNotFound).
func (s *Store) DeleteFailureDomain(ctx context.Context, cluster, name string) error {
	err := s.meta.Delete(ctx, DomainsPath(cluster)+"/"+name, metadata.AnyVersion)
	if errors.Is(err, metadata.ErrNotFound) {
		return fmt.Errorf("%w: failure domain %s of cluster %s", ErrNotFound, name, cluster)
	}
	return err
}

// Policies returns the cluster's isolation policies by name; ErrNotFound
// when none were ever set (Pulsar's 404), an empty map when all were
// deleted.
func (s *Store) Policies(ctx context.Context, cluster string) (map[string]Policy, error) {
	m, _, err := s.policies(ctx, cluster)
	return m, err
}

func (s *Store) policies(ctx context.Context, cluster string) (map[string]Policy, metadata.Version, error) {
	data, v, err := s.meta.Get(ctx, PoliciesPath(cluster))
	if errors.Is(err, metadata.ErrNotFound) {
		return nil, metadata.NotExists, fmt.Errorf("%w: namespace isolation policies of cluster %s", ErrNotFound, cluster)
	}
	if err != nil {
		return nil, 0, err
	}
	m := map[string]Policy{}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, 0, fmt.Errorf("isolation: %s: %w", PoliciesPath(cluster), err)
		}
	}
	return m, v, nil
}

// update applies f to the cluster's policies with a compare-and-set
// (creating the node if absent), retrying on a concurrent write.
func (s *Store) update(ctx context.Context, cluster string, f func(map[string]Policy) error) error {
	for range 10 {
		m, v, err := s.policies(ctx, cluster)
		if errors.Is(err, ErrNotFound) {
			m, err = map[string]Policy{}, nil
		}
		if err != nil {
			return err
		}
		if err := f(m); err != nil {
			return err
		}
		data, _ := json.Marshal(m)
		_, err = s.meta.Put(ctx, PoliciesPath(cluster), data, v)
		if errors.Is(err, metadata.ErrBadVersion) || errors.Is(err, metadata.ErrExists) {
			continue
		}
		return err
	}
	return fmt.Errorf("isolation: %s keeps changing", PoliciesPath(cluster))
}

// SetPolicy validates p (*InvalidError) and stores it under name.
func (s *Store) SetPolicy(ctx context.Context, cluster, name string, p Policy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.update(ctx, cluster, func(m map[string]Policy) error {
		m[name] = p
		return nil
	})
}

// DeletePolicy removes a policy; a missing one is no error (Pulsar's).
func (s *Store) DeletePolicy(ctx context.Context, cluster, name string) error {
	return s.update(ctx, cluster, func(m map[string]Policy) error {
		delete(m, name)
		return nil
	})
}

// DeleteCluster removes a cluster's domains and its (empty) isolation
// policies before the cluster itself is deleted, as Pulsar does; it
// refuses (ErrNotEmpty) while the cluster has isolation policies.
func (s *Store) DeleteCluster(ctx context.Context, cluster string) error {
	m, v, err := s.policies(ctx, cluster)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return err
	case len(m) > 0:
		return fmt.Errorf("%w: cluster %s", ErrNotEmpty, cluster)
	default:
		if err := s.meta.Delete(ctx, PoliciesPath(cluster), v); err != nil && !errors.Is(err, metadata.ErrNotFound) {
			return err
		}
	}
	names, err := s.meta.Children(ctx, DomainsPath(cluster))
	if errors.Is(err, metadata.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := s.meta.Delete(ctx, DomainsPath(cluster)+"/"+n, metadata.AnyVersion); err != nil && !errors.Is(err, metadata.ErrNotFound) {
			return err
		}
	}
	if err := s.meta.Delete(ctx, DomainsPath(cluster), metadata.AnyVersion); err != nil && !errors.Is(err, metadata.ErrNotFound) {
		return err
	}
	return nil
}
