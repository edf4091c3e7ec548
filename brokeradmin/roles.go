package brokeradmin

import (
	"context"
	"errors"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/brokercluster"
	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/policy"
)

// Roles are the administration roles of one broker.
type Roles struct {
	Node Node
	// Topics is admin's Topics and TopicProperties roles.
	Topics        Topics
	Reads         Reads
	Lifecycle     Lifecycle
	Subscriptions Subscriptions
	Ownership     Ownership
}

// For returns the roles of b.
func For(b *broker.Broker) Roles {
	return Roles{Node: Node{b}, Topics: TopicsOf(b), Reads: Reads{b}, Lifecycle: Lifecycle{b},
		Subscriptions: Subscriptions{b}, Ownership: Ownership{b}}
}

// Node is the serving broker and its cluster as the API reports them:
// name, advertised URLs, policy store and defaults (admin.Node).
type Node struct{ b *broker.Broker }

// ClusterName is the cluster this broker belongs to.
func (n Node) ClusterName() string { return n.b.Config().ClusterName }

// ServiceURL is the advertised pulsar:// URL.
func (n Node) ServiceURL() string { return n.b.URLs().Service }

// WebURL is the advertised http:// URL.
func (n Node) WebURL() string { return n.b.URLs().Web }

// ServiceURLTLS is the pulsar+ssl:// URL handed out by lookups ("" when
// there is no TLS listener).
func (n Node) ServiceURLTLS() string { return n.b.URLs().ServiceTLS }

// Clusters lists the registered clusters.
func (n Node) Clusters(ctx context.Context) ([]string, error) { return n.b.Registry().Clusters(ctx) }

// Policies is the broker's policy store (Broker.Policies).
func (n Node) Policies() *policy.Store { return n.b.Policies() }

// PolicyDefaults are the broker-wide policy values.
func (n Node) PolicyDefaults() policy.Defaults { return n.b.PolicyDefaults() }

// MaxPartitionsPerTopic is maxNumPartitionsPerPartitionedTopic (0: only
// the int32 range).
func (n Node) MaxPartitionsPerTopic() int { return n.b.MaxPartitionsPerTopic() }

// Ownership is the broker in its cluster: lookups, bundles' loaded
// topics, readiness and health (admin.Ownership).
type Ownership struct{ b *broker.Broker }

// Cluster returns the broker's cluster membership (nil on a single
// node).
func (o Ownership) Cluster() *cluster.Service { return brokercluster.Service(o.b) }

// BrokerID is the broker's id in its cluster: its web service host:port.
func (o Ownership) BrokerID() string { return o.b.URLs().BrokerID }

// WebURLTLS is the advertised https:// URL ("" without HTTPS).
func (o Ownership) WebURLTLS() string { return o.b.URLs().WebTLS }

// Ready reports whether the broker is started and not closing.
func (o Ownership) Ready() bool { return o.b.Ready() }

// HealthCheck writes and reads back a message through the bookies
// (Health.Check; an error without EnableHealth).
func (o Ownership) HealthCheck(ctx context.Context) error {
	h := healthOf(o.b)
	if h == nil {
		return errors.New("the health check is not enabled (brokeradmin.EnableHealth)")
	}
	return h.Check(ctx)
}

// LoadedTopicsOf lists the loaded topics of the bundle whose cluster key
// is key (cluster.BundleKey; "" on a single node: every loaded topic).
func (o Ownership) LoadedTopicsOf(key string) []string {
	var out []string
	o.b.EachTopic(func(t broker.Topic) bool {
		if t.BundleKey() == key {
			out = append(out, t.Name())
		}
		return true
	})
	return out
}

// OwnedBundle returns the key of the bundle holding topic if this broker
// serves it ("" on a single node), or the cluster's refusal.
func (o Ownership) OwnedBundle(ctx context.Context, topic string) (string, error) {
	return o.b.OwnedBundle(ctx, topic)
}
