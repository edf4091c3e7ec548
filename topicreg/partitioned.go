package topicreg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// PartitionedMetadata is the stored form of a partitioned topic.
type PartitionedMetadata struct {
	Partitions int               `json:"partitions"`
	Properties map[string]string `json:"properties,omitempty"`
}

func decodePartitioned(b []byte) (PartitionedMetadata, error) {
	var m PartitionedMetadata
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("broker: partitioned metadata: %w", err)
	}
	return m, nil
}

// Partitions returns a partitioned topic's partition count (0: not
// partitioned).
func (r *Registry) Partitions(ctx context.Context, topic string) (int, error) {
	tn, err := parse(topic)
	if err != nil {
		return 0, err
	}
	return r.partitions(ctx, tn)
}

func (r *Registry) partitions(ctx context.Context, tn pulsarproto.TopicName) (int, error) {
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

// PartitionsOf returns the partitions of a partitioned topic, or nil
// for any other name (a partition, a topic not partitioned).
func (r *Registry) PartitionsOf(ctx context.Context, topic string) ([]string, error) {
	tn, err := parse(topic)
	if err != nil || tn.IsPartition() {
		return nil, err
	}
	n, err := r.partitions(ctx, tn)
	if err != nil || n <= 0 {
		return nil, err
	}
	out := make([]string, n)
	for i := range out {
		out[i] = tn.Partition(i).String()
	}
	return out, nil
}

// PartitionOfPartitioned reports whether tn is one of the partitions of
// a registered partitioned topic (false on any error).
func (r *Registry) PartitionOfPartitioned(ctx context.Context, tn pulsarproto.TopicName) bool {
	if !tn.IsPartition() {
		return false
	}
	n, err := r.partitions(ctx, tn.Parent())
	return err == nil && tn.PartitionIndex < n
}

// PartitionedMetadata returns topic's partitioned metadata (false: not
// a partitioned topic; a partition never is one).
func (r *Registry) PartitionedMetadata(ctx context.Context, topic string) (PartitionedMetadata, bool, error) {
	tn, err := parse(topic)
	if err != nil {
		return PartitionedMetadata{}, false, err
	}
	if tn.IsPartition() {
		return PartitionedMetadata{}, false, nil
	}
	data, _, err := r.config.Get(ctx, partitionedKey(tn))
	if errors.Is(err, metadata.ErrNotFound) {
		return PartitionedMetadata{}, false, nil
	}
	if err != nil {
		return PartitionedMetadata{}, false, err
	}
	m, err := decodePartitioned(data)
	return m, err == nil, err
}

// CreatePartitioned registers topic (not a partition:
// ErrInvalidTopicName) as partitioned with m; ErrAlreadyExists if it is
// registered. It checks neither the count nor the namespace, and admits
// nothing (the broker's Registry.AdmitTopics).
func (r *Registry) CreatePartitioned(ctx context.Context, topic string, m PartitionedMetadata) error {
	tn, err := parse(topic)
	if err != nil {
		return err
	}
	if tn.IsPartition() {
		return fmt.Errorf("%w: %s is a partition", ErrInvalidTopicName, tn)
	}
	b, _ := json.Marshal(m)
	_, err = r.config.Put(ctx, partitionedKey(tn), b, metadata.NotExists)
	if errors.Is(err, metadata.ErrExists) {
		return ErrAlreadyExists
	}
	return err
}

// UpdatePartitioned changes a partitioned topic's metadata with f: a
// compare-and-set retried on conflict (f may run more than once; its
// error ends the update). ErrTopicNotFound if topic is not partitioned.
func (r *Registry) UpdatePartitioned(ctx context.Context, topic string, f func(*PartitionedMetadata) error) error {
	tn, err := parse(topic)
	if err != nil {
		return err
	}
	const notFound = "Partitioned topic does not exist"
	if tn.IsPartition() {
		return reason(ErrTopicNotFound, notFound)
	}
	return updateNode(ctx, r.config, partitionedKey(tn), notFound, decodePartitioned, f)
}

// DeletePartitionedMetadata removes a partitioned topic's metadata
// (ErrTopicNotFound if there is none); its partitions, topic-level
// policies and the features' state are the broker's
// (Registry.DeletePartitioned).
func (r *Registry) DeletePartitionedMetadata(ctx context.Context, topic string) error {
	tn, err := parse(topic)
	if err != nil {
		return err
	}
	err = r.config.Delete(ctx, partitionedKey(tn), metadata.AnyVersion)
	if errors.Is(err, metadata.ErrNotFound) {
		return ErrTopicNotFound
	}
	return err
}

// PartitionedTopics lists the partitioned topics of namespace ns
// ("tenant/ns") in domain, as full names.
func (r *Registry) PartitionedTopics(ctx context.Context, ns, domain string) ([]string, error) {
	cs, err := childrenOf(ctx, r.config, partitionedPath+"/"+ns+"/"+domain)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, domain+"://"+ns+"/"+UnescapeLocal(c))
	}
	return out, nil
}
