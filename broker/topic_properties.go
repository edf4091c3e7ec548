package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/magnetar-mq/magnetar/metadata"
)

// Topic properties (Pulsar 2.11+): string properties stored with the
// topic. A non-partitioned persistent topic keeps them in its topic node
// (topicNode, docs/policies.md), a partitioned topic in its partitioned
// metadata; they live as long as the topic and survive restarts. The
// admin API reaches them through its TopicProperties role.

// MaxTopicPropertiesBytes bounds a topic's properties (JSON-encoded).
const MaxTopicPropertiesBytes = 64 << 10

// topicNode is the data of a persistent topic's node (empty: no
// properties, and a topic created before the node kept its creation
// time).
type topicNode struct {
	Properties map[string]string `json:"properties,omitempty"`
	// Created is when the topic was created (unix ms; 0: not known),
	// its stats' topicCreationTimeStamp.
	Created int64 `json:"created,omitempty"`
}

func encodeTopicNode(props map[string]string, created int64) ([]byte, error) {
	if len(props) == 0 && created == 0 {
		return nil, nil
	}
	for k := range props {
		if k == "" {
			return nil, reason(ErrPreconditionFailed, "Topic property keys must not be empty")
		}
	}
	b, err := json.Marshal(topicNode{Properties: props, Created: created})
	if err != nil {
		return nil, err
	}
	if len(b) > MaxTopicPropertiesBytes {
		return nil, reason(ErrPreconditionFailed, fmt.Sprintf("Topic properties are %d bytes, above the limit of %d", len(b), MaxTopicPropertiesBytes))
	}
	return b, nil
}

// topicNodeCreated is the creation time a topic node records (0: none,
// or a node it cannot read; decodeTopicNode reports that).
func topicNodeCreated(b []byte) int64 {
	var n topicNode
	if len(b) == 0 || json.Unmarshal(b, &n) != nil {
		return 0
	}
	return n.Created
}

func decodeTopicNode(b []byte) (map[string]string, error) {
	var n topicNode
	if len(b) > 0 {
		if err := json.Unmarshal(b, &n); err != nil {
			return nil, fmt.Errorf("broker: topic node: %w", err)
		}
	}
	if n.Properties == nil {
		n.Properties = map[string]string{}
	}
	return n.Properties, nil
}

// TopicProperties returns the properties (empty, never nil, when it has
// none; ErrTopicNotFound).
func (a Registry) TopicProperties(ctx context.Context, topic string) (map[string]string, error) {
	b := a.b
	tn, err := parseTopicName(topic)
	if err != nil {
		return nil, err
	}
	if m, ok, err := a.partitionedMeta(ctx, tn); err != nil || ok {
		if m.Properties == nil {
			m.Properties = map[string]string{}
		}
		return m.Properties, err
	}
	if !tn.IsPersistent() {
		if b.lookupTopic(tn.String()) == nil {
			return nil, reason(ErrTopicNotFound, "Topic not found")
		}
		return map[string]string{}, nil
	}
	data, _, err := b.deps.Metadata.Get(ctx, topicKey(tn))
	if errors.Is(err, metadata.ErrNotFound) {
		return nil, reason(ErrTopicNotFound, "Topic not found")
	}
	if err != nil {
		return nil, err
	}
	return decodeTopicNode(data)
}

// UpdateTopicProperties merges set into the properties and then removes
// the keys of del (ErrTopicNotFound; ErrPreconditionFailed for a
// non-persistent topic or a result above MaxTopicPropertiesBytes): a
// compare-and-set on the node holding the properties, retried on
// conflict.
func (a Registry) UpdateTopicProperties(ctx context.Context, topic string, set map[string]string, del []string) error {
	b := a.b
	tn, err := parseTopicName(topic)
	if err != nil {
		return err
	}
	merge := func(props map[string]string) map[string]string {
		out := maps.Clone(props)
		if out == nil {
			out = map[string]string{}
		}
		maps.Copy(out, set)
		for _, k := range del {
			delete(out, k)
		}
		return out
	}
	for range 10 {
		var key string
		var store metadata.Store
		var data []byte
		var ver metadata.Version
		if _, ok, err := a.partitionedMeta(ctx, tn); err != nil {
			return err
		} else if ok {
			key, store = partitionedKey(tn), b.reg.config
			if data, ver, err = store.Get(ctx, key); err != nil {
				return err
			}
			var m PartitionedMetadata
			if err := json.Unmarshal(data, &m); err != nil {
				return err
			}
			m.Properties = merge(m.Properties)
			if _, err := encodeTopicNode(m.Properties, 0); err != nil {
				return err
			}
			if len(m.Properties) == 0 {
				m.Properties = nil
			}
			data, _ = json.Marshal(m)
		} else {
			if !tn.IsPersistent() {
				return reason(ErrPreconditionFailed, "Properties are kept for persistent topics only")
			}
			key, store = topicKey(tn), b.deps.Metadata
			old, v, err := store.Get(ctx, key)
			if errors.Is(err, metadata.ErrNotFound) {
				return reason(ErrTopicNotFound, "Topic not found")
			}
			if err != nil {
				return err
			}
			props, err := decodeTopicNode(old)
			if err != nil {
				return err
			}
			if data, err = encodeTopicNode(merge(props), topicNodeCreated(old)); err != nil {
				return err
			}
			ver = v
		}
		_, err := store.Put(ctx, key, data, ver)
		if errors.Is(err, metadata.ErrBadVersion) {
			continue
		}
		if errors.Is(err, metadata.ErrNotFound) {
			return reason(ErrTopicNotFound, "Topic not found")
		}
		return err
	}
	return errors.New("broker: topic properties update kept conflicting")
}

// partitionedMeta reads tn's partitioned metadata (false: tn is not a
// partitioned topic).
func (a Registry) partitionedMeta(ctx context.Context, tn topicName) (PartitionedMetadata, bool, error) {
	b := a.b
	var m PartitionedMetadata
	if tn.IsPartition() {
		return m, false, nil
	}
	data, _, err := b.reg.config.Get(ctx, partitionedKey(tn))
	if errors.Is(err, metadata.ErrNotFound) {
		return m, false, nil
	}
	if err != nil {
		return m, false, err
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, false, fmt.Errorf("broker: partitioned metadata of %s: %w", tn, err)
	}
	return m, true, nil
}
