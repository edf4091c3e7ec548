package brokeradmin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"time"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/topicreg"
)

// Topics is admin's Topics and TopicProperties roles: the topic
// operations of the admin API over the core's topic registry
// (broker.Registry), whose primitives store the topics and keep the
// features' admissions and deletion observers in the loop; the checks
// and Pulsar's wording of the refusals are here.
type Topics struct {
	b   *broker.Broker
	reg broker.Registry
}

// TopicsOf returns the Topics role of b.
func TopicsOf(b *broker.Broker) Topics { return Topics{b, b.Registry()} }

// MaxTopicPropertiesBytes bounds a topic's properties (JSON-encoded).
const MaxTopicPropertiesBytes = 64 << 10

// TopicsOfNamespace lists created topics (partitions expanded) of ns
// ("tenant/ns") in the given domains.
func (a Topics) TopicsOfNamespace(ctx context.Context, ns string, persistent, nonPersistent bool) ([]string, error) {
	return a.reg.TopicsOfNamespace(ctx, ns, persistent, nonPersistent)
}

// PartitionedTopics lists the partitioned topics of ns in domain.
func (a Topics) PartitionedTopics(ctx context.Context, ns, domain string) ([]string, error) {
	return a.reg.PartitionedTopics(ctx, ns, domain)
}

// Partitions returns a partitioned topic's partition count (0: not
// partitioned).
func (a Topics) Partitions(ctx context.Context, topic string) (int, error) {
	return a.reg.Partitions(ctx, topic)
}

// AutoCreatePartitioned creates topic as partitioned if its namespace's
// auto-creation policy asks for it; it returns the partition count (0:
// not created).
func (a Topics) AutoCreatePartitioned(ctx context.Context, topic string) int {
	return a.reg.AutoCreatePartitioned(ctx, topic)
}

// TopicExists reports whether topic is created (persistent) or loaded
// (non-persistent).
func (a Topics) TopicExists(ctx context.Context, topic string) (bool, error) {
	return a.reg.TopicExists(ctx, topic)
}

// DeleteTopic deletes a non-partitioned topic or one partition
// (Registry.DeleteTopic); without force it refuses one with producers
// or consumers.
func (a Topics) DeleteTopic(ctx context.Context, topic string, force bool) error {
	return a.reg.DeleteTopic(ctx, topic, force)
}

// CreatePartitionedTopic registers a partitioned topic; creating an
// existing one with the same count is a no-op, another count fails with
// ErrAlreadyExists.
func (a Topics) CreatePartitionedTopic(ctx context.Context, topic string, m topicreg.PartitionedMetadata) error {
	tn, err := broker.ParseTopicName(topic)
	if err != nil {
		return err
	}
	if tn.IsPartition() {
		return fmt.Errorf("%w: %s is a partition", broker.ErrInvalidTopicName, tn)
	}
	if err := a.checkPartitions(m.Partitions, false); err != nil {
		return err
	}
	if err := a.requireNamespace(ctx, tn.NamespaceName()); err != nil {
		return err
	}
	if n, err := a.reg.Partitions(ctx, topic); err != nil {
		return err
	} else if n == 0 {
		if err := a.reg.AdmitTopics(ctx, topic, m.Partitions); err != nil {
			return err
		}
	}
	err = a.reg.CreatePartitioned(ctx, topic, m)
	if errors.Is(err, broker.ErrAlreadyExists) {
		if n, gerr := a.reg.Partitions(ctx, topic); gerr == nil && n == m.Partitions {
			return nil
		}
		return broker.Reason(broker.ErrAlreadyExists, "This topic already exists")
	}
	return err
}

// UpdatePartitionedTopic raises the partition count (never lowers),
// keeping the topic's properties.
func (a Topics) UpdatePartitionedTopic(ctx context.Context, topic string, partitions int) error {
	if _, err := broker.ParseTopicName(topic); err != nil {
		return err
	}
	if err := a.checkPartitions(partitions, true); err != nil {
		return err
	}
	return a.reg.UpdatePartitioned(ctx, topic, func(m *topicreg.PartitionedMetadata) error {
		if m.Partitions == 0 {
			return broker.Reason(broker.ErrTopicNotFound, "Partitioned topic does not exist")
		}
		if partitions < m.Partitions {
			return broker.Reason(broker.ErrPreconditionFailed, "The number of partitions can only be increased")
		}
		m.Partitions = partitions
		return nil
	})
}

// DeletePartitionedTopic deletes every partition, then the partitioned
// metadata (Registry.DeletePartitioned tells the DeletionObservers).
func (a Topics) DeletePartitionedTopic(ctx context.Context, topic string) error {
	tn, err := broker.ParseTopicName(topic)
	if err != nil {
		return err
	}
	n, err := a.reg.Partitions(ctx, topic)
	if err != nil {
		return err
	}
	if n == 0 {
		return broker.Reason(broker.ErrTopicNotFound, "Partitioned topic does not exist")
	}
	for i := 0; i < n; i++ {
		if err := a.reg.DeleteTopic(ctx, tn.Partition(i).String(), true); err != nil && !errors.Is(err, broker.ErrTopicNotFound) {
			return err
		}
	}
	if err := a.reg.DeletePartitioned(ctx, topic); err != nil && !errors.Is(err, broker.ErrTopicNotFound) {
		return err
	}
	return nil
}

