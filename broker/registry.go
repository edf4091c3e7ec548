package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/policy"
)

// Metadata layout (all values JSON). In the configuration store, shared
// by every cluster of an instance (Deps.ConfigStore; the cluster's own
// store when there is no separate one):
//
//	/admin/clusters/<cluster>                                 ClusterData (package policy)
//	/admin/policies/<tenant>                                  TenantInfo (package policy)
//	/admin/policies/<tenant>/<ns>                             Policies (package policy)
//	/admin/topic-policies/<tenant>/<ns>/<domain>/<topic>      Policies (topic overrides)
//	/admin/partitioned-topics/<tenant>/<ns>/<domain>/<topic>  {"partitions":N}
//
// In the cluster's own metadata store:
//
//	/schemas/<tenant>/<ns>/<domain>/<topic>                   schema versions (package schemareg)
//	/managed-ledgers/...                                      created topics (see topicKey)
//
// Domain is "persistent" or "non-persistent"; local topic names are
// path-escaped (they may not contain '/').
const (
	partitionedPath = "/admin/partitioned-topics"
)

// PartitionedMetadata is the stored form of a partitioned topic.
type PartitionedMetadata struct {
	Partitions int               `json:"partitions"`
	Properties map[string]string `json:"properties,omitempty"`
}

// registry is the broker's view of tenants, namespaces and partitioned
// topics in the metadata store. It holds no state of its own; every call
// goes to the store, which is safe for concurrent use.
type registry struct {
	store    metadata.Store // the cluster's own store
	config   metadata.Store // the configuration store (may be store)
	cluster  string
	policies *policy.Store // tenants and namespaces
}

// bootstrap makes sure the cluster, tenant "public" with namespace
// "public/default", and tenant "pulsar" with "pulsar/system" exist.
func (r *registry) bootstrap(ctx context.Context) error {
	for _, tn := range []string{"public", "pulsar"} {
		err := r.policies.CreateTenant(ctx, tn, policy.TenantInfo{AdminRoles: []string{}, AllowedClusters: []string{r.cluster}})
		if err != nil && !errors.Is(err, policy.ErrExists) {
			return fmt.Errorf("broker: bootstrap tenant %s: %w", tn, err)
		}
	}
	for _, ns := range []string{"public/default", "pulsar/system"} {
		if err := r.policies.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, policy.ErrExists) {
			return fmt.Errorf("broker: bootstrap namespace %s: %w", ns, err)
		}
	}
	return nil
}

// Clusters lists the registered clusters.
func (r *registry) clusters(ctx context.Context) ([]string, error) {
	return r.policies.Clusters(ctx)
}

func (r *registry) children(ctx context.Context, path string) ([]string, error) {
	return childrenOf(ctx, r.store, path)
}

func childrenOf(ctx context.Context, store metadata.Store, path string) ([]string, error) {
	cs, err := store.Children(ctx, path)
	if errors.Is(err, metadata.ErrNotFound) {
		return []string{}, nil
	}
	if cs == nil {
		cs = []string{}
	}
	return cs, err
}

// namespaceExists reports whether "tenant/ns" is registered.
func (r *registry) namespaceExists(ctx context.Context, ns string) (bool, error) {
	return r.policies.NamespaceExists(ctx, ns)
}

func partitionedKey(tn topicName) string {
	return partitionedPath + "/" + tn.Tenant + "/" + tn.Namespace + "/" + tn.Domain + "/" + escapeLocal(tn.Local)
}

// partitions returns the partition count of a partitioned topic, or 0 if
// tn is not partitioned.
func (r *registry) partitions(ctx context.Context, tn topicName) (int, error) {
	b, _, err := r.config.Get(ctx, partitionedKey(tn))
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
	_, err := r.config.Put(ctx, partitionedKey(tn), b, expected)
	if errors.Is(err, metadata.ErrExists) {
		return ErrAlreadyExists
	}
	return err
}

func (r *registry) deletePartitioned(ctx context.Context, tn topicName) error {
	err := r.config.Delete(ctx, partitionedKey(tn), metadata.AnyVersion)
	if errors.Is(err, metadata.ErrNotFound) {
		return ErrTopicNotFound
	}
	return err
}

// partitionedTopics lists the partitioned parents of namespace ns in domain.
func (r *registry) partitionedTopics(ctx context.Context, ns, domain string) ([]string, error) {
	cs, err := childrenOf(ctx, r.config, partitionedPath+"/"+ns+"/"+domain)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, domain+"://"+ns+"/"+unescapeLocal(c))
	}
	return out, nil
}

func escapeLocal(s string) string   { return strings.ReplaceAll(s, "%", "%25") }
func unescapeLocal(s string) string { return strings.ReplaceAll(s, "%25", "%") }

// registerCluster registers the local cluster in the configuration store
// with this broker's URLs, unless it is registered with URLs already
// (policy.Store.EnsureCluster): the first broker of a cluster to start
// publishes where the other clusters' replicators connect.
func (r *registry) registerCluster(ctx context.Context, l *listeners) error {
	cd := policy.ClusterData{ServiceURLTLS: l.webURLTLS(), BrokerServiceURLTLS: l.serviceURLTLS()}
	if addr(&l.httpAddr) != "" {
		cd.ServiceURL = l.webURL()
	}
	if addr(&l.serviceAddr) != "" {
		cd.BrokerServiceURL = l.serviceURL()
	}
	if err := r.policies.EnsureCluster(ctx, r.cluster, cd); err != nil {
		return fmt.Errorf("broker: register cluster %s: %w", r.cluster, err)
	}
	return nil
}
