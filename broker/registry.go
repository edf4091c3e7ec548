package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/magnetar-mq/magnetar/metadata"
)

// Metadata layout (all values JSON):
//
//	/admin/clusters/<cluster>                                {"serviceUrl":...}
//	/admin/policies/<tenant>                                  TenantInfo
//	/admin/policies/<tenant>/<ns>                             Policies
//	/admin/partitioned-topics/<tenant>/<ns>/<domain>/<topic>  {"partitions":N}
//	/schemas/<tenant>/<ns>/<domain>/<topic>                   []SchemaInfo
//
// Domain is "persistent" or "non-persistent"; local topic names are
// path-escaped (they may not contain '/').
const (
	clustersPath    = "/admin/clusters"
	policiesPath    = "/admin/policies"
	partitionedPath = "/admin/partitioned-topics"
	schemasPath     = "/schemas"
)

// TenantInfo is a tenant's registered configuration, as in Pulsar's REST
// API.
type TenantInfo struct {
	AdminRoles      []string `json:"adminRoles"`
	AllowedClusters []string `json:"allowedClusters"`
}

// PartitionedMetadata is the stored form of a partitioned topic.
type PartitionedMetadata struct {
	Partitions int               `json:"partitions"`
	Properties map[string]string `json:"properties,omitempty"`
}

// registry is the broker's view of tenants, namespaces and partitioned
// topics in the metadata store. It holds no state of its own; every call
// goes to the store, which is safe for concurrent use.
type registry struct {
	store   metadata.Store
	cluster string
}

// bootstrap makes sure the cluster, tenant "public" with namespace
// "public/default", and tenant "pulsar" with "pulsar/system" exist.
func (r *registry) bootstrap(ctx context.Context) error {
	if err := r.putIfAbsent(ctx, clustersPath+"/"+r.cluster, map[string]string{"serviceUrl": ""}); err != nil {
		return err
	}
	for _, tn := range []string{"public", "pulsar"} {
		if err := r.putIfAbsent(ctx, policiesPath+"/"+tn, TenantInfo{AdminRoles: []string{}, AllowedClusters: []string{r.cluster}}); err != nil {
			return err
		}
	}
	for _, ns := range []string{"public/default", "pulsar/system"} {
		if err := r.putIfAbsent(ctx, policiesPath+"/"+ns, defaultPolicies(r.cluster)); err != nil {
			return err
		}
	}
	return nil
}

func defaultPolicies(cluster string) map[string]any {
	return map[string]any{"replication_clusters": []string{cluster}}
}

func (r *registry) putIfAbsent(ctx context.Context, path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = r.store.Put(ctx, path, b, metadata.NotExists)
	if err != nil && !errors.Is(err, metadata.ErrExists) {
		return fmt.Errorf("broker: bootstrap %s: %w", path, err)
	}
	return nil
}

// Clusters lists the registered clusters.
func (r *registry) clusters(ctx context.Context) ([]string, error) {
	return r.children(ctx, clustersPath)
}

func (r *registry) children(ctx context.Context, path string) ([]string, error) {
	cs, err := r.store.Children(ctx, path)
	if errors.Is(err, metadata.ErrNotFound) {
		return []string{}, nil
	}
	if cs == nil {
		cs = []string{}
	}
	return cs, err
}

func (r *registry) tenants(ctx context.Context) ([]string, error) {
	return r.children(ctx, policiesPath)
}

func (r *registry) tenantExists(ctx context.Context, tenant string) (bool, error) {
	if !validNamePart(tenant) {
		return false, nil
	}
	return r.store.Exists(ctx, policiesPath+"/"+tenant)
}

// namespaceExists reports whether "tenant/ns" is registered.
func (r *registry) namespaceExists(ctx context.Context, ns string) (bool, error) {
	t, n, ok := strings.Cut(ns, "/")
	if !ok || !validNamePart(t) || !validNamePart(n) {
		return false, nil
	}
	return r.store.Exists(ctx, policiesPath+"/"+ns)
}

