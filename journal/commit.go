package journal

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Completion receives the outcome of one Append. AppendDone is called
// exactly once, on the journal's committer goroutine, in append order. It
// must not block for long: it holds up every later completion (the next
// group's wait). It must not call Append: Append may block on
// MaxQueuedBytes, which only the committer goroutine can release. A bookie's per-request struct can implement it, which
// avoids allocating a closure per add.
type Completion interface {
	AppendDone(pos Position, err error)
}

// CompletionFunc adapts a function to Completion. Converting a func value
// to the interface does not allocate.
type CompletionFunc func(pos Position, err error)

// AppendDone calls f(pos, err).
func (f CompletionFunc) AppendDone(pos Position, err error) { f(pos, err) }

// commitEnv is what the group committer needs from the outside world. The
// journal implements it with a file and a uring.Writer; tests implement it
// with funcs that record what was written and control when syncs finish.
type commitEnv struct {
	// write starts writing g.chunks durably (write, then sync unless the
	// journal is not durable). It is never called while an earlier write is
	// in flight. It sets g.fileID and g.off to where the group goes (it may
	// roll to a new file first). An error means nothing is in flight.
	write func(g *group) error
	// wait blocks until the write started by the last successful write
	// call is durable and returns its error.
	wait func() error
	// blocking, if set, reports whether write of a group of n bytes does
	// the I/O before it returns (uring.Writer.Blocking); nil: never.
	blocking func(n int) bool
}

// chunkSize is the size of the buffers a group's bytes are encoded into.
// Records straddle chunks; the chunks are written with one vectored write,
// so a group never needs to be copied to grow.
const chunkSize = 256 << 10

// group is one batch of records written with one write and one sync.
type group struct {
	// chunks are the group's bytes in order, written with one vectored
	// write: views into the owned chunks and, for AppendRef records,
	// callers' payloads (capacity = length, so nothing appends into them).
	chunks [][]byte
	// owned are the pooled chunks (capacity chunkSize) the views point
	// into, in order; the last one is being filled.
	owned [][]byte
	// lastOwned: chunks' last element is a view ending at the end of the
	// last owned chunk's data, so encoding more extends it.
	lastOwned bool
	size      int       // total encoded bytes
	entries   [][]entry // per record, in blocks of entryBlock
	n         int       // records in the group
	firstSeq  uint64
	start     time.Time // when the first record joined
	written   int64     // Nanotime when it was handed to commitEnv.write (stats)
	submitted int64     // Nanotime when commitEnv.write returned
	// prevSynced is when the wait for the group written before this one
	// returned (0 for the first).
	prevSynced int64
	waitFrom   int64  // Nanotime when the loop began waiting for it
	synced     int64  // Nanotime when the wait for it returned
	err        error  // set when the group is failed without being written
	fileID     uint64 // where the group was written (set by commitEnv.write)
	off        int64
}

// entryBlock is how many entries one block of group.entries holds; blocks
// are pooled so that a large group never copies its entries to grow.
const entryBlock = 1024

// entry is one record's completion and end offset in its group.
type entry struct {
	comp Completion
	end  uint32
}

// addEntryLocked records comp for the record just encoded into g. A
// record without a completion only counts.
func (c *committer) addEntryLocked(g *group, comp Completion) {
	if comp == nil {
		g.n++
		return
	}
	k := len(g.entries) - 1
	if k < 0 || len(g.entries[k]) == cap(g.entries[k]) {
		var blk []entry
		if n := len(c.mu.blocks); n > 0 {
			blk = c.mu.blocks[n-1]
			c.mu.blocks = c.mu.blocks[:n-1]
		} else {
			blk = make([]entry, 0, entryBlock)
		}
		g.entries = append(g.entries, blk)
		k++
	}
	g.entries[k] = append(g.entries[k], entry{comp: comp, end: uint32(g.size)})
	g.n++
}

// bytes returns the group's bytes as one slice (tests and tools).
func (g *group) bytes() []byte {
	b := make([]byte, 0, g.size)
	for _, c := range g.chunks {
		b = append(b, c...)
	}
	return b
}

