package journal

import (
	"errors"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// TestCommitterSync: Sync writes nothing, completes after every record
// appended before it (in order, after their completions) with a position
// past all of them, at once when nothing is pending, and with the sticky
// error after a failure.
func TestCommitterSync(t *testing.T) {
	e := newTestEnv(t)
	c := newCommitter(e.env(), committerOptions{maxBytes: 1 << 20, maxQueued: 1 << 30, mark: true}, 1, Position{FileID: 1})
	a := newAcks()

	c.sync(a.comp(100)) // nothing appended: at once
	if a.count() != 1 || a.errs[0] != nil || a.pos[0] != (Position{FileID: 1}) {
		t.Fatalf("idle sync: %v %v %v", a.ids, a.pos, a.errs)
	}
	c.append(testEntry(1), a.comp(1))
	g1 := e.recvGroup() // group 1 in flight
	c.append(testEntry(2), a.comp(2))
	c.sync(a.comp(101)) // waits for record 2 (group 2)
	c.append(testEntry(3), a.comp(3))
	e.noGroup()
	e.release <- nil // group 1 durable
	g2 := e.recvGroup()
	a.waitN(t, 2)
	if a.count() != 2 {
		t.Fatalf("sync completed before the group holding record 2: %v", a.ids)
	}
	e.release <- nil // group 2 durable
	a.waitN(t, 5)
	wantIDs := []int64{100, 1, 2, 3, 101}
	for i, id := range wantIDs {
		if a.ids[i] != id || a.errs[i] != nil {
			t.Fatalf("completions %v errs %v, want %v", a.ids, a.errs, wantIDs)
		}
	}
	end := Position{FileID: 1, Offset: int64(len(g1) + len(g2))}
	if a.pos[3] != end {
		t.Fatalf("record 3 pos %v, want %v", a.pos[3], end)
	}
	// The sync covers record 2, not record 3 appended after it in the same
	// group: a checkpoint at it must keep record 3.
	if a.pos[4] != a.pos[2] || !a.pos[4].Less(end) {
		t.Fatalf("sync pos %v, want record 2's %v (< %v)", a.pos[4], a.pos[2], end)
	}
	if got, _ := c.state(); got != end {
		t.Fatalf("durable end %v, want %v", got, end)
	}
	if len(decodeAllRecs(t, g1))+len(decodeAllRecs(t, g2)) != 3 {
		t.Fatal("sync wrote a record")
	}

	// A pending sync fails with the group it waits for.
	c.append(testEntry(4), a.comp(4))
	e.recvGroup()
	c.sync(a.comp(102))
	c.append(testEntry(5), a.comp(5))
	eio := errors.New("EIO")
	e.release <- eio
	a.waitN(t, 8)
	if a.ids[6] != 102 || !errors.Is(a.errs[6], eio) {
		t.Fatalf("sync after failed group: id %d err %v", a.ids[6], a.errs[6])
	}
	c.sync(a.comp(103)) // sticky
	if a.count() != 9 || !errors.Is(a.errs[8], ErrFailed) {
		t.Fatalf("sync on failed journal: %v", a.errs)
	}
	c.close()
}

func decodeAllRecs(t *testing.T, b []byte) []Record {
	_, _, recs := decodeAll(t, b)
	return recs
}

// TestCheckpointAtAcknowledgedPosition: a position handed to a completion
// or a Sync is a valid Checkpoint from inside that very completion (the
// durable end is published before completions run), and Sync appends no
// record.
func TestCheckpointAtAcknowledgedPosition(t *testing.T) {
	fs := vfs.NewMem()
	j := mustOpen(t, testOptions(fs))
	recs := makeRecords(50, 100, 1)
	type res struct {
		pos Position
		err error
	}
	ch := make(chan res, len(recs)+1)
	for _, r := range recs {
		j.AppendFunc(r, func(p Position, err error) {
			if err == nil {
				// End() must already cover p.
				if end := j.End(); end.Less(p) {
					err = errors.New("completion position past End()")
				}
			}
			ch <- res{p, err}
		})
	}
	j.Sync(CompletionFunc(func(p Position, err error) { ch <- res{p, err} }))
	var last Position
	for range recs {
		r := <-ch
		if r.err != nil {
			t.Fatal(r.err)
		}
		last = r.pos
	}
	s := <-ch
	if s.err != nil || s.pos.Less(last) {
		t.Fatalf("sync = %v, %v; want a position >= %v", s.pos, s.err, last)
	}
	if err := j.Checkpoint(s.pos); err != nil {
		t.Fatalf("Checkpoint(sync position) = %v", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j = mustOpen(t, testOptions(fs))
	defer j.Close()
	if got, _ := replayAll(t, j, j.LastMark()); len(got) != 0 {
		t.Fatalf("replay after checkpoint at the sync position: %d records, want 0", len(got))
	}
	got, _ := replayAll(t, j, Position{})
	sameRecords(t, got, recs) // no barrier record among them
}
