package topicreg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/magnetar-mq/magnetar/metadata"
)

// TopicNode is the data of a created persistent topic's node (empty: no
// properties, and a topic created before the node kept its creation
// time). Topic properties (Pulsar 2.11+) live here or in a partitioned
// topic's PartitionedMetadata; their checks and the admin API's
// operations on them are package brokeradmin's.
type TopicNode struct {
	Properties map[string]string `json:"properties,omitempty"`
	// Created is when the topic was created (unix ms; 0: not known),
	// its stats' topicCreationTimeStamp.
	Created int64 `json:"created,omitempty"`
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

// nodeKey parses topic and returns its node's key (a non-persistent
// topic's is never written, so reads find no node there).
func nodeKey(topic string) (string, error) {
	tn, err := parse(topic)
	if err != nil {
		return "", err
	}
	return TopicKey(tn), nil
}

// TopicNode returns the node of a created persistent topic
// (ErrTopicNotFound).
func (r *Registry) TopicNode(ctx context.Context, topic string) (TopicNode, error) {
	key, err := nodeKey(topic)
	if err != nil {
		return TopicNode{}, err
	}
	data, _, err := r.store.Get(ctx, key)
	if err != nil {
		return TopicNode{}, notFoundAs(err, "Topic not found")
	}
	return decodeTopicNode(data)
}

// NodeCreated reads a persistent topic's node: whether it exists and
// the creation time it records (0: none, or a node it cannot read).
func (r *Registry) NodeCreated(ctx context.Context, topic string) (created int64, exists bool, err error) {
	key, err := nodeKey(topic)
	if err != nil {
		return 0, false, err
	}
	data, _, err := r.store.Get(ctx, key)
	if errors.Is(err, metadata.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	n, err := decodeTopicNode(data)
	if err != nil {
		return 0, true, nil
	}
	return n.Created, true, nil
}

// NodeExists reports whether a persistent topic (or partition) has a
// node.
func (r *Registry) NodeExists(ctx context.Context, topic string) (bool, error) {
	key, err := nodeKey(topic)
	if err != nil {
		return false, err
	}
	return r.store.Exists(ctx, key)
}

// CreateNode stores a persistent topic's node n: ErrAlreadyExists
// ("This topic already exists") if it has one, ErrInvalidTopicName for
// a non-persistent topic. It admits nothing and checks no namespace
// (the broker's Registry.Register does the rest).
func (r *Registry) CreateNode(ctx context.Context, topic string, n TopicNode) error {
	tn, err := parse(topic)
	if err != nil {
		return err
	}
	if !tn.IsPersistent() {
		return fmt.Errorf("%w: %s is not persistent: it has no node", ErrInvalidTopicName, tn)
	}
	key := TopicKey(tn)
	data, err := json.Marshal(n)
	if err != nil {
		return err
	}
	_, err = r.store.Put(ctx, key, data, metadata.NotExists)
	if errors.Is(err, metadata.ErrExists) {
		return reason(ErrAlreadyExists, "This topic already exists")
	}
	return err
}

// EnsureNode creates a persistent topic's node recording created (unix
// ms) unless it has one already (a topic created on load).
func (r *Registry) EnsureNode(ctx context.Context, topic string, created int64) error {
	err := r.CreateNode(ctx, topic, TopicNode{Created: created})
	if errors.Is(err, ErrAlreadyExists) {
		return nil
	}
	return err
}

// DeleteNode removes a persistent topic's node: ErrTopicNotFound ("Topic
// not found") if it has none.
func (r *Registry) DeleteNode(ctx context.Context, topic string) error {
	key, err := nodeKey(topic)
	if err != nil {
		return err
	}
	if err := r.store.Delete(ctx, key, metadata.AnyVersion); err != nil {
		if ok, _ := r.store.Exists(ctx, key); !ok {
			return reason(ErrTopicNotFound, "Topic not found")
		}
		return err
	}
	return nil
}

// UpdateTopicNode changes a created persistent topic's node with f: a
// compare-and-set retried on conflict (f may run more than once; its
// error ends the update). ErrTopicNotFound if the topic is not created.
func (r *Registry) UpdateTopicNode(ctx context.Context, topic string, f func(*TopicNode) error) error {
	key, err := nodeKey(topic)
	if err != nil {
		return err
	}
	return updateNode(ctx, r.store, key, "Topic not found", decodeTopicNode, f)
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
