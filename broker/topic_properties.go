package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/magnetar-mq/magnetar/metadata"
)

// The stored forms of created topics the registry's primitives read and
// change: a non-partitioned persistent topic's node (TopicNode, under
// topicKey in the cluster's store) and a partitioned topic's metadata
// (PartitionedMetadata, in the configuration store; registry.go has the
// layout). Updates are compare-and-sets, retried on conflict. Topic
// properties (Pulsar 2.11+) live in either; their checks and the admin
// API's operations on them are package brokeradmin's.

// TopicNode is the data of a persistent topic's node (empty: no
// properties, and a topic created before the node kept its creation
// time).
type TopicNode struct {
	Properties map[string]string `json:"properties,omitempty"`
	// Created is when the topic was created (unix ms; 0: not known),
	// its stats' topicCreationTimeStamp.
	Created int64 `json:"created,omitempty"`
}

// encodeTopicNode is the stored form of a topic created at created
// (unix ms) without properties.
func encodeTopicNode(created int64) []byte {
	b, _ := json.Marshal(TopicNode{Created: created})
	return b
}

// topicNodeCreated is the creation time a topic node records (0: none,
// or a node it cannot read).
func topicNodeCreated(b []byte) int64 {
	var n TopicNode
	if len(b) == 0 || json.Unmarshal(b, &n) != nil {
		return 0
	}
	return n.Created
}

// TopicNode returns the node of a created persistent topic
// (ErrTopicNotFound).
func (a Registry) TopicNode(ctx context.Context, topic string) (TopicNode, error) {
	tn, err := parseTopicName(topic)
	if err != nil {
		return TopicNode{}, err
	}
	data, _, err := a.b.deps.Metadata.Get(ctx, topicKey(tn))
	if err != nil {
		return TopicNode{}, notFoundAs(err, "Topic not found")
	}
	return decodeTopicNode(data)
}

// UpdateTopicNode changes a created persistent topic's node with f: a
// compare-and-set retried on conflict (f may run more than once; its
// error ends the update). ErrTopicNotFound if the topic is not created.
func (a Registry) UpdateTopicNode(ctx context.Context, topic string, f func(*TopicNode) error) error {
	tn, err := parseTopicName(topic)
	if err != nil {
		return err
	}
	return updateNode(ctx, a.b.deps.Metadata, topicKey(tn), "Topic not found", decodeTopicNode, f)
}

func decodeTopicNode(b []byte) (TopicNode, error) {
	var n TopicNode
	if len(b) > 0 {
		if err := json.Unmarshal(b, &n); err != nil {
			return n, fmt.Errorf("broker: topic node: %w", err)
		}
	}
	return n, nil
}

func decodePartitioned(b []byte) (PartitionedMetadata, error) {
	var m PartitionedMetadata
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("broker: partitioned metadata: %w", err)
	}
	return m, nil
}

// updatePartitions changes tn's partitioned metadata with f
// (Registry.UpdatePartitioned).
func (r *registry) updatePartitions(ctx context.Context, tn topicName, f func(*PartitionedMetadata) error) error {
	return updateNode(ctx, r.config, partitionedKey(tn), "Partitioned topic does not exist", decodePartitioned, f)
}

// updateNode is a compare-and-set of the JSON value at key with f,
// retried on conflict; a missing key is ErrTopicNotFound with notFound.
func updateNode[T any](ctx context.Context, store metadata.Store, key, notFound string, decode func([]byte) (T, error), f func(*T) error) error {
	for range 10 {
		old, ver, err := store.Get(ctx, key)
		if err != nil {
			return notFoundAs(err, notFound)
		}
		v, err := decode(old)
		if err != nil {
			return err
		}
		if err := f(&v); err != nil {
			return err
		}
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = store.Put(ctx, key, data, ver)
		if errors.Is(err, metadata.ErrBadVersion) {
			continue
		}
		return notFoundAs(err, notFound)
	}
	return errors.New("broker: topic metadata update kept conflicting")
}

// notFoundAs maps metadata.ErrNotFound to ErrTopicNotFound with msg.
func notFoundAs(err error, msg string) error {
	if errors.Is(err, metadata.ErrNotFound) {
		return reason(ErrTopicNotFound, msg)
	}
	return err
}

// partitionedMeta reads tn's partitioned metadata (false: tn is not a
// partitioned topic).
func (a Registry) partitionedMeta(ctx context.Context, tn topicName) (PartitionedMetadata, bool, error) {
	if tn.IsPartition() {
		return PartitionedMetadata{}, false, nil
	}
	data, _, err := a.b.reg.config.Get(ctx, partitionedKey(tn))
	if errors.Is(err, metadata.ErrNotFound) {
		return PartitionedMetadata{}, false, nil
	}
	if err != nil {
		return PartitionedMetadata{}, false, err
	}
	m, err := decodePartitioned(data)
	return m, err == nil, err
}
