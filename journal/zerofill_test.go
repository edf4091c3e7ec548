package journal

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// TestZeroFillCrashRecovery is TestCrashRecovery with the zero filler
// writing into the files beside the writer, buffered and with DirectIO:
// crash clones keep synced data plus torn prefixes of unsynced writes
// (the filler's included), and every acknowledged record must replay.
func TestZeroFillCrashRecovery(t *testing.T) {
	t.Run("buffered", func(t *testing.T) {
		crashRecovery(t, func(o *Options) { o.ZeroFill = true; o.PreallocSize = 4 << 10 })
	})
	t.Run("direct", func(t *testing.T) {
		crashRecovery(t, func(o *Options) {
			o.ZeroFill, o.DirectIO, o.Alignment, o.PreallocSize = true, true, 512, 4<<10
		})
	})
}

// TestZeroFillOS: live copies of a zero-filled journal on the OS file
// system, taken while four writers append, are crash images from which
// every acknowledged record replays; files left hold no fill past their
// last record. With and without DirectIO.
func TestZeroFillOS(t *testing.T) {
	t.Run("buffered", func(t *testing.T) { liveCopyOS(t, func(o *Options) { o.ZeroFill = true }) })
	t.Run("direct", func(t *testing.T) {
		liveCopyOS(t, func(o *Options) { o.ZeroFill, o.DirectIO = true, true })
	})
}

// waitIdle waits until the filler has nothing to do: no chunk in flight
// and the lead topped up (or nothing left to fill).
func (z *zeroFiller) waitIdle() {
	z.mu.Lock()
	defer z.mu.Unlock()
	for {
		if _, _, ok := z.nextLocked(); !ok && z.fill[0] == z.fill[1] {
			return
		}
		z.cond.Wait()
	}
}

// TestZeroFillAhead: once the filler has run, one-record groups appended
// one at a time land on zeros the filler synced, across a preallocation
// step and a file roll; everything replays in order after Close, and a
// closed file ends at its last record.
func TestZeroFillAhead(t *testing.T) {
	for _, direct := range []bool{false, true} {
		t.Run(map[bool]string{false: "buffered", true: "direct"}[direct], func(t *testing.T) {
			o := DefaultOptions(filepath.Join(t.TempDir(), "journal"))
			o.MaxGroupWait, o.ZeroFill, o.DirectIO = 0, true, direct
			o.PreallocSize = 1 << 20 // ahead = 512 KiB
			o.MaxFileSize = 3 << 20
			j := mustOpen(t, o)
			if a := zeroAhead(o); a != 512<<10 {
				t.Fatalf("zeroAhead = %d", a)
			}
			const n, size = 600, 8 << 10 // 4.8 MiB: a roll and several steps
			recs := makeRecords(n, size, 3)
			var filled, ahead int
			for i, r := range recs {
				j.zero.waitIdle()
				before := j.Stats().ZeroFilledGroups
				appendAll(t, j, []Record{r})
				if j.Stats().ZeroFilledGroups > before {
					filled++
				}
				if i == n/2 {
					z := j.zero
					z.mu.Lock()
					ahead = int(z.zeroed - z.wend)
					z.mu.Unlock()
				}
			}
			// The first group of a file may land before the filler ran.
			if filled < n-4 {
				t.Fatalf("%d of %d groups written over zeros", filled, n)
			}
			if ahead <= 0 {
				t.Fatalf("filler lead %d mid-run", ahead)
			}
			st := j.Stats()
			if st.ZeroFillBytes < uint64(n*size) {
				t.Fatalf("ZeroFillBytes %d < %d written", st.ZeroFillBytes, n*size)
			}
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			ids, err := listFiles(vfs.NewOS(), o.Dir)
			if err != nil || len(ids) < 2 {
				t.Fatalf("files %v, %v: want a roll", ids, err)
			}
			for _, id := range ids {
				checkNoPadding(t, filepath.Join(o.Dir, fileName(id)))
			}
			j = mustOpen(t, o)
			k := 0
			if err := j.Replay(Position{}, func(r Record, _ Position) error {
				if k >= n || !bytes.Equal(r.Payload, recs[k].Payload) || r.EntryID != recs[k].EntryID {
					t.Fatalf("record %d differs", k)
				}
				k++
				return nil
			}); err != nil || k != n {
				t.Fatalf("replayed %d of %d: %v", k, n, err)
			}
			j.Close()
		})
	}
}

