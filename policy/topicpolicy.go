package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/magnetar-mq/magnetar/metadata"
)

// TopicPoliciesPath holds topic-level policy overrides in the
// configuration store, so that every cluster sees them:
//
//	/admin/topic-policies/<tenant>/<ns>/<domain>/<local name>  Policies JSON
//
// The local name is path-escaped ('%' as "%25"); a partitioned topic's
// override is stored under its parent name and applies to every
// partition. Only the fields a topic override may set are used
// (replication_clusters today); the node is deleted when the last one is
// removed.
const TopicPoliciesPath = "/admin/topic-policies"

// topicPolicyKey returns the node of topic ("domain://tenant/ns/local",
// partition suffix already removed by the caller).
func topicPolicyKey(topic string) (string, error) {
	domain, rest, ok := strings.Cut(topic, "://")
	parts := strings.SplitN(rest, "/", 3)
	if !ok || len(parts) != 3 || !ValidName(parts[0]) || !ValidName(parts[1]) || parts[2] == "" {
		return "", fmt.Errorf("%w: topic %q", ErrInvalidName, topic)
	}
	if domain != "persistent" && domain != "non-persistent" {
		return "", fmt.Errorf("%w: topic domain %q", ErrInvalidName, domain)
	}
	return TopicPoliciesPath + "/" + parts[0] + "/" + parts[1] + "/" + domain + "/" + strings.ReplaceAll(parts[2], "%", "%25"), nil
}

// TopicPolicies returns the override of topic, or nil when it has none.
// Results are cached like namespace policies (Refresh drops them).
func (s *Store) TopicPolicies(ctx context.Context, topic string) (*Policies, error) {
	key, err := topicPolicyKey(topic)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	p, ok := s.mu.topicCache[key]
	s.mu.Unlock()
	if ok {
		return p, nil
	}
	data, _, err := s.meta.Get(ctx, key)
	switch {
	case errors.Is(err, metadata.ErrNotFound):
		p = nil
	case err != nil:
		return nil, err
	default:
		p = &Policies{}
		if err := json.Unmarshal(data, p); err != nil {
			return nil, fmt.Errorf("policy: topic policies of %s: %w", topic, err)
		}
	}
	s.mu.Lock()
	s.mu.topicCache[key] = p
	s.mu.Unlock()
	return p, nil
}

// SetTopicReplicationClusters sets (clusters non-nil) or removes (nil)
// the replication clusters override of topic and notifies the
// subscribers of its namespace.
func (s *Store) SetTopicReplicationClusters(ctx context.Context, topic string, clusters []string) error {
	key, err := topicPolicyKey(topic)
	if err != nil {
		return err
	}
	for range 10 {
		data, v, err := s.meta.Get(ctx, key)
		if err != nil && !errors.Is(err, metadata.ErrNotFound) {
			return err
		}
		p := &Policies{}
		if err == nil && len(data) > 0 {
			if err := json.Unmarshal(data, p); err != nil {
				return err
			}
		} else {
			v = metadata.NotExists
		}
		p.ReplicationClusters = clusters
		if clusters == nil {
			if v == metadata.NotExists {
				break
			}
			err = s.meta.Delete(ctx, key, v)
		} else {
			out, _ := json.Marshal(p)
			_, err = s.meta.Put(ctx, key, out, v)
		}
		if errors.Is(err, metadata.ErrBadVersion) || errors.Is(err, metadata.ErrExists) {
			continue
		}
		if err != nil && !errors.Is(err, metadata.ErrNotFound) {
			return err
		}
		break
	}
	s.mu.Lock()
	delete(s.mu.topicCache, key)
	s.mu.Unlock()
	_, rest, _ := strings.Cut(topic, "://")
	parts := strings.SplitN(rest, "/", 3)
	s.notify(parts[0] + "/" + parts[1])
	return nil
}