// syncWaiter is a Sync waiting for the records up to seq to be durable.
// Its position is the end of record seq: end bytes into seq's group, or
// the end of that group when end is -1 (seq was the group's last record).
// Not the group's end in general: records appended after the Sync may
// share seq's group, and a checkpoint at the Sync must not cover them.
type syncWaiter struct {
	seq  uint64
	end  int64
	comp Completion
}

// committerOptions are the batching knobs (see Options).
type committerOptions struct {
	maxWait    time.Duration
	maxBytes   int
	maxEntries int
	maxQueued  int64
	// mark, when set, makes the committer end a clean Close with a lone mark
	// record, so that replay can tell corruption in the last group from a
	// torn tail.
	mark bool
}

// committer is the group-commit core: appenders encode records into the
// current group under mu; one goroutine (loop) hands ready groups to
// env.write, keeping at most one in flight, waits for each written group
// and runs its completions in order. See doc.go, "Group commit".
type committer struct {
	env  commitEnv
	opts committerOptions

	mu struct {
		sync.Mutex
		space    sync.Cond // signalled when queued drops or the state changes
		cur      *group
		free     []*group
		chunks   [][]byte  // pool of empty chunks
		blocks   [][]entry // pool of empty entry blocks
		nextSeq  uint64
		queued   int64 // encoded bytes appended and not yet completed
		err      error // sticky failure, as passed to completions
		closed   bool  // Close began; appends are refused
		durable  Position
		lastSeq  uint64       // last sequence number made durable
		waiters  int          // appenders blocked on space
		syncs    []syncWaiter // Sync calls waiting for lastSeq to reach their seq, ascending
		curKickd bool         // cur crossed a size threshold and the loop was kicked
	}

	groups          atomic.Int64 // groups written, for benchmarks
	stats           commitStats
	maxPooledChunks int
	maxPooledBlocks int

	// completing is the group whose completions run (loop goroutine
	// only; GroupTimes reads it from a Completion).
	completing *group
	// lastSynced is when the wait for the previous group returned (loop
	// goroutine only).
	lastSynced int64

	kickC  chan struct{} // appenders -> loop, capacity 1
	closeC chan struct{} // Close -> loop
	syncs  []syncWaiter  // loop's scratch for the Syncs a group satisfies
	wg     sync.WaitGroup
}

// newCommitter starts the committer's goroutine (loop). nextSeq is the
// sequence number of the next record; durable is the position of the end
// of the journal as opened.
func newCommitter(env commitEnv, opts committerOptions, nextSeq uint64, durable Position) *committer {
	c := &committer{
		env:    env,
		opts:   opts,
		kickC:  make(chan struct{}, 1),
		closeC: make(chan struct{}),
		stats:  newCommitStats(),
	}
	c.maxPooledChunks = int(opts.maxQueued/chunkSize) + 8
	c.maxPooledBlocks = int(opts.maxQueued/RecordHeaderSize/entryBlock) + 8
	c.mu.space.L = &c.mu.Mutex
	c.mu.cur = &group{}
	c.mu.nextSeq = nextSeq
	c.mu.lastSeq = nextSeq - 1
	c.mu.durable = durable
	c.wg.Add(1)
	go c.loop()
	return c
}

func (c *committer) kick() {
	select {
	case c.kickC <- struct{}{}:
	default:
	}
}

// append encodes rec into the current group. comp is called once the
// record is durable or failed. rec must already be validated.
func (c *committer) append(rec *Record, comp Completion) {
	c.appendCRC(rec, payloadCRC(rec.Payload), false, comp)
}

