package broker

import (
	"context"
	"errors"
	"strings"
)

// maxTopicsPerNamespace (the namespace's max_topics_per_namespace, else
// the broker's; 0: unlimited) bounds the persistent topics of a
// namespace as Pulsar counts them: every non-partitioned topic and every
// partition of a partitioned topic is one, system topics (names starting
// with "__") are not counted. Creating a topic that would go past the
// limit fails: the admin API answers 412 "Exceed maximum number of topics
// in namespace."; auto-creation by a producer or consumer fails its
// command with NotAllowedError and the same text. Creating a partitioned
// topic counts its partitions. A partition of an existing partitioned
// topic is already counted when it is first loaded.

// errTooManyTopics is the refusal (ErrPreconditionFailed, Pulsar's text).
var errTooManyTopics = reason(ErrPreconditionFailed, "Exceed maximum number of topics in namespace.")

// checkTopicQuota refuses creating tn (n topics: 1, or a partitioned
// topic's partitions) when its namespace would then hold more
// persistent topics than its limit.
func (b *Broker) checkTopicQuota(ctx context.Context, tn topicName, n int) error {
	if !tn.IsPersistent() || strings.HasPrefix(tn.Parent().Local, "__") {
		return nil
	}
	limit := b.resolvePolicies(tn).MaxTopicsPerNamespace
	if limit <= 0 {
		return nil
	}
	existing, err := b.topicsOfNamespace(ctx, tn.NamespaceName(), true, false)
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(existing))
	for _, name := range existing {
		if t, err := parseTopicName(name); err == nil && !strings.HasPrefix(t.Parent().Local, "__") {
			seen[name] = true
		}
	}
	if n == 1 && seen[tn.String()] {
		return nil // a partition of an existing partitioned topic
	}
	if len(seen)+n > limit {
		return errTooManyTopics
	}
	return nil
}

// isTooManyTopics reports a refusal of checkTopicQuota.
func isTooManyTopics(err error) bool { return errors.Is(err, errTooManyTopics) }