// namespaces lists the namespaces of tenant as "tenant/ns".
func (r *registry) namespaces(ctx context.Context, tenant string) ([]string, error) {
	ok, err := r.tenantExists(ctx, tenant)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrTenantNotFound
	}
	cs, err := r.children(ctx, policiesPath+"/"+tenant)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, tenant+"/"+c)
	}
	return out, nil
}

func (r *registry) createTenant(ctx context.Context, tenant string, info TenantInfo) error {
	if !validNamePart(tenant) {
		return fmt.Errorf("%w: tenant %q", ErrInvalidTopicName, tenant)
	}
	b, _ := json.Marshal(info)
	_, err := r.store.Put(ctx, policiesPath+"/"+tenant, b, metadata.NotExists)
	if errors.Is(err, metadata.ErrExists) {
		return ErrAlreadyExists
	}
	return err
}

func (r *registry) createNamespace(ctx context.Context, ns string, policies json.RawMessage) error {
	t, n, ok := strings.Cut(ns, "/")
	if !ok || !validNamePart(n) {
		return fmt.Errorf("%w: namespace %q", ErrInvalidTopicName, ns)
	}
	if ok, err := r.tenantExists(ctx, t); err != nil {
		return err
	} else if !ok {
		return ErrTenantNotFound
	}
	if len(policies) == 0 || string(policies) == "null" {
		policies, _ = json.Marshal(defaultPolicies(r.cluster))
	}
	_, err := r.store.Put(ctx, policiesPath+"/"+ns, policies, metadata.NotExists)
	if errors.Is(err, metadata.ErrExists) {
		return ErrAlreadyExists
	}
	return err
}

func partitionedKey(tn topicName) string {
	return partitionedPath + "/" + tn.Tenant + "/" + tn.Namespace + "/" + tn.Domain + "/" + escapeLocal(tn.Local)
}

// partitions returns the partition count of a partitioned topic, or 0 if
// tn is not partitioned.
func (r *registry) partitions(ctx context.Context, tn topicName) (int, error) {
	b, _, err := r.store.Get(ctx, partitionedKey(tn))
	if errors.Is(err, metadata.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var m PartitionedMetadata
	if err := json.Unmarshal(b, &m); err != nil {
		return 0, fmt.Errorf("broker: partitioned metadata of %s: %w", tn, err)
	}
	return m.Partitions, nil
}

// setPartitions creates (create=true: fails with ErrAlreadyExists if
// present) or updates the partition count of tn.
func (r *registry) setPartitions(ctx context.Context, tn topicName, m PartitionedMetadata, create bool) error {
	b, _ := json.Marshal(m)
	expected := metadata.AnyVersion
	if create {
		expected = metadata.NotExists
	}
	_, err := r.store.Put(ctx, partitionedKey(tn), b, expected)
	if errors.Is(err, metadata.ErrExists) {
		return ErrAlreadyExists
	}
	return err
}

func (r *registry) deletePartitioned(ctx context.Context, tn topicName) error {
	err := r.store.Delete(ctx, partitionedKey(tn), metadata.AnyVersion)
	if errors.Is(err, metadata.ErrNotFound) {
		return ErrTopicNotFound
	}
	return err
}

// partitionedTopics lists the partitioned parents of namespace ns in domain.
func (r *registry) partitionedTopics(ctx context.Context, ns, domain string) ([]string, error) {
	cs, err := r.children(ctx, partitionedPath+"/"+ns+"/"+domain)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, domain+"://"+ns+"/"+unescapeLocal(c))
	}
	return out, nil
}

// validNamePart reports whether s is a legal tenant or namespace name.
func validNamePart(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-', c == '_', c == '.', c == '=', c == ':':
		default:
			return false
		}
	}
	return true
}

func escapeLocal(s string) string   { return strings.ReplaceAll(s, "%", "%25") }
func unescapeLocal(s string) string { return strings.ReplaceAll(s, "%25", "%") }