// appendCRC is append with the payload checksum (payloadCRC) computed by
// the caller. With ref the payload is not copied: the group's write reads
// it from rec.Payload (see AppendRef).
func (c *committer) appendCRC(rec *Record, pcrc uint32, ref bool, comp Completion) {
	size := int64(RecordHeaderSize + len(rec.Payload))

	c.mu.Lock()
	for c.mu.queued > 0 && c.mu.queued+size > c.opts.maxQueued && c.mu.err == nil && !c.mu.closed {
		c.mu.waiters++
		c.mu.space.Wait()
		c.mu.waiters--
	}
	if c.mu.closed {
		c.mu.Unlock()
		if comp != nil {
			comp.AppendDone(Position{}, ErrClosed)
		}
		return
	}
	kick := c.appendLocked(rec, pcrc, ref, comp, size)
	c.mu.Unlock()
	if kick {
		c.kick()
	}
}

// appendBatchCRC is appendCRC (without ref) for recs[i], pcrcs[i],
// comps[i] in order under one hold of the lock, for as long as the queue
// has room: it returns how many it appended, 0 when the first must wait
// for room or the journal is closed (the caller appends that one with
// appendCRC, which waits or refuses).
func (c *committer) appendBatchCRC(recs []Record, pcrcs []uint32, comps []Completion) int {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return 0
	}
	kick := false
	n := 0
	for ; n < len(recs); n++ {
		size := int64(RecordHeaderSize + len(recs[n].Payload))
		if c.mu.queued > 0 && c.mu.queued+size > c.opts.maxQueued && c.mu.err == nil {
			break
		}
		if c.appendLocked(&recs[n], pcrcs[n], false, comps[n], size) {
			kick = true
		}
	}
	c.mu.Unlock()
	if kick {
		c.kick()
	}
	return n
}

// appendLocked adds rec (size bytes encoded) to the current group and
// reports whether the committer must be kicked. c.mu is held, the
// journal is open and the queue has room.
func (c *committer) appendLocked(rec *Record, pcrc uint32, ref bool, comp Completion, size int64) (kick bool) {
	g := c.mu.cur
	kick = g.n == 0
	if c.mu.err != nil {
		// Failed: queue the completion only, so errors are delivered in
		// order after the failed group's.
		c.addEntryLocked(g, comp)
		return kick
	}
	seq := c.mu.nextSeq
	c.mu.nextSeq++
	if kick {
		g.firstSeq = seq
		g.start = time.Now()
		c.mu.curKickd = false
	}
	c.encodeLocked(g, seq, uint32(seq-g.firstSeq), rec, pcrc, ref)
	c.addEntryLocked(g, comp)
	c.mu.queued += size
	if rec.Appended != nil {
		*rec.Appended = Nanotime()
	}
	if !kick && !c.mu.curKickd && c.fullLocked(g) {
		c.mu.curKickd = true
		kick = true
	}
	return kick
}

