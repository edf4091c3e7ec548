package policy

import (
	"context"
	"fmt"
	"strings"
)

// Topic-level replication clusters (geo-replication) are one field of the
// topic's TopicPolicies document (replicationClusters, topic.go), kept in
// the configuration store so that every cluster sees them; a partitioned
// topic's override is stored under its parent name and applies to every
// partition.

// TopicKeyOf returns the TopicKey of topic ("domain://tenant/ns/local",
// partition suffix already removed by the caller), with the local name
// escaped as the broker escapes it ('%' as "%25").
func TopicKeyOf(topic string) (string, error) {
	domain, rest, ok := strings.Cut(topic, "://")
	parts := strings.SplitN(rest, "/", 3)
	if !ok || len(parts) != 3 || !ValidName(parts[0]) || !ValidName(parts[1]) || parts[2] == "" {
		return "", fmt.Errorf("%w: topic %q", ErrInvalidName, topic)
	}
	if domain != "persistent" && domain != "non-persistent" {
		return "", fmt.Errorf("%w: topic domain %q", ErrInvalidName, domain)
	}
	return TopicKey(domain, parts[0], parts[1], strings.ReplaceAll(parts[2], "%", "%25")), nil
}

// TopicReplicationClusters returns the replication clusters override of
// topic, nil when it has none.
func (s *Store) TopicReplicationClusters(ctx context.Context, topic string) ([]string, error) {
	key, err := TopicKeyOf(topic)
	if err != nil {
		return nil, err
	}
	tp, err := s.GetTopic(ctx, key)
	if err != nil || tp == nil {
		return nil, err
	}
	return tp.ReplicationClusters, nil
}

// SetTopicReplicationClusters sets (clusters non-nil) or removes (nil)
// the replication clusters override of topic and notifies the
// subscribers of its namespace.
func (s *Store) SetTopicReplicationClusters(ctx context.Context, topic string, clusters []string) error {
	key, err := TopicKeyOf(topic)
	if err != nil {
		return err
	}
	return s.UpdateTopic(ctx, key, func(tp *TopicPolicies) error {
		tp.ReplicationClusters = clusters
		return nil
	})
}
