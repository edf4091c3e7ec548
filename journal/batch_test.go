package journal

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// TestAppendBatchSameBytes: a group appended with appendBatchCRC is byte
// for byte the group the same records make one appendCRC at a time, and
// the completions run in order.
func TestAppendBatchSameBytes(t *testing.T) {
	recs := makeRecords(50, 90, 4)
	write := func(batch bool) []byte {
		e := newTestEnv(t)
		c := newCommitter(e.env(), committerOptions{maxWait: time.Hour, maxBytes: 1 << 30, maxEntries: len(recs), maxQueued: 1 << 30}, 1, Position{})
		a := newAcks()
		pcrcs := make([]uint32, len(recs))
		comps := make([]Completion, len(recs))
		for i := range recs {
			pcrcs[i], comps[i] = payloadCRC(recs[i].Payload), a.comp(int64(i))
		}
		if batch {
			for i := 0; i < len(recs); {
				n := c.appendBatchCRC(recs[i:min(i+17, len(recs))], pcrcs[i:], comps[i:])
				if n == 0 {
					t.Fatal("appendBatchCRC appended nothing with room in the queue")
				}
				i += n
			}
		} else {
			for i := range recs {
				c.appendCRC(&recs[i], pcrcs[i], false, comps[i])
			}
		}
		b := e.recvGroup()
		e.release <- nil
		a.waitN(t, len(recs))
		if err := c.close(); err != nil {
			t.Fatal(err)
		}
		return b
	}
	want := write(false)
	got := write(true)
	if !bytes.Equal(got, want) {
		t.Fatalf("batch group (%d bytes) differs from the one-at-a-time group (%d bytes)", len(got), len(want))
	}
}

// TestAppendBatchStopsAtQueueLimit: a batch appends while the queue has
// room and reports how far it got; the rest waits in appendCRC as a
// single append would.
func TestAppendBatchStopsAtQueueLimit(t *testing.T) {
	e := newTestEnv(t)
	size := int64(RecordHeaderSize + len(testEntry(1).Payload))
	c := newCommitter(e.env(), committerOptions{maxBytes: 1 << 20, maxQueued: 2 * size}, 1, Position{})
	a := newAcks()
	c.append(testEntry(1), a.comp(1))
	e.recvGroup() // entry 1 in flight, still queued
	recs := []Record{*testEntry(2), *testEntry(3)}
	pcrcs := []uint32{payloadCRC(recs[0].Payload), payloadCRC(recs[1].Payload)}
	if n := c.appendBatchCRC(recs, pcrcs, []Completion{a.comp(2), a.comp(3)}); n != 1 {
		t.Fatalf("appendBatchCRC appended %d records, want 1 (the queue holds two)", n)
	}
	// The queue is full: a batch starting there appends nothing.
	if n := c.appendBatchCRC(recs[1:], pcrcs[1:], []Completion{a.comp(3)}); n != 0 {
		t.Fatalf("appendBatchCRC on a full queue appended %d records", n)
	}
	e.release <- nil
	c.appendCRC(&recs[1], pcrcs[1], false, a.comp(3))
	e.release <- nil
	e.release <- nil
	a.waitN(t, 3)
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
}

// TestAppendBatchWithCRC through the journal: invalid records inside a
// batch are refused with their reason, the others are durable in order
// and replay intact after a reopen, also when the queue's limit splits
// the batch.
func TestAppendBatchWithCRC(t *testing.T) {
	fs := vfs.NewMem()
	o := testOptions(fs)
	o.MaxQueuedBytes = 4 << 10 // a few records: the batches split
	j := mustOpen(t, o)
	recs := makeRecords(300, 200, 9)
	bad := map[int]error{7: ErrInvalidType, 150: ErrTooLarge, 299: ErrInvalidType}
	recs[7].Type = 0
	recs[150].Payload = make([]byte, MaxPayloadSize+1)
	recs[299].Type = typeMark
	var (
		mu    sync.Mutex
		order []int
		errs  = map[int]error{}
		wg    sync.WaitGroup
	)
	pcrcs := make([]uint32, len(recs))
	comps := make([]Completion, len(recs))
	for i := range recs {
		pcrcs[i] = payloadCRC(recs[i].Payload)
		wg.Add(1)
		comps[i] = CompletionFunc(func(_ Position, err error) {
			mu.Lock()
			if err == nil {
				order = append(order, i)
			} else {
				errs[i] = err
			}
			mu.Unlock()
			wg.Done()
		})
	}
	for i := 0; i < len(recs); i += 64 {
		k := min(i+64, len(recs))
		j.AppendBatchWithCRC(recs[i:k], pcrcs[i:k], comps[i:k])
	}
	wg.Wait()
	if len(errs) != len(bad) {
		t.Fatalf("refused %v, want %v", errs, bad)
	}
	for i, want := range bad {
		if !errors.Is(errs[i], want) {
			t.Fatalf("record %d: err %v, want %v", i, errs[i], want)
		}
	}
	var want []Record
	for i := range recs {
		if bad[i] == nil {
			want = append(want, recs[i])
		}
	}
	for k, i := range order {
		if k > 0 && i <= order[k-1] {
			t.Fatalf("completion order %v: not ascending", order)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j = mustOpen(t, testOptions(fs))
	defer j.Close()
	got, _ := replayAll(t, j, Position{})
	sameRecords(t, got, want)
}

// TestAppendBatchNilCompletions: a batch whose records carry no
// completion but the last is durable when the last completes; a refused
// record without a completion fails the span up to the next completion,
// so no completion reports success for a span that lost a record.
func TestAppendBatchNilCompletions(t *testing.T) {
	fs := vfs.NewMem()
	j := mustOpen(t, testOptions(fs))
	recs := makeRecords(20, 100, 5)
	recs[12].Type = 0 // refused, no completion: records 12..14 fail with it
	pcrcs := make([]uint32, len(recs))
	for i := range recs {
		pcrcs[i] = payloadCRC(recs[i].Payload)
	}
	var mu sync.Mutex
	got := map[int]error{}
	var wg sync.WaitGroup
	comps := make([]Completion, len(recs))
	for _, i := range []int{9, 14, 19} {
		wg.Add(1)
		comps[i] = CompletionFunc(func(_ Position, err error) {
			mu.Lock()
			got[i] = err
			mu.Unlock()
			wg.Done()
		})
	}
	j.AppendBatchWithCRC(recs, pcrcs, comps)
	wg.Wait()
	if got[9] != nil || got[19] != nil {
		t.Fatalf("completions of intact spans failed: %v", got)
	}
	if !errors.Is(got[14], ErrInvalidType) {
		t.Fatalf("completion after a refused record without one: %v, want ErrInvalidType", got[14])
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	var want []Record
	for i := range recs {
		if i < 12 || i > 14 {
			want = append(want, recs[i])
		}
	}
	j = mustOpen(t, testOptions(fs))
	defer j.Close()
	replayed, _ := replayAll(t, j, Position{})
	sameRecords(t, replayed, want)
}
