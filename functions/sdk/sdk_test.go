package sdk

import (
	"testing"

	"github.com/magnetar-mq/magnetar/pulsarclient"
)

func id(ledger, entry int64, batch int32) pulsarclient.MessageID {
	return pulsarclient.MessageID{Ledger: ledger, Entry: entry, BatchIndex: batch, Partition: -1}
}

// TestSequenceIDIncreases: output sequence ids follow input positions,
// including across ledgers and at the documented bounds.
func TestSequenceIDIncreases(t *testing.T) {
	ids := []pulsarclient.MessageID{
		id(0, 0, -1), id(0, 1, -1), id(0, 1, 0), id(0, 1, 4094), id(0, 2, -1),
		id(1, 0, -1), id(1, 1<<28-1, -1), id(2, 0, -1), id(1<<23-1, 1<<28-1, 4094),
	}
	prev := int64(-1)
	for _, m := range ids {
		s := SequenceID(m)
		if s <= prev {
			t.Fatalf("%+v: sequence id %d not above %d", m, s, prev)
		}
		prev = s
	}
	if prev <= 0 {
		t.Fatalf("largest id overflowed: %d", prev)
	}
}

func TestDedupName(t *testing.T) {
	a := dedupName("t/n/f", "persistent://t/n/in")
	if a != "fn-t_n_f-t_n_in" {
		t.Fatalf("name %q", a)
	}
	if a == dedupName("t/n/f", "persistent://t/n/in-partition-1") {
		t.Fatal("partitions share a producer name")
	}
}
