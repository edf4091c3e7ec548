package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// Ownership is the broker's membership in a cluster of brokers, as the
// core needs it: which namespace bundles it serves. A topic belongs to
// one bundle, named by its key; the core loads a topic only once
// TopicBundle gave its bundle, serves it while Owns holds and
// acknowledges its writes while Holds does. It is supplied by
// Deps.JoinCluster (package brokercluster); without it the broker is a
// single node that serves every topic. Methods are safe for concurrent
// use; Owns and Holds are on the publish path and must not block.
type Ownership interface {
	// TopicBundle returns the bundle key of a canonical topic name this
	// broker may load, or an error: NotOwned's when another broker
	// serves it or it is being unloaded here (the client looks it up
	// again), metadata.ErrNotFound for a missing namespace.
	TopicBundle(ctx context.Context, topic string) (bundle string, err error)
	// Owns reports whether bundle is still served here.
	Owns(bundle string) bool
	// Holds reports whether writes to bundle's topics may be
	// acknowledged: the bundle is held on a live session (possibly while
	// unloading, when pending writes complete).
	Holds(bundle string) bool
	// NotOwned is the error for a loaded topic whose bundle is no longer
	// served here (errors.Is matches TopicBundle's).
	NotOwned(topic string) error
	// Lookup answers LOOKUP for a canonical topic name: Connect to the
	// owner, Redirect (to the leader or the chosen broker) or Failed;
	// the core sets the request id and sends it.
	Lookup(ctx context.Context, topic string, authoritative bool) *pb.CommandLookupTopicResponse
	// SessionAlive reports whether the membership's metadata session
	// still holds (the health check fails otherwise).
	SessionAlive() bool
	// Leave deregisters the broker and unloads every bundle gracefully
	// (ClusterNode.UnloadBundle each), while the connections still run.
	Leave()
}

// ClusterNode is what the core hands Deps.JoinCluster once its listeners
// are bound: its settings and addresses, and the two calls the cluster
// side makes into the core.
type ClusterNode struct {
	Config      brokerconf.ClusterConfig
	ClusterName string
	// BrokerID is the broker's id (its web service host:port); the URLs
	// are the advertised ones ("" when that listener is off).
	BrokerID                  string
	ServiceURL, ServiceURLTLS string
	WebURL, WebURLTLS         string
	Metadata                  metadata.Store
	// AntiAffinityPeers lists the namespaces of ns's anti-affinity group.
	AntiAffinityPeers func(ctx context.Context, ns string) []string
	// UnloadBundle closes every loaded topic of a bundle (clients get
	// CLOSE_PRODUCER / CLOSE_CONSUMER and look it up again), then tells
	// the BundleObservers: what the membership calls when the broker
	// loses or gives up a bundle.
	UnloadBundle func(bundle string)
	// BundleLoads sums the loaded topics' rates per bundle, for load
	// reports.
	BundleLoads func() map[string]BundleLoad
	Logger      *slog.Logger
}

// BundleLoad is one bundle's load on this broker.
type BundleLoad struct {
	MsgRateIn, MsgThroughputIn float64
	Topics, Producers          int
}

// joinCluster joins the cluster once the listeners are bound (the URLs
// are known).
func (b *Broker) joinCluster(ctx context.Context) error {
	if b.deps.JoinCluster == nil {
		return fmt.Errorf("%w: Config.Cluster is set but Deps.JoinCluster is nil", ErrBadConfig)
	}
	plain, secure := b.net.lookupURLs()
	own, err := b.deps.JoinCluster(ctx, ClusterNode{
		Config:            *b.cfg.Cluster,
		ClusterName:       b.cfg.ClusterName,
		BrokerID:          b.net.brokerID(),
		ServiceURL:        plain,
		ServiceURLTLS:     secure,
		WebURL:            b.net.webURL(),
		WebURLTLS:         b.net.webURLTLS(),
		Metadata:          b.deps.Metadata,
		AntiAffinityPeers: b.policies.AntiAffinityPeers,
		UnloadBundle:      b.cluster.unloadBundle,
		BundleLoads:       b.cluster.bundleLoads,
		Logger:            b.log.With("component", "cluster"),
	})
	if err != nil {
		return err
	}
	b.cluster.own = own
	return nil
}

// clusterMember is the broker's side of its cluster membership: own is
// nil on a single node, which serves every topic.
type clusterMember struct {
	b   *Broker
	own Ownership
}

// Ownership returns the broker's cluster membership (nil on a single
// node).
func (b *Broker) Ownership() Ownership { return b.cluster.own }

// topicBundle returns the bundle key of a topic this broker may load, or
// an error (Ownership.TopicBundle). "" on a single node.
func (m *clusterMember) topicBundle(ctx context.Context, tn topicName) (string, error) {
	if m.own == nil {
		return "", nil
	}
	key, err := m.own.TopicBundle(ctx, tn.String())
	if errors.Is(err, metadata.ErrNotFound) {
		return "", fmt.Errorf("%w: namespace %s", ErrNamespaceNotFound, tn.NamespaceName())
	}
	return key, err
}

// owns reports whether t's bundle is still served here (always on a
// single node).
func (m *clusterMember) owns(t *topic) bool {
	return m.own == nil || m.own.Owns(t.bundleKey)
}

// mayAck reports whether a write to t may be acknowledged (always on a
// single node).
func (m *clusterMember) mayAck(t *topic) bool {
	return m.own == nil || m.own.Holds(t.bundleKey)
}

// notOwned is the error for a loaded topic another broker serves now.
func (m *clusterMember) notOwned(full string) error {
	return fmt.Errorf("%w; redo the lookup", m.own.NotOwned(full))
}

// loaded returns the topics loaded (not loading) now.
func (m *clusterMember) loaded() []*topic {
	b := m.b
	b.mu.Lock()
	defer b.mu.Unlock()
	ts := make([]*topic, 0, len(b.mu.topics))
	for _, l := range b.mu.topics {
		select {
		case <-l.done:
			if l.t != nil {
				ts = append(ts, l.t)
			}
		default:
		}
	}
	return ts
}

// unloadBundle closes every loaded topic of a bundle and tells the
// BundleObservers (ClusterNode.UnloadBundle).
func (m *clusterMember) unloadBundle(key string) {
	for _, t := range m.loaded() {
		if t.bundleKey == key {
			m.b.unloadTopic(t.name.String())
		}
	}
	for _, h := range m.b.ext.bundles {
		h.BundleReleased(key)
	}
}

// bundleLoads sums the loaded topics' rates per bundle
// (ClusterNode.BundleLoads).
func (m *clusterMember) bundleLoads() map[string]BundleLoad {
	out := map[string]BundleLoad{}
	for _, t := range m.loaded() {
		st := out[t.bundleKey]
		rate, tput := t.loadRates.Update(t.msgIn.Load(), t.bytesIn.Load())
		st.MsgRateIn += rate
		st.MsgThroughputIn += tput
		st.Topics++
		t.mu.Lock()
		st.Producers += len(t.mu.producers)
		t.mu.Unlock()
		out[t.bundleKey] = st
	}
	return out
}

// fencedByOtherOwner handles a write that failed because another owner
// opened the topic's managed ledger: the topic is unloaded (its clients
// get CLOSE_PRODUCER / CLOSE_CONSUMER and look it up again), once.
func (b *Broker) fencedByOtherOwner(t *topic) {
	if !t.fenceLogged.CompareAndSwap(false, true) {
		return
	}
	t.log.Warn("managed ledger fenced by another owner: unloading topic", "topic", t.name.String())
	go b.unloadTopic(t.name.String())
}
