package topicreg

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

const (
	// topicsPath holds one node per created persistent topic.
	topicsPath = "/admin/topics"
	// partitionedPath holds one node per partitioned topic.
	partitionedPath = "/admin/partitioned-topics"
)

// MaxListedTopics bounds a namespace's topic listing (partitions
// included): beyond it the listing is refused instead of building a
// response of unbounded size. Partition counts are bounded by the
// broker's MaxPartitionsPerTopic; this guards against partitioned
// topics created before a limit was set.
const MaxListedTopics = 1 << 20

// Registry is the topic registry over a cluster's metadata store and
// the instance's configuration store (see the package documentation for
// the layout). Topic names are anything pulsarproto.ParseTopicName
// accepts. Every method is safe for concurrent use.
type Registry struct {
	store    metadata.Store // the cluster's own store: created topics
	config   metadata.Store // the configuration store: partitioned topics
	cluster  string
	policies *policy.Store // clusters, tenants and namespaces
}

// New returns the registry of cluster over its own store, the
// configuration store (nil: store) and the policy store over it.
func New(store, config metadata.Store, policies *policy.Store, cluster string) *Registry {
	if config == nil {
		config = store
	}
	return &Registry{store: store, config: config, cluster: cluster, policies: policies}
}

// TopicKey is the key of tn's node in the cluster's store.
func TopicKey(tn pulsarproto.TopicName) string {
	return topicsPath + "/" + tn.Tenant + "/" + tn.Namespace + "/" + tn.Domain + "/" + EscapeLocal(tn.Local)
}

// PolicyKey is the policy.Store key of tn's topic-level policies (a
// partition uses its partitioned topic's).
func PolicyKey(tn pulsarproto.TopicName) string {
	p := tn.Parent()
	return policy.TopicKey(p.Domain, p.Tenant, p.Namespace, EscapeLocal(p.Local))
}

// TopicPolicyKey is PolicyKey of a topic name (ErrInvalidTopicName when
// it does not parse).
func TopicPolicyKey(name string) (string, error) {
	tn, err := parse(name)
	if err != nil {
		return "", err
	}
	return PolicyKey(tn), nil
}

// partitionedKey is the key of tn's partitioned metadata in the
// configuration store.
func partitionedKey(tn pulsarproto.TopicName) string {
	return partitionedPath + "/" + tn.Tenant + "/" + tn.Namespace + "/" + tn.Domain + "/" + EscapeLocal(tn.Local)
}

// EscapeLocal escapes a local topic name (or another name that becomes
// one element of a metadata path) as the registry's keys do.
func EscapeLocal(s string) string { return strings.ReplaceAll(s, "%", "%25") }

// UnescapeLocal reverses EscapeLocal.
func UnescapeLocal(s string) string { return strings.ReplaceAll(s, "%25", "%") }

// parse canonicalises a topic name (ErrInvalidTopicName).
func parse(s string) (pulsarproto.TopicName, error) {
	tn, err := pulsarproto.ParseTopicName(s)
	if err != nil {
		return tn, fmt.Errorf("%w: %w", ErrInvalidTopicName, err)
	}
	return tn, nil
}

// Bootstrap makes sure tenant "public" with namespace "public/default",
// and tenant "pulsar" with "pulsar/system", exist (allowed on the
// registry's cluster).
func (r *Registry) Bootstrap(ctx context.Context) error {
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

// EnsureCluster registers the registry's cluster with cd unless it is
// registered with URLs already (policy.Store.EnsureCluster): the first
// broker of a cluster to start publishes where the other clusters'
// replicators connect.
func (r *Registry) EnsureCluster(ctx context.Context, cd policy.ClusterData) error {
	if err := r.policies.EnsureCluster(ctx, r.cluster, cd); err != nil {
		return fmt.Errorf("broker: register cluster %s: %w", r.cluster, err)
	}
	return nil
}

// Clusters lists the registered clusters.
func (r *Registry) Clusters(ctx context.Context) ([]string, error) {
	return r.policies.Clusters(ctx)
}

// NamespaceExists reports whether ns ("tenant/ns") is registered.
func (r *Registry) NamespaceExists(ctx context.Context, ns string) (bool, error) {
	return r.policies.NamespaceExists(ctx, ns)
}

// childrenOf lists path's children in store (none if path is missing).
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

// AppendTopics appends to out the created topics of namespace ns
// ("tenant/ns") in domain ("persistent" or "non-persistent"): the
// topics with a node, then every partition of its partitioned topics
// (loaded non-persistent topics are the broker's). ErrPreconditionFailed
// if out would grow past MaxListedTopics; ctx's error if it ends while
// partitions are expanded.
func (r *Registry) AppendTopics(ctx context.Context, out []string, ns, domain string) ([]string, error) {
	cs, err := childrenOf(ctx, r.store, topicsPath+"/"+ns+"/"+domain)
	if err != nil {
		return out, err
	}
	for _, c := range cs {
		out = append(out, domain+"://"+ns+"/"+UnescapeLocal(c))
	}
	parts, err := r.PartitionedTopics(ctx, ns, domain)
	if err != nil {
		return out, err
	}
	for _, p := range parts {
		tn, err := pulsarproto.ParseTopicName(p)
		if err != nil {
			continue
		}
		n, err := r.partitions(ctx, tn)
		if err != nil {
			return out, err
		}
		if len(out)+n > MaxListedTopics {
			return out, reason(ErrPreconditionFailed, fmt.Sprintf("namespace %s has more than %d topics to list", ns, MaxListedTopics))
		}
		for i := 0; i < n; i++ {
			if i%4096 == 0 && ctx.Err() != nil {
				return out, ctx.Err() // the request went away
			}
			out = append(out, tn.Partition(i).String())
		}
	}
	return out, nil
}
