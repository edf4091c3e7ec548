package embedded

import (
	"context"
	"sync"

	"github.com/magnetar-mq/magnetar/metadata"
)

// hub routes committed events to the watches of their path.
type hub struct {
	mu      sync.Mutex
	watches map[string]map[*watch]struct{} // path -> watches; protected by mu
}

func (h *hub) add(w *watch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.watches[w.path]
	if m == nil {
		m = make(map[*watch]struct{})
		h.watches[w.path] = m
	}
	m[w] = struct{}{}
}

func (h *hub) remove(w *watch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.watches[w.path]
	delete(m, w)
	if len(m) == 0 {
		delete(h.watches, w.path)
	}
}

// publish queues events, in order, on the watches of their paths. It never
// blocks on a watch's callback. Only the writer goroutine calls it, so every
// watch sees events in commit order.
func (h *hub) publish(events []metadata.Event) {
	if len(events) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.watches) == 0 {
		return
	}
	for _, ev := range events {
		for w := range h.watches[ev.Path] {
			w.push(ev)
		}
	}
}

// watch is one Watch call: an unbounded queue drained by its own goroutine.
type watch struct {
	path   string
	fn     func(metadata.Event)
	signal chan struct{} // capacity 1: "queue is non-empty"

	mu    sync.Mutex
	queue []metadata.Event // protected by mu
}

func (w *watch) push(ev metadata.Event) {
	w.mu.Lock()
	w.queue = append(w.queue, ev)
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// run calls fn for each queued event until ctx is done or closing is closed.
func (w *watch) run(ctx context.Context, closing <-chan struct{}) {
	var batch []metadata.Event
	for {
		select {
		case <-ctx.Done():
			return
		case <-closing:
			return
		case <-w.signal:
		}
		w.mu.Lock()
		batch, w.queue = w.queue, batch[:0]
		w.mu.Unlock()
		for _, ev := range batch {
			if ctx.Err() != nil {
				return
			}
			w.fn(ev)
		}
	}
}
