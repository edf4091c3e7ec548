package journal

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// testEnv is a commitEnv without a disk: write records the group's bytes
// and announces it on wrote; wait blocks until the test sends the sync
// result on release.
type testEnv struct {
	t       *testing.T
	wrote   chan []byte // copy of each written group, in order
	release chan error  // result of the next wait
	writeFn func(g *group) error
	off     int64
}

func newTestEnv(t *testing.T) *testEnv {
	return &testEnv{t: t, wrote: make(chan []byte, 100), release: make(chan error, 100)}
}

func (e *testEnv) env() commitEnv {
	return commitEnv{
		write: func(g *group) error {
			if e.writeFn != nil {
				if err := e.writeFn(g); err != nil {
					return err
				}
			}
			g.fileID, g.off = 1, e.off
			e.off += int64(g.size)
			e.wrote <- g.bytes()
			return nil
		},
		wait: func() error { return <-e.release },
	}
}

// recvGroup returns the next written group, failing after a generous
// timeout (a hang is a bug, not a slow machine).
func (e *testEnv) recvGroup() []byte {
	e.t.Helper()
	select {
	case b := <-e.wrote:
		return b
	case <-time.After(10 * time.Second):
		e.t.Fatal("no group written")
		return nil
	}
}

func (e *testEnv) noGroup() {
	e.t.Helper()
	select {
	case b := <-e.wrote:
		e.t.Fatalf("unexpected group of %d bytes written", len(b))
	default:
	}
}

// decodeAll decodes a group's records.
func decodeAll(t *testing.T, b []byte) (seqs []uint64, lags []uint32, recs []Record) {
	t.Helper()
	for len(b) > 0 {
		rest, seq, lag, rec, err := DecodeRecord(b)
		if err != nil {
			t.Fatalf("DecodeRecord: %v", err)
		}
		seqs, lags, recs = append(seqs, seq), append(lags, lag), append(recs, rec)
		b = rest
	}
	return
}

// acks collects completions.
type acks struct {
	mu   sync.Mutex
	ids  []int64
	pos  []Position
	errs []error
	cond *sync.Cond
}

func newAcks() *acks { a := &acks{}; a.cond = sync.NewCond(&a.mu); return a }

func (a *acks) comp(id int64) Completion {
	return CompletionFunc(func(p Position, err error) {
		a.mu.Lock()
		a.ids, a.pos, a.errs = append(a.ids, id), append(a.pos, p), append(a.errs, err)
		a.cond.Broadcast()
		a.mu.Unlock()
	})
}

func (a *acks) waitN(t *testing.T, n int) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		a.mu.Lock()
		for len(a.ids) < n {
			a.cond.Wait()
		}
		a.mu.Unlock()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %d completions", n)
	}
}

func (a *acks) count() int { a.mu.Lock(); defer a.mu.Unlock(); return len(a.ids) }

func testEntry(id int64) *Record {
	return &Record{Type: Entry, LedgerID: 7, EntryID: id, Payload: []byte(fmt.Sprintf("payload-%d", id))}
}

func TestCommitterPipelining(t *testing.T) {
	e := newTestEnv(t)
	c := newCommitter(e.env(), committerOptions{maxBytes: 1 << 20, maxQueued: 1 << 30, mark: true}, 1, Position{})
	a := newAcks()

	c.append(testEntry(1), a.comp(1))
	g1 := e.recvGroup()
	if seqs, _, _ := decodeAll(t, g1); len(seqs) != 1 || seqs[0] != 1 {
		t.Fatalf("group 1 seqs = %v, want [1]", seqs)
	}
	// While group 1's sync is in flight, more appends must not be written:
	// they collect in group 2.
	for i := int64(2); i <= 10; i++ {
		c.append(testEntry(i), a.comp(i))
	}
	e.noGroup()
	if n := a.count(); n != 0 {
		t.Fatalf("%d completions before the sync returned", n)
	}
	e.release <- nil
	a.waitN(t, 1)
	g2 := e.recvGroup()
	seqs, lags, recs := decodeAll(t, g2)
	if len(seqs) != 9 {
		t.Fatalf("group 2 has %d records, want 9", len(seqs))
	}
	for i := range seqs {
		if seqs[i] != uint64(i+2) || lags[i] != uint32(i) || recs[i].EntryID != int64(i+2) {
			t.Fatalf("group 2 record %d: seq %d lag %d entry %d", i, seqs[i], lags[i], recs[i].EntryID)
		}
	}
	if n := a.count(); n != 1 {
		t.Fatalf("%d completions before group 2's sync, want 1", n)
	}
	e.release <- nil
	a.waitN(t, 10)
	for i, id := range a.ids {
		if id != int64(i+1) || a.errs[i] != nil {
			t.Fatalf("completion %d = id %d err %v, want id %d nil", i, id, a.errs[i], i+1)
		}
	}
	// Positions point past each record, increasing, ending at the end of
	// group 2.
	if want := (Position{1, int64(len(g1) + len(g2))}); a.pos[9] != want {
		t.Fatalf("last position = %v, want %v", a.pos[9], want)
	}
	for i := 1; i < 10; i++ {
		if !a.pos[i-1].Less(a.pos[i]) {
			t.Fatalf("positions not increasing: %v then %v", a.pos[i-1], a.pos[i])
		}
	}
	// Close writes a lone mark group after everything else.
	e.release <- nil
	if err := c.close(); err != nil {
		t.Fatalf("close = %v", err)
	}
	seqs, lags, recs = decodeAll(t, e.recvGroup())
	if len(recs) != 1 || recs[0].Type != typeMark || seqs[0] != 11 || lags[0] != 0 {
		t.Fatalf("close group = %v %v %v, want one mark record seq 11", seqs, lags, recs)
	}
	if p, seq := c.state(); seq != 11 || p.Offset != e.off {
		t.Fatalf("state = %v %d, want offset %d seq 11", p, seq, e.off)
	}
}

