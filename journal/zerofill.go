package journal

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/internal/uring"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// zeroChunk is how much the filler writes (and then syncs) at a time: the
// longest a group write can wait for a fill it would overlap.
const zeroChunk = 256 << 10

// zeroBackoff is how long the filler stays idle after the writer overtook
// it: a journal writing faster than the filler keeps up with gains little
// from zeros (its groups are large) and would pay for them twice in disk
// bandwidth.
const zeroBackoff = time.Second

// zeroBusyGroup is the group size from which the writer pauses the filler
// for zeroBackoff, as when overtaken: a journal writing groups this large
// is busy, each fdatasync's metadata commit is shared by many records, and
// the zeros would only double the disk bandwidth and CPU its writes take.
// It is the size from which ModeAuto writes a group through io_uring.
const zeroBusyGroup = uring.HybridThreshold

// zeroFiller writes zeros, and syncs them, into the current journal file
// ahead of the writer (Options.ZeroFill; see doc.go, "Zero fill"). A group
// write into blocks that hold data already (the zeros) is a plain
// overwrite: its fdatasync flushes data only, without the extent
// conversion and size update that writing into preallocated, unwritten
// space commits through the file system's own journal each time.
//
// The filler and the writer never write the same bytes: the filler fills
// [zeroed, limit) one chunk at a time, never below the writer's end, and
// the writer waits (claim) while the chunk in flight overlaps its group.
type zeroFiller struct {
	ahead  int64 // keep up to this many bytes zeroed past the writer's end
	low    int64 // top up once the lead fell below this
	align  int64 // chunk offsets and lengths are multiples (DirectIO)
	logger *slog.Logger

	mu      sync.Mutex
	cond    sync.Cond
	f       vfs.File // current file, nil between files; setFile waits for the chunk in flight
	zeroed  int64    // [.., zeroed) holds zeros or records
	wend    int64    // writer's end (padded, with DirectIO)
	limit   int64    // preallocated end: never fill past it
	fill    [2]int64 // chunk in flight, [0] == [1] when none
	pauseTo time.Time
	failed  bool // a fill failed on this file: stop filling it
	closed  bool
	// refill is set while the filler tops the lead back up. It starts
	// once the lead fell below low, a chunk short of ahead, and writes
	// whole chunks until the lead is back at low or more: in steady state
	// one chunk (and one fdatasync) per chunk the writer moved on, never
	// a burst (doc.go, "Zero fill").
	refill bool

	filledGroups atomic.Uint64 // groups written over zeros only
	zeroBytes    atomic.Uint64 // zeros written

	done chan struct{}
	buf  []byte
}

func newZeroFiller(ahead int64, align int, logger *slog.Logger) *zeroFiller {
	if align <= 0 {
		align = 1
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	z := &zeroFiller{ahead: ahead, low: max(ahead-zeroChunk, ahead/2), align: int64(align), logger: logger, done: make(chan struct{})}
	z.cond.L = &z.mu
	z.buf = alignedBuf(zeroChunk, max(align, DefaultAlignment))
	go z.loop()
	return z
}

// setFile makes f, whose bytes up to end are written (the header) and
// which is preallocated to limit, the file to fill. f nil stops filling
// (between files, and before the writer truncates a file it leaves); it
// waits for the chunk in flight.
func (z *zeroFiller) setFile(f vfs.File, end, limit int64) {
	z.mu.Lock()
	defer z.mu.Unlock()
	for z.fill[0] != z.fill[1] {
		z.cond.Wait()
	}
	z.f, z.zeroed, z.wend, z.limit, z.failed, z.refill = f, end, end, limit, false, f != nil
	z.cond.Broadcast()
}

// setLimit raises the preallocated end.
func (z *zeroFiller) setLimit(limit int64) {
	z.mu.Lock()
	if limit > z.limit {
		z.limit = limit
		z.refill = true
		z.cond.Broadcast()
	}
	z.mu.Unlock()
}

// claim is called by the writer before it writes [off, end): it waits
// while the chunk in flight overlaps that range, then moves the writer's
// end (the filler never fills below it). It reports whether the range was
// all zero-filled (a fast overwrite).
func (z *zeroFiller) claim(off, end int64) bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	for z.fill[0] != z.fill[1] && z.fill[0] < end && off < z.fill[1] {
		z.cond.Wait()
	}
	filled := end <= z.zeroed
	if filled {
		z.filledGroups.Add(1)
	}
	if (!filled || end-off >= zeroBusyGroup) && z.f != nil && !z.failed {
		// Overtaken (the filler can not keep ahead), or a large group (a
		// busy journal gains little from zeros): let the writer run on
		// unzeroed space for a while.
		z.pauseTo = time.Now().Add(zeroBackoff)
	}
	if end > z.wend {
		z.wend = end
	}
	if !z.refill && z.zeroed-z.wend < z.low {
		z.refill = true
		z.cond.Broadcast()
	}
	return filled
}

// close stops the filler goroutine after the chunk in flight.
func (z *zeroFiller) close() {
	z.mu.Lock()
	z.closed = true
	z.cond.Broadcast()
	z.mu.Unlock()
	<-z.done
}

// nextLocked returns the chunk to fill now, if any. z.mu is held.
func (z *zeroFiller) nextLocked() (start, stop int64, ok bool) {
	if z.f == nil || z.failed || !z.refill {
		return 0, 0, false
	}
	start = max(z.zeroed, z.wend)
	start = (start + z.align - 1) / z.align * z.align
	stop = min(z.limit, start+zeroChunk)
	stop = stop / z.align * z.align
	if start-z.wend >= z.low || stop <= start {
		z.refill = false
		return 0, 0, false
	}
	return start, stop, true
}

func (z *zeroFiller) loop() {
	defer close(z.done)
	var timer *time.Timer
	z.mu.Lock()
	for !z.closed {
		start, stop, ok := z.nextLocked()
		if !ok {
			z.cond.Wait()
			continue
		}
		if wait := time.Until(z.pauseTo); wait > 0 {
			// Sleep off the backoff without holding the lock, then look
			// again (the writer may have moved on).
			if timer == nil {
				timer = time.AfterFunc(wait, func() {
					z.mu.Lock()
					z.cond.Broadcast()
					z.mu.Unlock()
				})
			} else {
				timer.Reset(wait)
			}
			z.cond.Wait()
			continue
		}
		f := z.f
		z.fill = [2]int64{start, stop}
		z.mu.Unlock()
		_, err := f.WriteAt(z.buf[:stop-start], start)
		if err == nil {
			err = f.Sync()
		}
		z.mu.Lock()
		z.fill = [2]int64{}
		if err != nil {
			// Not fatal: the writer just keeps writing into preallocated
			// space. The journal's own write or sync reports a failing
			// disk.
			z.failed = true
			z.logger.Warn("journal: zero fill stopped", "file", f.Name(), "offset", start, "error", err)
		} else {
			z.zeroBytes.Add(uint64(stop - start))
			z.zeroed = max(z.zeroed, stop)
		}
		z.cond.Broadcast()
	}
	z.mu.Unlock()
	if timer != nil {
		timer.Stop()
	}
}