// checkPartitions refuses a partition count outside 1..the broker's
// limit (1..2^31-1 without one) with ErrPreconditionFailed and Pulsar's
// wording (for an update, "Desired partitions ...").
func (a Topics) checkPartitions(n int, update bool) error {
	limit := a.b.MaxPartitionsPerTopic()
	fail := func(format string, args ...any) error {
		return broker.Reason(broker.ErrPreconditionFailed, fmt.Sprintf(format, args...))
	}
	switch {
	case n <= 0:
		return fail("Number of partitions should be more than 0")
	case n > math.MaxInt32:
		return fail("Number of partitions %d is above %d", n, math.MaxInt32)
	case limit > 0 && n > limit && update:
		return fail("Desired partitions %d can't be greater than the maximum partitions per topic %d.", n, limit)
	case limit > 0 && n > limit:
		return fail("Number of partitions should be less than or equal to %d", limit)
	}
	return nil
}

// requireNamespace fails with ErrNamespaceNotFound unless ns exists.
func (a Topics) requireNamespace(ctx context.Context, ns string) error {
	ok, err := a.reg.NamespaceExists(ctx, ns)
	if err != nil {
		return err
	}
	if !ok {
		return broker.Reason(broker.ErrNamespaceNotFound, "Namespace does not exist")
	}
	return nil
}

// CreateTopic creates a non-partitioned topic (ErrAlreadyExists).
func (a Topics) CreateTopic(ctx context.Context, topic string) error {
	return a.CreateTopicWithProperties(ctx, topic, nil)
}

// CreateTopicWithProperties creates a non-partitioned topic storing
// props with it (non-persistent topics take none: ErrPreconditionFailed).
func (a Topics) CreateTopicWithProperties(ctx context.Context, topic string, props map[string]string) error {
	if err := checkProperties(props); err != nil {
		return err
	}
	tn, err := broker.ParseTopicName(topic)
	if err != nil {
		return err
	}
	if err := a.requireNamespace(ctx, tn.NamespaceName()); err != nil {
		return err
	}
	if n, err := a.reg.Partitions(ctx, topic); err != nil {
		return err
	} else if n > 0 {
		return broker.Reason(broker.ErrAlreadyExists, "This topic already exists")
	}
	if !tn.IsPersistent() {
		if len(props) > 0 {
			return broker.Reason(broker.ErrPreconditionFailed, "Properties are kept for persistent topics only")
		}
		return a.reg.Register(ctx, topic, topicreg.TopicNode{})
	}
	if ok, err := a.reg.TopicExists(ctx, topic); err != nil {
		return err
	} else if !ok {
		if err := a.reg.AdmitTopics(ctx, topic, 1); err != nil {
			return err
		}
	}
	return a.reg.Register(ctx, topic, topicreg.TopicNode{Properties: props, Created: time.Now().UnixMilli()})
}

// checkProperties refuses empty keys and properties above
// MaxTopicPropertiesBytes (ErrPreconditionFailed).
func checkProperties(props map[string]string) error {
	for k := range props {
		if k == "" {
			return broker.Reason(broker.ErrPreconditionFailed, "Topic property keys must not be empty")
		}
	}
	b, err := json.Marshal(props)
	if err != nil {
		return err
	}
	if len(b) > MaxTopicPropertiesBytes {
		return broker.Reason(broker.ErrPreconditionFailed, fmt.Sprintf("Topic properties are %d bytes, above the limit of %d", len(b), MaxTopicPropertiesBytes))
	}
	return nil
}

// TopicProperties returns the properties (Pulsar 2.11+) of a topic: a
// partitioned topic keeps them in its partitioned metadata, a
// non-partitioned persistent one in its node; empty, never nil, when it
// has none (ErrTopicNotFound).
func (a Topics) TopicProperties(ctx context.Context, topic string) (map[string]string, error) {
	tn, err := broker.ParseTopicName(topic)
	if err != nil {
		return nil, err
	}
	if m, ok, err := a.reg.PartitionedMetadata(ctx, topic); err != nil || ok {
		return orEmpty(m.Properties), err
	}
	if !tn.IsPersistent() {
		if ok, err := a.reg.TopicExists(ctx, topic); err != nil || !ok {
			return nil, cmpErr(err, broker.Reason(broker.ErrTopicNotFound, "Topic not found"))
		}
		return map[string]string{}, nil
	}
	n, err := a.reg.TopicNode(ctx, topic)
	if err != nil {
		return nil, err
	}
	return orEmpty(n.Properties), nil
}

// UpdateTopicProperties merges set into the properties and then removes
// the keys of del (ErrTopicNotFound; ErrPreconditionFailed for a
// non-persistent topic or a result above MaxTopicPropertiesBytes).
func (a Topics) UpdateTopicProperties(ctx context.Context, topic string, set map[string]string, del []string) error {
	tn, err := broker.ParseTopicName(topic)
	if err != nil {
		return err
	}
	merge := func(props map[string]string) (map[string]string, error) {
		out := maps.Clone(props)
		if out == nil {
			out = map[string]string{}
		}
		maps.Copy(out, set)
		for _, k := range del {
			delete(out, k)
		}
		if len(out) == 0 {
			out = nil
		}
		return out, checkProperties(out)
	}
	if _, ok, err := a.reg.PartitionedMetadata(ctx, topic); err != nil {
		return err
	} else if ok {
		return a.reg.UpdatePartitioned(ctx, topic, func(m *topicreg.PartitionedMetadata) (err error) {
			m.Properties, err = merge(m.Properties)
			return err
		})
	}
	if !tn.IsPersistent() {
		return broker.Reason(broker.ErrPreconditionFailed, "Properties are kept for persistent topics only")
	}
	return a.reg.UpdateTopicNode(ctx, topic, func(n *topicreg.TopicNode) (err error) {
		n.Properties, err = merge(n.Properties)
		return err
	})
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// cmpErr returns err if it is not nil, else alt.
func cmpErr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}
