package inflight

import (
	"sync"
	"sync/atomic"
	"time"
)

// Counter counts operations in flight. Operations never block on it,
// so one may begin inside another; Wait waits for the count to reach
// zero. The zero value is ready; safe for concurrent use.
type Counter struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n is 0; replaced when n leaves 0
	// onWait, when set (tests), runs each time Wait finds n operations
	// in flight and is about to block.
	onWait atomic.Pointer[func(n int)]
}

// Begin counts an operation; the returned end uncounts it (call it
// once).
func (w *Counter) Begin() (end func()) {
	w.mu.Lock()
	if w.n == 0 {
		w.idle = make(chan struct{})
	}
	w.n++
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		w.n--
		if w.n == 0 {
			close(w.idle)
		}
		w.mu.Unlock()
	}
}

// Wait returns true once no operation is in flight, false if there still
// was one after d or when stop closed first. Operations begun while it
// waits count too.
func (w *Counter) Wait(d time.Duration, stop <-chan struct{}) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		w.mu.Lock()
		n, idle := w.n, w.idle
		w.mu.Unlock()
		if n == 0 {
			return true
		}
		if f := w.onWait.Load(); f != nil {
			(*f)(n)
		}
		select {
		case <-idle:
		case <-timer.C:
			return false
		case <-stop:
			return false
		}
	}
}

// SetWaitHook makes Wait call f (nil: nothing) each time it finds n
// operations in flight and is about to block: a test's signal that a
// wait began.
func (w *Counter) SetWaitHook(f func(n int)) {
	if f == nil {
		w.onWait.Store(nil)
		return
	}
	w.onWait.Store(&f)
}
