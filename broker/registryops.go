package broker

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/topicreg"
)

// Registry is the topic registry: the metadata of the created and
// partitioned topics, namespaces and clusters (the embedded
// *topicreg.Registry: layout, reads, compare-and-set updates), and the
// primitives that need loaded topics or the features: registering,
// listing and deleting topics with the features' admissions
// (AdmitTopics) and DeletionObservers, and non-persistent topics, which
// exist while loaded. The admin API's topic operations (create with
// their checks, partition updates, properties) are package
// brokeradmin's, built on these. Topic names are anything
// ParseTopicName accepts; a method on one topic acts on a
// non-partitioned topic or one partition (callers fan out over
// partitions). Errors wrap ErrTopicNotFound, ErrNamespaceNotFound,
// ErrAlreadyExists, ErrInvalidTopicName, ErrNotAllowed or
// ErrPreconditionFailed; their text is the reason to give a client.
// Every method is safe for concurrent use.
type Registry struct {
	*topicreg.Registry
	b *Broker
}

// Registry returns the broker's topic registry.
func (b *Broker) Registry() Registry { return Registry{b.reg, b} }

// MessageID identifies an entry (and a message in it). LedgerID and
// EntryID both negative mean Earliest, both math.MaxInt64 Latest.
type MessageID struct {
	LedgerID, EntryID int64
	Partition         int
	// BatchIndex is the last message's index in a batch entry, -1 when
	// the entry is not a batch.
	BatchIndex int32
}

// position maps id to a cursor position, honouring the sentinels.
func (id MessageID) position() position {
	switch {
	case id.LedgerID < 0 && id.EntryID < 0:
		return position(mledger.Earliest)
	case id.LedgerID == math.MaxInt64 && id.EntryID == math.MaxInt64:
		return position(mledger.Latest)
	}
	return position{LedgerID: id.LedgerID, EntryID: id.EntryID}
}

// Policies is the tenant, namespace and policy store the broker
// enforces; with a PolicyWatcher (package enforcement), writes through
// it apply to loaded topics at once.
func (b *Broker) Policies() *policy.Store { return b.policies }

// TopicsOfNamespace lists the topics of ns ("tenant/ns") in the given
// domains: created persistent topics, loaded non-persistent ones and
// every partition of partitioned topics (at most
// topicreg.MaxListedTopics: ErrPreconditionFailed beyond).
func (a Registry) TopicsOfNamespace(ctx context.Context, ns string, persistent, nonPersistent bool) ([]string, error) {
	return a.b.topicsOfNamespace(ctx, ns, persistent, nonPersistent)
}

// AutoCreatePartitioned creates topic as partitioned if its
// namespace's auto-creation policy asks for it; it returns the
// partition count (0: not created).
func (a Registry) AutoCreatePartitioned(ctx context.Context, topic string) int {
	tn, err := parseTopicName(topic)
	if err != nil || tn.IsPartition() {
		return 0
	}
	n, _ := a.autoCreatePartitioned(ctx, tn)
	return n
}

// autoCreatePartitioned creates tn as a partitioned topic when its
// namespace's auto-creation override asks for partitioned topics and tn
// does not exist yet; it returns the partition count (0: not created),
// and an Admission's refusal (ErrTooManyTopics, limits.go) if that is
// why it was not created.
func (a Registry) autoCreatePartitioned(ctx context.Context, tn topicName) (int, error) {
	b := a.b
	pol := b.resolvePolicies(tn)
	allow, n := pol.AutoCreate, pol.AutoPartitions
	if !allow || n <= 0 {
		return 0, nil
	}
	if limit := b.MaxPartitionsPerTopic(); n > math.MaxInt32 || limit > 0 && n > limit {
		b.log.Info("partitioned auto-creation refused", "topic", tn.String(), "partitions", n, "limit", limit)
		return 0, nil
	}
	if ok, err := a.topicExists(ctx, tn); err != nil || ok {
		return 0, nil
	}
	if err := b.ext.admitTopics(ctx, tn, n, b.resolvePolicies); err != nil {
		return 0, err
	}
	err := b.reg.CreatePartitioned(ctx, tn.String(), topicreg.PartitionedMetadata{Partitions: n})
	if err != nil && !errors.Is(err, ErrAlreadyExists) {
		return 0, nil
	}
	got, err := b.reg.Partitions(ctx, tn.String())
	if err != nil {
		return 0, nil
	}
	return got, nil
}

// DeletePartitioned removes a partitioned topic's metadata (its
// partitions are DeleteTopic's), then its topic-level policies, and
// tells the DeletionObservers (the schema registry deletes the topic's
// schema), whether or not the metadata was still there.
func (a Registry) DeletePartitioned(ctx context.Context, topic string) error {
	b := a.b
	tn, err := parseTopicName(topic)
	if err != nil {
		return err
	}
	if err := b.reg.DeletePartitionedMetadata(ctx, tn.String()); err != nil && !errors.Is(err, ErrTopicNotFound) {
		return err
	}
	if err := b.policies.DeleteTopic(ctx, topicreg.PolicyKey(tn)); err != nil {
		b.log.Warn("delete topic policies", "topic", tn.String(), "err", err)
	}
	b.ext.topicDeleted(ctx, tn)
	return nil
}

