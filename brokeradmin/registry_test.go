package brokeradmin_test

import (
	"errors"
	"maps"
	"math"
	"testing"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/topicreg"
)

// TestPartitionCountLimits: creation and update refuse partition counts
// above the broker's limit and outside 1..2^31-1, and create nothing.
func TestPartitionCountLimits(t *testing.T) {
	tb := brokertest.Start(t, brokertest.Options{Config: func(c *brokerconf.Config) { c.MaxPartitionsPerTopic = 16 }})
	topics := tb.Admin().Topics
	ctx := brokertest.Ctx(t)
	const topic = "persistent://public/default/lim-parts"
	for _, n := range []int{17, math.MaxInt32, math.MaxInt32 + 1, math.MaxInt64, 0, -5, math.MinInt64} {
		if err := topics.CreatePartitionedTopic(ctx, topic, topicreg.PartitionedMetadata{Partitions: n}); !errors.Is(err, broker.ErrPreconditionFailed) {
			t.Errorf("create with %d partitions: %v", n, err)
		}
	}
	if n, err := topics.Partitions(ctx, topic); err != nil || n != 0 {
		t.Fatalf("refusals created %d partitions (%v)", n, err)
	}
	if err := topics.CreatePartitionedTopic(ctx, topic, topicreg.PartitionedMetadata{Partitions: 16}); err != nil {
		t.Fatal(err)
	}
	if err := topics.UpdatePartitionedTopic(ctx, topic, 17); !errors.Is(err, broker.ErrPreconditionFailed) {
		t.Fatalf("update to 17: %v", err)
	}
	if n, _ := topics.Partitions(ctx, topic); n != 16 {
		t.Fatalf("partitions %d after a refused update", n)
	}
	// Unlimited (negative): still bounded by int32.
	tb2 := brokertest.Start(t, brokertest.Options{Config: func(c *brokerconf.Config) { c.MaxPartitionsPerTopic = -1 }})
	if err := tb2.Admin().Topics.CreatePartitionedTopic(ctx, topic, topicreg.PartitionedMetadata{Partitions: math.MaxInt32 + 1}); !errors.Is(err, broker.ErrPreconditionFailed) {
		t.Fatalf("2^31 partitions without a limit: %v", err)
	}
}

// TestTopicPropertiesKept: properties live with the topic — a partition
// update keeps a partitioned topic's, an update merges then deletes
// keys, and a non-persistent topic takes none.
func TestTopicPropertiesKept(t *testing.T) {
	tb := brokertest.Start(t, brokertest.Options{})
	topics := tb.Admin().Topics
	ctx := brokertest.Ctx(t)
	part, plain := "persistent://public/default/props-p", "persistent://public/default/props"
	if err := topics.CreatePartitionedTopic(ctx, part, topicreg.PartitionedMetadata{Partitions: 2, Properties: map[string]string{"a": "1"}}); err != nil {
		t.Fatal(err)
	}
	if err := topics.UpdatePartitionedTopic(ctx, part, 3); err != nil {
		t.Fatal(err)
	}
	if err := topics.UpdatePartitionedTopic(ctx, part, 2); !errors.Is(err, broker.ErrPreconditionFailed) {
		t.Fatalf("lowering the partition count: %v", err)
	}
	if n, _ := topics.Partitions(ctx, part); n != 3 {
		t.Fatalf("partitions %d, want 3", n)
	}
	if err := topics.CreateTopicWithProperties(ctx, plain, map[string]string{"a": "1", "b": "2"}); err != nil {
		t.Fatal(err)
	}
	if err := topics.CreateTopic(ctx, plain); !errors.Is(err, broker.ErrAlreadyExists) {
		t.Fatalf("creating it again: %v", err)
	}
	if err := topics.UpdateTopicProperties(ctx, plain, map[string]string{"c": "3"}, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string]map[string]string{part: {"a": "1"}, plain: {"b": "2", "c": "3"}} {
		got, err := topics.TopicProperties(ctx, topic)
		if err != nil || !maps.Equal(got, want) {
			t.Fatalf("properties of %s: %v %v, want %v", topic, got, err, want)
		}
	}
	if err := topics.UpdateTopicProperties(ctx, plain, map[string]string{"": "x"}, nil); !errors.Is(err, broker.ErrPreconditionFailed) {
		t.Fatalf("an empty key: %v", err)
	}
	if err := topics.UpdateTopicProperties(ctx, "persistent://public/default/props-none", map[string]string{"a": "1"}, nil); !errors.Is(err, broker.ErrTopicNotFound) {
		t.Fatalf("properties of a missing topic: %v", err)
	}
	if err := topics.CreateTopicWithProperties(ctx, "non-persistent://public/default/props", map[string]string{"a": "1"}); !errors.Is(err, broker.ErrPreconditionFailed) {
		t.Fatalf("properties on a non-persistent topic: %v", err)
	}
}
