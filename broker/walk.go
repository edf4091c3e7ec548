package broker

import (
	"iter"
	"sync"
	"time"
)

// walkCount counts the walks over the loaded topics in flight (the
// background loops and the metrics scrape; see everyLoaded). A walk
// holds a list of the topics it started with, and so keeps an unloaded
// topic's memory reachable until it ends; the idle sweep's release waits
// for the walks in flight before it collects (idleunload.go). Walks never
// block on it, so one may run inside another.
type walkCount struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n is 0; replaced when n leaves 0
}

// begin counts a walk; end uncounts it.
func (w *walkCount) begin() (end func()) {
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

// wait returns true once no walk is in flight, false if there still was
// one after d or when stop closed first. Walks begun while it waits
// count too: they end as quickly as the others, and the sweep that waits
// does not need a moment when none runs more than it needs its release.
func (w *walkCount) wait(d time.Duration, stop <-chan struct{}) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		w.mu.Lock()
		n, idle := w.n, w.idle
		w.mu.Unlock()
		if n == 0 {
			return true
		}
		if testHookWalkWait != nil {
			testHookWalkWait(n)
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

// testHookWalkWait, when set by a test, runs each time walkCount.wait
// finds n walks in flight and is about to block.
var testHookWalkWait func(n int)

// everyLoaded yields the loaded topics (of namespace ns, or all for ""),
// counted as a walk in b.walks while it runs. It drops each topic from
// its list once yielded, so a topic unloaded during the walk is
// reachable from it only until the walk passes it.
func (b *Broker) everyLoaded(ns string) iter.Seq[*topic] {
	return func(yield func(*topic) bool) {
		defer b.walks.begin()()
		ts := b.loadedTopics(ns)
		for i, t := range ts {
			ts[i] = nil
			if !yield(t) {
				return
			}
		}
	}
}

// loadedTopics returns the loaded topics, optionally of one namespace.
// A loop over all of them uses everyLoaded instead.
func (b *Broker) loadedTopics(ns string) []*topic {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*topic
	for _, l := range b.mu.topics {
		select {
		case <-l.done:
		default:
			continue
		}
		if l.t == nil || (ns != "" && l.t.name.NamespaceName() != ns) {
			continue
		}
		out = append(out, l.t)
	}
	return out
}
