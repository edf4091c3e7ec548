package broker

import (
	"errors"
	"math"
	"runtime"
	"testing"
	"time"
)

// TestPartitionCountLimits: the service refuses partition counts above
// the broker's limit and outside 1..2^31-1, for creation, update and
// partitioned auto-creation, and creates nothing.
func TestPartitionCountLimits(t *testing.T) {
	tb := startBroker(t, func(c *Config) { c.MaxPartitionsPerTopic = 16 })
	ctx := ctxT(t)
	const topic = "persistent://public/default/lim-parts"
	for _, n := range []int{17, math.MaxInt32, math.MaxInt32 + 1, math.MaxInt64, 0, -5, math.MinInt64} {
		if err := tb.Registry().CreatePartitionedTopic(ctx, topic, PartitionedMetadata{Partitions: n}); !errors.Is(err, ErrPreconditionFailed) {
			t.Errorf("create with %d partitions: %v", n, err)
		}
	}
	if n, err := tb.Registry().Partitions(ctx, topic); err != nil || n != 0 {
		t.Fatalf("refusals created %d partitions (%v)", n, err)
	}
	if err := tb.Registry().CreatePartitionedTopic(ctx, topic, PartitionedMetadata{Partitions: 16}); err != nil {
		t.Fatal(err)
	}
	if err := tb.Registry().UpdatePartitionedTopic(ctx, topic, 17); !errors.Is(err, ErrPreconditionFailed) {
		t.Fatalf("update to 17: %v", err)
	}
	if n, _ := tb.Registry().Partitions(ctx, topic); n != 16 {
		t.Fatalf("partitions %d after a refused update", n)
	}
	// Unlimited (negative): still bounded by int32.
	tb2 := startBroker(t, func(c *Config) { c.MaxPartitionsPerTopic = -1 })
	if err := tb2.Registry().CreatePartitionedTopic(ctx, topic, PartitionedMetadata{Partitions: math.MaxInt32 + 1}); !errors.Is(err, ErrPreconditionFailed) {
		t.Fatalf("2^31 partitions without a limit: %v", err)
	}
}

// TestListingBoundedWithHugePartitionedTopic: a partitioned topic whose
// stored count predates the limit (2^31-1 partitions) makes the
// namespace listing fail fast with a precondition error instead of
// building billions of names.
func TestListingBoundedWithHugePartitionedTopic(t *testing.T) {
	tb := startBroker(t, nil)
	ctx := ctxT(t)
	tn, err := parseTopicName("persistent://public/default/huge")
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.reg.setPartitions(ctx, tn, PartitionedMetadata{Partitions: math.MaxInt32}, true); err != nil {
		t.Fatal(err)
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	start := time.Now()
	_, err = tb.Registry().TopicsOfNamespace(ctx, "public/default", true, true)
	if !errors.Is(err, ErrPreconditionFailed) {
		t.Fatalf("listing: %v", err)
	}
	runtime.ReadMemStats(&ms)
	if d := time.Since(start); d > 2*time.Second || ms.HeapAlloc > before+64<<20 {
		t.Fatalf("refusal took %v and %d MiB of heap", d, (ms.HeapAlloc-before)>>20)
	}
	// The partitioned-topic list itself is one name.
	if parts, err := tb.Registry().PartitionedTopics(ctx, "public/default", "persistent"); err != nil || len(parts) != 1 {
		t.Fatalf("partitioned topics %v %v", parts, err)
	}
}