// sync calls comp once every record appended before it is durable, with
// the position just past the last of them (as that record's completion
// reports it), or with the sticky error. It writes nothing: it waits for the group that holds
// the last record appended so far. When nothing is pending it completes
// at once, on the caller's goroutine.
func (c *committer) sync(comp Completion) {
	c.mu.Lock()
	var (
		err error
		pos Position
	)
	switch {
	case c.mu.err != nil:
		err = c.mu.err
	case c.mu.closed:
		err = ErrClosed
	case c.mu.nextSeq-1 <= c.mu.lastSeq:
		pos = c.mu.durable
	default:
		w := syncWaiter{seq: c.mu.nextSeq - 1, end: -1, comp: comp}
		if g := c.mu.cur; g.n > 0 {
			// The last record is in the open group (so is every record of
			// it: appends after a failure cannot reach here).
			w.end = int64(g.size)
		}
		c.mu.syncs = append(c.mu.syncs, w)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	comp.AppendDone(pos, err)
}

// encodeLocked appends rec's encoding to g: straight into the last owned
// chunk when it fits, else piecewise across new chunks; with ref the
// header only, the payload being written from rec.Payload itself.
func (c *committer) encodeLocked(g *group, seq uint64, lag uint32, rec *Record, pcrc uint32, ref bool) {
	n := RecordHeaderSize + len(rec.Payload)
	g.size += n
	if !ref {
		if k := len(g.owned) - 1; k >= 0 && cap(g.owned[k])-len(g.owned[k]) >= n {
			start := len(g.owned[k])
			g.owned[k] = appendRecord(g.owned[k], seq, lag, rec, pcrc)
			c.viewLocked(g, start)
			return
		}
	}
	// The header goes into the last owned chunk when it fits there (a
	// header on the stack would escape to the heap through the CRC).
	if k := len(g.owned) - 1; k >= 0 && cap(g.owned[k])-len(g.owned[k]) >= RecordHeaderSize {
		start := len(g.owned[k])
		g.owned[k] = g.owned[k][:start+RecordHeaderSize]
		putRecordHeader(g.owned[k][start:], seq, lag, rec, pcrc)
		c.viewLocked(g, start)
	} else {
		var h [RecordHeaderSize]byte
		putRecordHeader(h[:], seq, lag, rec, pcrc)
		c.copyLocked(g, h[:])
	}
	if ref {
		g.chunks = append(g.chunks, rec.Payload[:len(rec.Payload):len(rec.Payload)])
		g.lastOwned = false
		return
	}
	c.copyLocked(g, rec.Payload)
}

// viewLocked makes g.chunks cover the last owned chunk's bytes from start
// on: by extending the last view, or with a new one after a caller's
// payload or at a new chunk.
func (c *committer) viewLocked(g *group, start int) {
	ch := g.owned[len(g.owned)-1]
	if g.lastOwned {
		j := len(g.chunks) - 1
		g.chunks[j] = g.chunks[j][:len(g.chunks[j])+len(ch)-start]
		return
	}
	g.chunks = append(g.chunks, ch[start:])
	g.lastOwned = true
}

// copyLocked appends p to g's owned chunks, taking new chunks as needed.
func (c *committer) copyLocked(g *group, p []byte) {
	for len(p) > 0 {
		k := len(g.owned) - 1
		if k < 0 || len(g.owned[k]) == cap(g.owned[k]) {
			g.owned = append(g.owned, c.chunkLocked())
			g.lastOwned = false
			k++
		}
		ch := g.owned[k]
		start := len(ch)
		m := min(len(p), cap(ch)-start)
		g.owned[k] = append(ch, p[:m]...)
		c.viewLocked(g, start)
		p = p[m:]
	}
}

func (c *committer) chunkLocked() []byte {
	if n := len(c.mu.chunks); n > 0 {
		ch := c.mu.chunks[n-1]
		c.mu.chunks = c.mu.chunks[:n-1]
		return ch
	}
	return make([]byte, 0, chunkSize)
}

// fullLocked reports whether g reached a size threshold.
func (c *committer) fullLocked(g *group) bool {
	return g.size >= c.opts.maxBytes || (c.opts.maxEntries > 0 && g.n >= c.opts.maxEntries)
}

// appendMarkLocked adds the internal mark record to the (empty) current
// group.
func (c *committer) appendMarkLocked() {
	g := c.mu.cur
	seq := c.mu.nextSeq
	c.mu.nextSeq++
	g.firstSeq = seq
	g.start = time.Now()
	rec := Record{Type: typeMark}
	c.encodeLocked(g, seq, 0, &rec, payloadCRC(nil), false)
	c.addEntryLocked(g, nil)
	c.mu.queued += RecordHeaderSize
}

// loop is the committer's goroutine. It hands ready groups to env.write,
// keeping at most one in flight; waits for the one in flight; and then,
// before running that group's completions, writes the next group if it is
// ready, so the disk syncs the next group while this one's completions
// run. Completions therefore run in group order on this goroutine. Doing
// both on one goroutine saves two goroutine hand-offs (thread wake-ups)
// per group over a separate writer and completer. It exits after Close
// once everything queued was written (or failed) and completed.
func (c *committer) loop() {
	defer c.wg.Done()
	st := loopState{closeC: c.closeC, timer: time.NewTimer(time.Hour)}
	st.timer.Stop()
	defer st.timer.Stop()
	for {
		if g := st.inflight; g != nil {
			st.inflight = nil
			g.waitFrom = Nanotime()
			werr := c.env.wait()
			now := Nanotime()
			g.synced, c.lastSynced = now, now
			if werr != nil {
				g.err = c.fail(werr)
				st.failed = g.err
			} else {
				c.stats.syncedAt.Store(now)
				c.stats.synced(g, time.Duration(now-g.written))
				c.stats.syncWait.Observe(now - g.waitFrom)
			}
			if c.nextBlocks() {
				// The next write would hold this goroutine for its whole
				// write and sync: complete this group first, so that its
				// adds do not wait for the next group's sync as well.
				c.complete(g)
				c.completeFailed(&st)
				c.startReady(&st)
				c.completeFailed(&st)
				continue
			}
			c.startReady(&st)
			c.complete(g)
			c.completeFailed(&st)
			continue
		}
		c.startReady(&st)
		c.completeFailed(&st)
		if st.inflight != nil {
			continue
		}
		if st.closing {
			c.mu.Lock()
			empty := c.mu.cur.n == 0
			c.mu.Unlock()
			if empty && (st.marked || st.failed != nil || !st.wrote || !c.opts.mark) {
				return
			}
		}
		select {
		case <-c.kickC:
		case <-st.timer.C:
			st.armed = false
		case <-st.closeC:
			st.closing, st.closeC = true, nil
		}
	}
}

// nextBlocks reports whether writing the current group now would do its
// I/O on this goroutine (env.blocking).
func (c *committer) nextBlocks() bool {
	if c.env.blocking == nil {
		return false
	}
	c.mu.Lock()
	n := c.mu.cur.size
	c.mu.Unlock()
	return n > 0 && c.env.blocking(n)
}

// loopState is the committer goroutine's own state.
type loopState struct {
	inflight *group   // written, not yet waited for
	unwrit   []*group // failed without being written; completed after the group that finished before them
	failed   error    // the sticky error as the loop knows it
	closing  bool
	marked   bool // the close mark was queued
	wrote    bool // at least one group was written since open
	closeC   chan struct{}
	timer    *time.Timer
	armed    bool
}

// startReady writes the current group if it is ready and nothing is in
// flight. Groups failed unwritten (after a sticky error) are queued in
// st.unwrit; the caller completes them after any group that finished
// before them.
func (c *committer) startReady(st *loopState) {
	for st.inflight == nil {
		c.mu.Lock()
		g := c.mu.cur
		if g.n == 0 {
			if st.closing && !st.marked && st.failed == nil && st.wrote && c.opts.mark {
				st.marked = true
				c.appendMarkLocked()
				c.mu.Unlock()
				continue
			}
			c.mu.Unlock()
			return
		}
		ready := st.failed != nil || st.closing || c.fullLocked(g)
		if !ready {
			wait := c.opts.maxWait - time.Since(g.start)
			if wait > 0 {
				c.mu.Unlock()
				if !st.armed {
					st.timer.Reset(wait)
					st.armed = true
				}
				return
			}
		}
		c.mu.cur = c.newGroupLocked()
		c.mu.Unlock()
		if st.failed != nil {
			g.err = st.failed
			st.unwrit = append(st.unwrit, g)
			continue
		}
		g.written = Nanotime()
		g.prevSynced = c.lastSynced
		if err := c.env.write(g); err != nil {
			st.failed = c.fail(err)
			g.err = st.failed
			st.unwrit = append(st.unwrit, g)
			continue
		}
		g.submitted = Nanotime()
		st.wrote = true
		st.inflight = g
		c.groups.Add(1)
	}
}

// completeFailed completes the groups startReady failed unwritten.
func (c *committer) completeFailed(st *loopState) {
	for i, g := range st.unwrit {
		c.complete(g)
		st.unwrit[i] = nil
	}
	st.unwrit = st.unwrit[:0]
}

// fail records the sticky error and wakes blocked appenders.
func (c *committer) fail(ioErr error) error {
	err := fmt.Errorf("%w: %w", ErrFailed, ioErr)
	c.mu.Lock()
	if c.mu.err == nil {
		c.mu.err = err
	} else {
		err = c.mu.err
	}
	c.mu.space.Broadcast()
	c.mu.Unlock()
	return err
}

func (c *committer) newGroupLocked() *group {
	if n := len(c.mu.free); n > 0 {
		g := c.mu.free[n-1]
		c.mu.free = c.mu.free[:n-1]
		return g
	}
	return &group{}
}

// complete finishes g, whose write was waited for (g.err is its outcome)
// or which failed unwritten: it publishes the new durable end, then runs
// the completions and the Syncs the group satisfied, and recycles g. The
// durable end is published first, so every position a completion reports
// is within End() and Checkpoint accepts it.
func (c *committer) complete(g *group) {
	err := g.err
	var durable Position
	c.mu.Lock()
	if err == nil {
		c.mu.durable = Position{FileID: g.fileID, Offset: g.off + int64(g.size)}
		c.mu.lastSeq = g.firstSeq + uint64(g.n) - 1
		durable = c.mu.durable
	}
	syncs := c.syncs[:0]
	if len(c.mu.syncs) > 0 {
		// After a failure no pending Sync can succeed.
		k := len(c.mu.syncs)
		if err == nil {
			k = 0
			for k < len(c.mu.syncs) && c.mu.syncs[k].seq <= c.mu.lastSeq {
				k++
			}
		}
		syncs = append(syncs, c.mu.syncs[:k]...)
		n := copy(c.mu.syncs, c.mu.syncs[k:])
		clear(c.mu.syncs[n:])
		c.mu.syncs = c.mu.syncs[:n]
	}
	c.mu.Unlock()
	c.completing = g
	for _, blk := range g.entries {
		for _, e := range blk {
			var pos Position // zero for a failed group
			if err == nil {
				pos = Position{FileID: g.fileID, Offset: g.off + int64(e.end)}
			}
			e.comp.AppendDone(pos, err)
		}
	}
	for i, w := range syncs {
		pos := durable
		if err == nil && w.end >= 0 {
			pos.Offset = g.off + w.end
		}
		w.comp.AppendDone(pos, err)
		syncs[i] = syncWaiter{}
	}
	c.syncs = syncs[:0]
	c.completing = nil
	if g.synced != 0 && err == nil {
		c.stats.completeLatency.Observe(Nanotime() - g.synced)
	}
	c.mu.Lock()
	c.mu.queued -= int64(g.size)
	if c.mu.waiters > 0 {
		c.mu.space.Broadcast()
	}
	c.resetLocked(g)
	if len(c.mu.free) < 4 {
		c.mu.free = append(c.mu.free, g)
	}
	c.mu.Unlock()
}

// close refuses new appends, lets the loop flush what is queued (ending
// with a mark record when configured and healthy), and waits for both
// goroutines. It returns the sticky error, if any.
func (c *committer) close() error {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		c.wg.Wait()
		return nil
	}
	c.mu.closed = true
	c.mu.space.Broadcast()
	c.mu.Unlock()
	close(c.closeC)
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.err
}

// state returns the durable end position and the last durable sequence
// number.
func (c *committer) state() (Position, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.durable, c.mu.lastSeq
}

// failure returns the sticky error, if any.
func (c *committer) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.err
}

// resetLocked returns g's chunks to c's pool and empties g.
func (c *committer) resetLocked(g *group) {
	for _, ch := range g.owned {
		if len(c.mu.chunks) < c.maxPooledChunks {
			c.mu.chunks = append(c.mu.chunks, ch[:0])
		}
	}
	clear(g.owned)
	g.owned = g.owned[:0]
	clear(g.chunks) // drops the references to callers' payloads too
	g.chunks = g.chunks[:0]
	g.lastOwned = false
	g.size = 0
	for _, blk := range g.entries {
		clear(blk)
		if len(c.mu.blocks) < c.maxPooledBlocks {
			c.mu.blocks = append(c.mu.blocks, blk[:0])
		}
	}
	clear(g.entries)
	g.entries = g.entries[:0]
	g.n = 0
	g.err = nil
	g.written, g.submitted, g.prevSynced, g.waitFrom, g.synced = 0, 0, 0, 0, 0
}
