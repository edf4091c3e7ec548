package vfs

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// TrashSuffix marks a file a Remover took over: renamed from its own name
// (which no reader of a data directory parses any more), then truncated
// in steps and removed in the background. Sweep finds what a crash or a
// Close left behind.
const TrashSuffix = ".trash"

// DefaultRemoveStep is how much of a file a Remover frees per step.
const DefaultRemoveStep = 4 << 20

// Remover deletes large files at a bounded rate of freed bytes.
//
// On a filesystem mounted with online discard, freeing a file's blocks
// sends the device discards for all of them when the freeing transaction
// commits, and a flush queued behind them waits: deleting a 1 GiB file
// held a concurrent journal's fdatasyncs for up to 105–151 ms on the test
// machine, against at most 28–32 ms paced (docs/benchmarks/paced-delete.md). A Remover renames
// the file to its trash name at once, then in the background shortens it
// by Step bytes at a time, syncing each cut (so that its discards go out
// with it, not all at the file's last commit) and pausing so that at most
// Rate bytes are freed per second, and removes what is left.
//
// Remove, Sweep and Hurry are safe for concurrent use. With Rate 0 or
// less, or while hurried (a full disk needs the space now), Remove
// removes the file at once, Sweep does the same with leftovers and a
// removal under way removes the rest of its file at once.
type Remover struct {
	fs    FS
	rate  int64 // bytes per second; <= 0: not paced
	step  int64
	hurry atomic.Bool

	mu      sync.Mutex
	queue   []string
	running bool // a goroutine drains queue
	closed  bool
	idle    *sync.Cond // signalled when queue drains or on Close

	stop chan struct{}
	wake chan struct{} // Hurry(true) ends a pause
	done sync.WaitGroup
}

// NewRemover returns a Remover over fsys freeing at most rate bytes per
// second in steps of step bytes (0: DefaultRemoveStep).
func NewRemover(fsys FS, rate, step int64) *Remover {
	if step <= 0 {
		step = DefaultRemoveStep
	}
	r := &Remover{fs: fsys, rate: rate, step: step, stop: make(chan struct{}), wake: make(chan struct{}, 1)}
	r.idle = sync.NewCond(&r.mu)
	return r
}

// Hurry turns pacing off (on) until called again with false: the owner
// of a full disk wants its space back at once.
func (r *Remover) Hurry(on bool) {
	r.hurry.Store(on)
	if on {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

func (r *Remover) paced() bool { return r.rate > 0 && !r.hurry.Load() }

// Remove takes path over: unpaced, it is removed; paced, it is renamed to
// path+TrashSuffix (and its directory synced, so the rename survives a
// crash) and queued. When Remove returns, path no longer exists.
func (r *Remover) Remove(path string) error {
	if !r.paced() {
		return r.fs.Remove(path)
	}
	trash := path + TrashSuffix
	if err := r.fs.Rename(path, trash); err != nil {
		return err
	}
	if err := r.fs.SyncDir(filepath.Dir(path)); err != nil {
		return err
	}
	r.enqueue(trash)
	return nil
}

// Sweep queues the files of dir left in the trash (by a crash, or a Close
// before they were done).
func (r *Remover) Sweep(dir string) error {
	names, err := r.fs.List(dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		if !strings.HasSuffix(n, TrashSuffix) {
			continue
		}
		p := filepath.Join(dir, n)
		if !r.paced() {
			if err := r.fs.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		}
		r.enqueue(p)
	}
	return nil
}

func (r *Remover) enqueue(path string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return // Sweep at the next start removes it
	}
	r.queue = append(r.queue, path)
	if !r.running {
		r.running = true
		r.done.Add(1)
		go r.drain()
	}
}

// Wait blocks until nothing is queued or being removed, or the Remover
// is closed.
func (r *Remover) Wait() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.running && !r.closed {
		r.idle.Wait()
	}
}

// Close stops removing (a file part done stays in the trash for Sweep)
// and waits for the background goroutine.
func (r *Remover) Close() {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.stop)
		r.idle.Broadcast()
	}
	r.mu.Unlock()
	r.done.Wait()
}

func (r *Remover) drain() {
	defer r.done.Done()
	for {
		r.mu.Lock()
		if len(r.queue) == 0 || r.closed {
			r.running = false
			r.idle.Broadcast()
			r.mu.Unlock()
			return
		}
		p := r.queue[0]
		r.queue = r.queue[1:]
		r.mu.Unlock()
		// An error leaves the file in the trash: the next Sweep retries.
		_ = r.removePaced(p)
	}
}

// removePaced shortens path by step bytes at a time, syncing each cut and
// keeping to rate, then removes it. Only queued files get here, so rate
// is positive.
func (r *Remover) removePaced(path string) error {
	f, err := r.fs.OpenReadWrite(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	pause := time.Duration(float64(r.step) / float64(r.rate) * float64(time.Second))
	t := time.NewTimer(pause)
	t.Stop()
	// Hurried (a full disk), the rest goes at once with the Remove below.
	for size := st.Size(); size > r.step && r.paced(); {
		size -= r.step
		err := f.Truncate(size)
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			f.Close()
			return err
		}
		t.Reset(pause)
		select {
		case <-t.C:
		case <-r.wake:
		case <-r.stop:
			f.Close()
			return nil
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := r.fs.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return r.fs.SyncDir(filepath.Dir(path))
}
