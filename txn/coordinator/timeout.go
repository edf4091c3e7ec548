package coordinator

import (
	"container/heap"
	"context"
	"time"

	"github.com/magnetar-mq/magnetar/txn"
)

// deadline is one open transaction's timeout.
type deadline struct {
	atMs int64
	seq  uint64
}

// timeoutQueue is a min-heap of deadlines, guarded by Coordinator.mu.
// Entries of transactions that ended are dropped when they reach the top.
type timeoutQueue struct{ h deadlineHeap }

type deadlineHeap []deadline

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].atMs < h[j].atMs }
func (h deadlineHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *deadlineHeap) Push(x any)        { *h = append(*h, x.(deadline)) }
func (h *deadlineHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (q *timeoutQueue) push(atMs int64, seq uint64) { heap.Push(&q.h, deadline{atMs, seq}) }

// poke wakes the timer loop (a new, possibly earlier, deadline).
func (c *Coordinator) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// timerLoop is the coordinator's one timer: it aborts transactions whose
// deadline passed and trims the log behind the oldest live transaction.
func (c *Coordinator) timerLoop() {
	defer c.wg.Done()
	trim := time.NewTicker(c.cfg.TrimInterval)
	defer trim.Stop()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		next := c.expire()
		t.Reset(next)
		select {
		case <-c.closed:
			return
		case <-c.wake:
		case <-t.C:
		case <-trim.C:
			c.trim()
		}
	}
}

// expire aborts the open transactions whose deadline passed and returns
// how long until the next deadline.
func (c *Coordinator) expire() time.Duration {
	now := c.nowMs()
	var expired []*meta
	c.mu.Lock()
	next := time.Hour
	for c.timeouts.h.Len() > 0 {
		top := c.timeouts.h[0]
		if top.atMs > now {
			next = min(next, time.Duration(top.atMs-now)*time.Millisecond)
			break
		}
		heap.Pop(&c.timeouts.h)
		if m := c.mu.txns[top.seq]; m != nil && m.status == StatusOpen && m.deadlineMs == top.atMs {
			expired = append(expired, m)
		}
	}
	c.mu.Unlock()
	for _, m := range expired {
		c.appendMu.Lock()
		c.mu.Lock()
		if m.status != StatusOpen || c.mu.closed {
			c.mu.Unlock()
			c.appendMu.Unlock()
			continue
		}
		m.status = StatusAborting
		c.mu.Unlock()
		c.stats.timedOut.Add(1)
		c.log.Info("transaction timed out: aborting", "txn", txn.ID{Most: c.cfg.ID, Least: m.seq}.String())
		ctx, cancel := context.WithTimeout(c.life, 30*time.Second)
		if err := c.logEnding(ctx, m, txn.Abort); err != nil {
			c.log.Warn("transaction timeout: log ABORTING", "err", err)
			c.mu.Lock()
			c.timeouts.push(now+1000, m.seq) // try again in a second
			m.deadlineMs = now + 1000
			c.mu.Unlock()
			next = min(next, time.Second)
		}
		cancel()
	}
	return max(next, time.Millisecond)
}

// trim lets the log drop the records before the first record of the
// oldest live transaction; with none live, everything but the last record
// (which carries the highest sequence handed out).
func (c *Coordinator) trim() {
	c.mu.Lock()
	if !c.mu.anyPos {
		c.mu.Unlock()
		return
	}
	w := c.mu.lastPos
	for _, m := range c.mu.txns {
		if m.logged && m.first.Less(w) {
			w = m.first
		}
	}
	if !c.mu.trimmed.Less(w) {
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(c.life, 30*time.Second)
	defer cancel()
	if err := c.cfg.Log.TrimBefore(ctx, w); err != nil {
		c.log.Warn("transaction log trim", "err", err)
		return
	}
	c.mu.Lock()
	c.mu.trimmed = w
	c.mu.Unlock()
}
