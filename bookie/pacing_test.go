package bookie

import (
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// TestCheckpointPaced: a background checkpoint, started by the write
// cache's half filling, spreads its entry-log appends over
// CheckpointSpread (it is the first: its half had all the time in the
// world to fill), and every entry reads back after it; an explicit
// Checkpoint is not paced.
func TestCheckpointPaced(t *testing.T) {
	// The spread leaves the pacer room to sleep even where appending the
	// half takes several times longer than on a quiet machine (a loaded
	// CI machine took 130 ms for what a quiet one does in under 10 ms;
	// with a 60 ms spread the pacer was never ahead of its line).
	const spread = 400 * time.Millisecond
	cps := make(chan CheckpointStages, 16)
	o := memOptions(vfs.NewMem())
	o.WriteCacheSize = 2 << 20 // halves of 1,048,576 payload bytes
	o.CheckpointInterval = time.Hour
	o.CheckpointSpread = spread
	o.OnCheckpoint = func(c CheckpointStages) {
		if c.Entries > 0 {
			cps <- c
		}
	}
	b, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	add := func(from, to int64) {
		for e := from; e < to; e++ {
			if err := addSync(b, 1, e, mk, payloadFor(1, e, 1024), false); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A slow producer: the half takes over 2*spread to fill, so the
	// checkpoint it kicks when full spreads over the whole spread.
	add(0, 512)
	time.Sleep(3 * spread)
	add(512, 1024) // exactly fills the active half: the background loop is kicked
	c := <-cps
	if got := time.Duration(c.D[CkptAppend]); got < spread*2/3 || c.Paced == 0 || c.Entries != 1024 {
		t.Fatalf("background checkpoint of %d entries appended in %v (%v asleep), want about %v", c.Entries, got, time.Duration(c.Paced), spread)
	}
	add(1024, 1524)
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	// Not paced: the pacer never slept (its time on a loaded machine
	// says nothing).
	if c := <-cps; c.Entries != 500 || c.Paced != 0 {
		t.Fatalf("explicit checkpoint of %d entries appended in %v, %v of it asleep: paced", c.Entries, time.Duration(c.D[CkptAppend]), time.Duration(c.Paced))
	}
	for e := int64(0); e < 1524; e += 37 {
		mustRead(t, b, 1, e, payloadFor(1, e, 1024))
	}
}

// TestPacerStopsWhenActiveHalfFills: the pacer sleeps to follow its line
// while the active half is nearly empty, and stops sleeping for good once
// the active half is half full, a caller waits for the checkpoint lock
// (an explicit Checkpoint, a ledger delete, Close), or the bookie closes.
func TestPacerStopsWhenActiveHalfFills(t *testing.T) {
	b := &Bookie{wc: newWriteCache(1 << 20), el: newFakeDisk().open().el}
	p := &pacer{b: b, total: 1 << 20, spread: 100 * time.Millisecond, start: time.Now()}
	if err := p.step(1 << 19); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(p.start); el < 40*time.Millisecond {
		t.Fatalf("half the bytes after %v of a 100 ms spread: did not sleep", el)
	}
	for e := int64(0); b.wc.mu.active.bytes < b.wc.halfSize/2; e++ {
		if err := b.wc.put(1, e, make([]byte, 4096), 0, 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	hurried := func(what string) {
		t.Helper()
		p := &pacer{b: b, total: 1 << 20, spread: time.Second, start: time.Now()}
		if err := p.step(1 << 19); err != nil {
			t.Fatal(err)
		}
		if el := time.Since(p.start); el > 200*time.Millisecond || p.spread != 0 {
			t.Fatalf("%s: step took %v, spread now %v", what, el, p.spread)
		}
	}
	hurried("active half half full")
	b.wc = newWriteCache(1 << 20)
	b.ckptWaiting.Add(1)
	hurried("a caller waiting for the checkpoint lock")
	b.ckptWaiting.Add(-1)
	b.closed.Store(true)
	hurried("closing")
}
