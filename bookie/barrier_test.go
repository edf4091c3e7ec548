package bookie

import (
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/journal"
)

// TestCheckpointWritesNoBarrierRecord: checkpoints use the journal's
// record-free Sync, so the journal holds exactly the bookie's records; and
// a journal written by an older bookie, with fence records of ledger -1 as
// barriers, still replays (they are skipped).
func TestCheckpointWritesNoBarrierRecord(t *testing.T) {
	mem := vfs.NewMem()
	o := faultOptions(mem)
	b, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	for e := int64(0); e < 10; e++ {
		if err := addSync(b, 3, e, mk, entryPayload(3, e), false); err != nil {
			t.Fatal(err)
		}
		if err := b.Checkpoint(); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	var entries, other int
	err = journal.ReplayDir(mem, o.JournalDir, journal.Position{}, func(r journal.Record, _ journal.Position) error {
		switch {
		case r.LedgerID < 0:
			t.Errorf("barrier record in the journal: %+v", r)
		case r.Type == journal.Entry:
			entries++
		default:
			other++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if entries != 10 {
		t.Fatalf("journal holds %d entry records, want 10", entries)
	}

	// An older bookie's barrier record after the last checkpoint.
	j, err := journal.Open(journal.Options{Dir: o.JournalDir, FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	j.AppendFunc(journal.Record{Type: journal.Fence, LedgerID: barrierLedger, EntryID: -1}, func(_ journal.Position, err error) { done <- err })
	j.AppendFunc(journal.Record{Type: journal.Entry, LedgerID: 3, EntryID: 10, Payload: entryPayload(3, 10)}, func(_ journal.Position, err error) { done <- err })
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err = Open(o); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for e := int64(0); e <= 10; e++ {
		mustRead(t, b, 3, e, entryPayload(3, e))
	}
}
