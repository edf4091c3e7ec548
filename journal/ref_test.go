package journal

import (
	"bytes"
	"testing"
	"time"
	"unsafe"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// refRecords mixes payloads below and above RefMinPayload, some larger
// than a chunk, so headers, copied records and referenced payloads
// interleave across chunk boundaries.
func refRecords() []Record {
	sizes := []int{10, RefMinPayload, 3000, chunkSize + 5, 0, RefMinPayload - 1, 300 << 10, 77, chunkSize - 40, 5}
	recs := make([]Record, len(sizes))
	for i, n := range sizes {
		p := make([]byte, n)
		for k := range p {
			p[k] = byte(i*131 + k*7)
		}
		recs[i] = Record{Type: Entry, LedgerID: 3, EntryID: int64(i), Payload: p}
	}
	return recs
}

// TestAppendRefSameBytes: a group appended with AppendRef is byte for byte
// the group Append writes, and its large payloads are written from the
// caller's memory, not from copies.
func TestAppendRefSameBytes(t *testing.T) {
	recs := refRecords()
	write := func(ref bool) ([]byte, [][]byte) {
		e := newTestEnv(t)
		var views [][]byte
		e.writeFn = func(g *group) error {
			views = append([][]byte(nil), g.chunks...)
			return nil
		}
		c := newCommitter(e.env(), committerOptions{maxWait: time.Hour, maxBytes: 1 << 30, maxEntries: len(recs), maxQueued: 1 << 30}, 1, Position{})
		a := newAcks()
		for i := range recs {
			r := recs[i]
			c.appendCRC(&r, payloadCRC(r.Payload), ref && len(r.Payload) >= RefMinPayload, a.comp(int64(i)))
		}
		b := e.recvGroup()
		e.release <- nil
		a.waitN(t, len(recs))
		if err := c.close(); err != nil {
			t.Fatal(err)
		}
		return b, views
	}
	want, _ := write(false)
	got, views := write(true)
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendRef group (%d bytes) differs from Append's (%d bytes)", len(got), len(want))
	}
	_, _, dec := decodeAll(t, got)
	if len(dec) != len(recs) {
		t.Fatalf("decoded %d records, want %d", len(dec), len(recs))
	}
	refs := 0
	for _, r := range recs {
		if len(r.Payload) < RefMinPayload {
			continue
		}
		for _, v := range views {
			if len(v) == len(r.Payload) && unsafe.SliceData(v) == unsafe.SliceData(r.Payload) {
				refs++
			}
		}
	}
	if refs != 4 {
		t.Fatalf("%d large payloads written from the caller's memory, want 4", refs)
	}
}

// TestAppendRefReplay: through the real journal (io path of the OS or
// MemFS writer), AppendRef records replay intact, also after reopening.
func TestAppendRefReplay(t *testing.T) {
	fs := vfs.NewMem()
	j := mustOpen(t, testOptions(fs))
	recs := refRecords()
	ch := make(chan error, len(recs))
	for _, r := range recs {
		j.AppendRef(r, payloadCRC(r.Payload), CompletionFunc(func(_ Position, err error) { ch <- err }))
	}
	for range recs {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	got, _ := replayAll(t, j, Position{})
	sameRecords(t, got, recs)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j = mustOpen(t, testOptions(fs))
	defer j.Close()
	got, _ = replayAll(t, j, Position{})
	sameRecords(t, got, recs)
}