// AdmitTopics asks the features' Admissions whether n new topics may be
// created for topic (1 for a non-partitioned topic, the partition count
// of a partitioned one): ErrTooManyTopics (limits.go) if not.
func (a Registry) AdmitTopics(ctx context.Context, topic string, n int) error {
	tn, err := parseTopicName(topic)
	if err != nil {
		return err
	}
	return a.b.ext.admitTopics(ctx, tn, n, a.b.resolvePolicies)
}

// Register registers a non-partitioned topic (or partition) as created:
// a persistent topic's node n is stored (ErrAlreadyExists if it is); a
// non-persistent topic, which exists while loaded, is loaded (n is not
// kept). The caller admits it (AdmitTopics) and checks its namespace.
func (a Registry) Register(ctx context.Context, topic string, n topicreg.TopicNode) error {
	b := a.b
	tn, err := parseTopicName(topic)
	if err != nil {
		return err
	}
	if !tn.IsPersistent() {
		_, err := b.getTopic(ctx, tn, true)
		return err
	}
	return b.reg.CreateNode(ctx, tn.String(), n)
}

// TopicExists reports whether topic is created (persistent) or loaded
// (non-persistent).
func (a Registry) TopicExists(ctx context.Context, topic string) (bool, error) {
	tn, err := parseTopicName(topic)
	if err != nil {
		return false, err
	}
	return a.topicExists(ctx, tn)
}

// topicExists reports whether tn is a created non-partitioned topic (or
// partition), or a loaded non-persistent one.
func (a Registry) topicExists(ctx context.Context, tn topicName) (bool, error) {
	b := a.b
	if !tn.IsPersistent() {
		return b.lookupTopic(tn.String()) != nil, nil
	}
	return b.reg.NodeExists(ctx, tn.String())
}

// DeleteTopic deletes a non-partitioned topic (or one partition): its
// producers and consumers are disconnected, then its registration is
// removed, the DeletionObservers told, and its managed ledger deleted
// (cursors, ledgers, metadata: Deps.DeleteLedger), so the bookies
// reclaim its space.
// Without force a topic with producers or consumers is refused.
func (a Registry) DeleteTopic(ctx context.Context, name string, force bool) error {
	b := a.b
	tn, err := parseTopicName(name)
	if err != nil {
		return err
	}
	if !force {
		if t := b.lookupTopic(tn.String()); t != nil && topicInUse(t) {
			return reason(ErrPreconditionFailed, "Topic has active producers/subscriptions")
		}
	}
	b.unloadTopic(tn.String())
	if !tn.IsPartition() {
		if err := b.policies.DeleteTopic(ctx, topicreg.PolicyKey(tn)); err != nil {
			b.log.Warn("delete topic policies", "topic", tn.String(), "err", err)
		}
	}
	if !tn.IsPersistent() {
		b.ext.topicDeleted(ctx, tn)
		return nil
	}
	if err := b.reg.DeleteNode(ctx, tn.String()); err != nil {
		return err
	}
	b.ext.topicDeleted(ctx, tn)
	// Its managed ledger goes with it, as Pulsar deletes a topic's
	// ledgers with the topic; without Deps.DeleteLedger (test setups)
	// the data is left alone.
	if del := b.deps.DeleteLedger; del != nil {
		if err := del(ctx, tn.String()); err != nil {
			return fmt.Errorf("delete managed ledger of %s: %w", tn, err)
		}
	}
	return nil
}

// topicInUse reports whether t has producers or connected consumers.
func topicInUse(t *topic) bool {
	t.mu.Lock()
	n := len(t.mu.producers)
	t.mu.Unlock()
	if n > 0 {
		return true
	}
	for _, s := range *t.subList.Load() {
		s.Call(func() { n += s.Consumers() })
	}
	return n > 0
}

// registerCluster registers the local cluster in the configuration
// store with this broker's URLs, unless it is registered with URLs
// already (topicreg.Registry.EnsureCluster).
func (b *Broker) registerCluster(ctx context.Context) error {
	l := &b.net
	cd := policy.ClusterData{ServiceURLTLS: l.webURLTLS(), BrokerServiceURLTLS: l.serviceURLTLS()}
	if l.HTTPAddr() != "" {
		cd.ServiceURL = l.webURL()
	}
	if l.ServiceAddr() != "" {
		cd.BrokerServiceURL = l.serviceURL()
	}
	return b.reg.EnsureCluster(ctx, cd)
}

// loadedOrLoad returns the topic, loading it if it exists (never
// creating it).
func (b *Broker) loadedOrLoad(ctx context.Context, topic string) (*topic, error) {
	tn, err := parseTopicName(topic)
	if err != nil {
		return nil, err
	}
	if t := b.lookupTopic(tn.String()); t != nil && !t.isClosed() {
		return t, nil
	}
	t, err := b.getTopic(ctx, tn, false)
	if errors.Is(err, ErrTopicNotFound) {
		return nil, reason(ErrTopicNotFound, "Topic not found")
	}
	if errors.Is(err, ErrNamespaceNotFound) {
		return nil, reason(ErrNamespaceNotFound, "Namespace does not exist")
	}
	return t, err
}