// TestCommitterOrderAroundBlockingWrites checks what the committer does
// first once a group synced while the next is ready: with a writer whose
// Submit queues the I/O (io_uring) it writes the next group first, so the
// disk syncs it while the completions run; with one whose Submit does the
// write and sync itself (pwrite, small hybrid groups) it runs the
// completions first, which would otherwise wait for the next group's sync
// too.
func TestCommitterOrderAroundBlockingWrites(t *testing.T) {
	for _, blocking := range []bool{false, true} {
		t.Run(fmt.Sprint("blocking=", blocking), func(t *testing.T) {
			e := newTestEnv(t)
			a := newAcks()
			var atWrite []int // completions run when each group was written (loop goroutine)
			e.writeFn = func(*group) error {
				atWrite = append(atWrite, a.count())
				return nil
			}
			env := e.env()
			env.blocking = func(n int) bool {
				if n <= 0 {
					t.Errorf("blocking(%d) for a group with records", n)
				}
				return blocking
			}
			c := newCommitter(env, committerOptions{maxBytes: 1 << 20, maxQueued: 1 << 30}, 1, Position{})
			c.append(testEntry(1), a.comp(1))
			e.recvGroup()
			for i := int64(2); i <= 5; i++ {
				c.append(testEntry(i), a.comp(i))
			}
			e.release <- nil
			e.recvGroup()
			e.release <- nil
			a.waitN(t, 5)
			if err := c.close(); err != nil {
				t.Fatal(err)
			}
			want := 0
			if blocking {
				want = 1
			}
			if len(atWrite) != 2 || atWrite[1] != want {
				t.Fatalf("completions run at each group's write: %v, want [0 %d]", atWrite, want)
			}
		})
	}
}

