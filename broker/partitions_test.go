package broker

import (
	"errors"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/topicreg"
)

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
	if err := tb.reg.CreatePartitioned(ctx, tn.String(), topicreg.PartitionedMetadata{Partitions: math.MaxInt32}); err != nil {
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
