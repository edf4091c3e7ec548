package sdk

import (
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
)

type id struct {
	ledger, entry int64
	batch         int32
}

func (m id) Serialize() []byte     { return nil }
func (m id) LedgerID() int64       { return m.ledger }
func (m id) EntryID() int64        { return m.entry }
func (m id) BatchIdx() int32       { return m.batch }
func (m id) PartitionIdx() int32   { return 0 }
func (m id) BatchSize() int32      { return 0 }
func (m id) String() string        { return "" }
func (m id) EntryIdx() int64       { return m.entry }
func (m id) PartitionIndex() int32 { return 0 }

var _ pulsar.MessageID = id{}

// TestSequenceIDIncreases: output sequence ids follow input positions,
// including across ledgers and at the documented bounds.
func TestSequenceIDIncreases(t *testing.T) {
	ids := []id{
		{0, 0, -1}, {0, 1, -1}, {0, 1, 0}, {0, 1, 4094}, {0, 2, -1},
		{1, 0, -1}, {1, 1<<28 - 1, -1}, {2, 0, -1}, {1<<23 - 1, 1<<28 - 1, 4094},
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