func TestCommitterThresholds(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts committerOptions
		n    int // appends that must make a group ready without waiting
	}{
		{"entries", committerOptions{maxWait: time.Hour, maxBytes: 1 << 20, maxEntries: 5}, 5},
		{"bytes", committerOptions{maxWait: time.Hour, maxBytes: 3 * (RecordHeaderSize + 9)}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			tc.opts.maxQueued = 1 << 30
			c := newCommitter(e.env(), tc.opts, 1, Position{})
			a := newAcks()
			for i := int64(1); i < int64(tc.n); i++ {
				c.append(testEntry(i), a.comp(i))
			}
			e.noGroup()
			c.append(testEntry(int64(tc.n)), a.comp(int64(tc.n)))
			if seqs, _, _ := decodeAll(t, e.recvGroup()); len(seqs) != tc.n {
				t.Fatalf("group has %d records, want %d", len(seqs), tc.n)
			}
			e.release <- nil
			a.waitN(t, tc.n)
			e.release <- nil // mark
			if err := c.close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCommitterMaxWait(t *testing.T) {
	e := newTestEnv(t)
	const wait = 100 * time.Millisecond
	c := newCommitter(e.env(), committerOptions{maxWait: wait, maxBytes: 1 << 20, maxQueued: 1 << 30}, 1, Position{})
	a := newAcks()
	start := time.Now()
	c.append(testEntry(1), a.comp(1))
	c.append(testEntry(2), a.comp(2))
	g := e.recvGroup()
	if el := time.Since(start); el < wait {
		t.Fatalf("group written after %v, before MaxGroupWait %v", el, wait)
	}
	if seqs, _, _ := decodeAll(t, g); len(seqs) != 2 {
		t.Fatalf("group has %d records, want 2", len(seqs))
	}
	e.release <- nil
	e.release <- nil
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
}

func TestCommitterStickyFailure(t *testing.T) {
	e := newTestEnv(t)
	c := newCommitter(e.env(), committerOptions{maxBytes: 1 << 20, maxQueued: 1 << 30, mark: true}, 1, Position{})
	a := newAcks()
	c.append(testEntry(1), a.comp(1))
	e.recvGroup()
	c.append(testEntry(2), a.comp(2))
	c.append(testEntry(3), a.comp(3))
	eio := errors.New("EIO")
	e.release <- eio
	a.waitN(t, 3)
	// Later appends fail too, in order, and nothing more is written.
	c.append(testEntry(4), a.comp(4))
	a.waitN(t, 4)
	e.noGroup()
	for i, err := range a.errs {
		if !errors.Is(err, ErrFailed) || !errors.Is(err, eio) {
			t.Fatalf("completion %d err = %v, want ErrFailed wrapping EIO", i, err)
		}
		if a.ids[i] != int64(i+1) {
			t.Fatalf("completion %d is id %d", i, a.ids[i])
		}
	}
	if err := c.close(); !errors.Is(err, eio) {
		t.Fatalf("close = %v, want EIO", err)
	}
	e.noGroup() // no mark after a failure
	c.append(testEntry(5), a.comp(5))
	a.waitN(t, 5)
	if !errors.Is(a.errs[4], ErrClosed) {
		t.Fatalf("append after close: %v, want ErrClosed", a.errs[4])
	}
}

func TestCommitterWriteError(t *testing.T) {
	e := newTestEnv(t)
	boom := errors.New("submit failed")
	e.writeFn = func(*group) error { return boom }
	c := newCommitter(e.env(), committerOptions{maxBytes: 1 << 20, maxQueued: 1 << 30}, 1, Position{})
	a := newAcks()
	c.append(testEntry(1), a.comp(1))
	a.waitN(t, 1)
	c.append(testEntry(2), a.comp(2))
	a.waitN(t, 2)
	for i, err := range a.errs {
		if !errors.Is(err, boom) {
			t.Fatalf("completion %d = %v, want %v", i, err, boom)
		}
	}
	if err := c.close(); !errors.Is(err, boom) {
		t.Fatalf("close = %v", err)
	}
}

// TestCommitterBackpressure: appends block above maxQueued until a group
// completes.
func TestCommitterBackpressure(t *testing.T) {
	e := newTestEnv(t)
	size := int64(RecordHeaderSize + len(testEntry(1).Payload))
	c := newCommitter(e.env(), committerOptions{maxBytes: 1 << 20, maxQueued: 2 * size}, 1, Position{})
	a := newAcks()
	c.append(testEntry(1), a.comp(1))
	e.recvGroup()
	c.append(testEntry(2), a.comp(2))
	blocked := make(chan struct{})
	go func() {
		c.append(testEntry(3), a.comp(3))
		close(blocked)
	}()
	// The third append cannot proceed until group 1 completes.
	select {
	case <-blocked:
		t.Fatal("append did not block above maxQueued")
	case <-time.After(20 * time.Millisecond):
	}
	e.release <- nil
	<-blocked
	// Entries 2 and 3 go out in one or two more groups.
	e.release <- nil
	e.release <- nil
	a.waitN(t, 3)
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
}

// TestCommitterConcurrentOrder: many appenders, random sync results of
// success; completions arrive in sequence order and every record is
// written exactly once.
func TestCommitterConcurrentOrder(t *testing.T) {
	e := newTestEnv(t)
	e.release = make(chan error, 1<<16)
	for range cap(e.release) {
		e.release <- nil
	}
	e.wrote = make(chan []byte, 1<<16)
	c := newCommitter(e.env(), committerOptions{maxBytes: 4096, maxQueued: 1 << 20}, 1, Position{})
	var (
		mu   sync.Mutex
		last Position
		n    int
		bad  error
	)
	const writers, per = 8, 500
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range per {
				c.append(testEntry(int64(w*per+i)), CompletionFunc(func(p Position, err error) {
					mu.Lock()
					defer mu.Unlock()
					if err != nil || !last.Less(p) {
						bad = fmt.Errorf("completion %d: pos %v after %v, err %v", n, p, last, err)
					}
					last = p
					n++
				}))
			}
		})
	}
	wg.Wait()
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	if bad != nil || n != writers*per {
		t.Fatalf("%d completions, err %v", n, bad)
	}
	close(e.wrote)
	var seq uint64 = 1
	seen := map[int64]bool{}
	for g := range e.wrote {
		seqs, lags, recs := decodeAll(t, g)
		for i := range seqs {
			if seqs[i] != seq || lags[i] != uint32(i) {
				t.Fatalf("seq %d lag %d, want seq %d lag %d", seqs[i], lags[i], seq, i)
			}
			seq++
			if recs[i].Type == Entry {
				seen[recs[i].EntryID] = true
			}
		}
	}
	if len(seen) != writers*per {
		t.Fatalf("%d distinct entries written, want %d", len(seen), writers*per)
	}
}