// TestZeroFillOvertaken: a write past the zeroed end pauses the filler;
// a write the filler's chunk in flight overlaps waits for the chunk.
func TestZeroFillOvertaken(t *testing.T) {
	mem := vfs.NewMem()
	f, err := mem.Create("/f")
	if err != nil {
		t.Fatal(err)
	}
	z := newZeroFiller(zeroChunk, 1, nil)
	defer z.close()
	z.setFile(f, 32, 8*zeroChunk)
	z.waitIdle()
	z.mu.Lock()
	zeroed := z.zeroed
	z.mu.Unlock()
	if zeroed != 32+zeroChunk {
		t.Fatalf("zeroed %d, want %d", zeroed, 32+zeroChunk)
	}
	if !z.claim(32, 1000) {
		t.Fatal("write inside the zeros not reported as filled")
	}
	if z.claim(1000, zeroed+1) {
		t.Fatal("write past the zeros reported as filled")
	}
	z.mu.Lock()
	paused := time.Until(z.pauseTo) > zeroBackoff/2
	z.mu.Unlock()
	if !paused {
		t.Fatal("overtaken filler not paused")
	}
	// A chunk in flight over [a, b): a claim overlapping it returns only
	// after the chunk is done.
	z.mu.Lock()
	z.fill = [2]int64{zeroed + 10, zeroed + 20}
	z.mu.Unlock()
	got := make(chan bool)
	go func() { got <- z.claim(zeroed+15, zeroed+16) }()
	select {
	case <-got:
		t.Fatal("claim overlapping the chunk in flight did not wait")
	case <-time.After(50 * time.Millisecond):
	}
	z.mu.Lock()
	z.fill = [2]int64{}
	z.zeroed = zeroed + 20
	z.cond.Broadcast()
	z.mu.Unlock()
	if !<-got {
		t.Fatal("claim after the chunk: not over zeros")
	}
}

// TestZeroFillBusyPause: a group of zeroBusyGroup bytes or more pauses the
// filler even when it was written over zeros; smaller groups over zeros
// do not.
func TestZeroFillBusyPause(t *testing.T) {
	f, err := vfs.NewMem().Create("/f")
	if err != nil {
		t.Fatal(err)
	}
	z := newZeroFiller(4*zeroChunk, 1, nil)
	defer z.close()
	z.setFile(f, 32, 8*zeroChunk)
	z.waitIdle()
	paused := func() bool {
		z.mu.Lock()
		defer z.mu.Unlock()
		return time.Until(z.pauseTo) > zeroBackoff/2
	}
	if !z.claim(32, 32+zeroBusyGroup-1) || paused() {
		t.Fatal("small group over zeros: not filled, or the filler paused")
	}
	off := int64(32 + zeroBusyGroup - 1)
	if !z.claim(off, off+zeroBusyGroup) {
		t.Fatal("large group over zeros not reported as filled")
	}
	if !paused() {
		t.Fatal("large group did not pause the filler")
	}
}

// TestZeroFillOffWithoutSync: with NoSync the journal syncs nothing, so
// ZeroFill is ignored: no filler, no zeros written.
func TestZeroFillOffWithoutSync(t *testing.T) {
	o := DefaultOptions(filepath.Join(t.TempDir(), "journal"))
	o.ZeroFill, o.NoSync = true, true
	o.PreallocSize = 1 << 20
	j := mustOpen(t, o)
	if j.zero != nil {
		t.Fatal("zero filler started with NoSync")
	}
	appendAll(t, j, makeRecords(50, 4<<10, 1))
	if st := j.Stats(); st.ZeroFillBytes != 0 || st.ZeroFilledGroups != 0 {
		t.Fatalf("zero fill stats with NoSync: %d bytes, %d groups", st.ZeroFillBytes, st.ZeroFilledGroups)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestZeroFillTopsUpOneChunk: after the first fill, the filler tops the
// lead up one chunk at a time (one chunk write and sync per zeroChunk the
// writer moved on, never a burst), and the lead stays between a chunk
// short of zeroAhead and zeroAhead.
func TestZeroFillTopsUpOneChunk(t *testing.T) {
	o := DefaultOptions(filepath.Join(t.TempDir(), "journal"))
	o.MaxGroupWait, o.ZeroFill = 0, true
	o.PreallocSize = 4 << 20 // ahead = 2 MiB
	o.MaxFileSize = 64 << 20
	j := mustOpen(t, o)
	defer j.Close()
	z := j.zero
	ahead := zeroAhead(o)
	const n, size = 400, 8 << 10 // 3.2 MiB: a dozen top-ups
	recs := makeRecords(n, size, 3)
	z.waitIdle()
	topUps := 0
	for i, r := range recs {
		before := j.Stats().ZeroFillBytes
		appendAll(t, j, []Record{r})
		z.waitIdle()
		switch d := j.Stats().ZeroFillBytes - before; d {
		case 0:
		case zeroChunk:
			topUps++
		default:
			t.Fatalf("group %d: the filler wrote %d bytes, want 0 or one chunk (%d)", i, d, zeroChunk)
		}
		z.mu.Lock()
		lead := z.zeroed - z.wend
		z.mu.Unlock()
		if lead < ahead-zeroChunk || lead > ahead {
			t.Fatalf("group %d: lead %d, want [%d, %d]", i, lead, ahead-zeroChunk, ahead)
		}
	}
	if want := n * size / zeroChunk; topUps < want-1 || topUps > want+1 {
		t.Fatalf("%d top-ups for %d bytes written, want about %d", topUps, n*size, want)
	}
}
