package enforcement

import (
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/policy"
)

// What the package's end-to-end tests (package enforcement_test, which
// use the broker test kit, itself importing this package) call directly.

// Slowest returns the slowest consumer subscription of t, its backlog in
// bytes and the average entry size.
func Slowest(t broker.Topic) (broker.Subscription, bool, int64, int64) {
	b := backlogOf(t)
	return b.slow, b.found, b.bytes, b.avg
}

// Exceeded reports whether a backlog quota of pol is exceeded on t.
func Exceeded(t broker.Topic, pol *policy.Resolved) bool {
	_, over := exceeded(t, pol)
	return over
}

// ApplyEviction enforces pol's eviction quotas on t.
func ApplyEviction(t broker.Topic, pol *policy.Resolved) { applyEviction(t, pol) }
