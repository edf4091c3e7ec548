package broker

import (
	"sync"
	"sync/atomic"
)

// Held sends. A topic's Quota (limits.go) may hold a SEND instead of
// publishing it (a producer_request_hold backlog quota): the SEND waits,
// unanswered, in the topic's FIFO, and every SEND of the topic after it
// queues behind it, so a producer's sends keep their order. Release
// (Topic.ReleaseHeld, called by the quota's feature when the backlog may
// have shrunk) asks the Quota again and publishes them all, in order,
// once it no longer holds. A held SEND whose producer closes, is
// detached or whose connection closes is dropped unanswered (a
// SEND_ERROR would close the client's whole connection; the client
// re-sends it after reconnecting): it is never published.
//
// Lock order: topic.held > topic.mu; the subscription loop never takes
// topic.held, so a Quota may call a subscription under it.

// heldSend is one SEND held by a quota.
type heldSend struct {
	p            *producer
	seq, highest uint64
	numMsgs      int
	e            *Entry
}

// heldSends is a topic's FIFO of held SENDs; n mirrors len(sends) for
// the SEND path's lock-free check, total is the broker's count over all
// topics (Broker.heldCount).
type heldSends struct {
	sync.Mutex
	sends []heldSend
	n     atomic.Int64
	total *atomic.Int64
}

// appendLocked holds h (q locked).
func (q *heldSends) appendLocked(h heldSend) {
	q.sends = append(q.sends, h)
	q.n.Add(1)
	q.total.Add(1)
}

// takeLocked removes and returns every held send, in order (q locked).
func (q *heldSends) takeLocked() []heldSend {
	held := q.sends
	q.sends = nil
	q.n.Store(0)
	q.total.Add(-int64(len(held)))
	return held
}

// filterLocked drops (answers with sendDropped) the held sends that
// match drop (q locked).
func (q *heldSends) filterLocked(drop func(*heldSend) bool) {
	kept := q.sends[:0]
	for i := range q.sends {
		h := &q.sends[i]
		if !drop(h) {
			kept = append(kept, *h)
			continue
		}
		h.p.sink.sendDropped(h.p.id, h.seq)
		q.total.Add(-1)
	}
	clear(q.sends[len(kept):])
	q.sends = kept
	q.n.Store(int64(len(kept)))
}

// drop drops the held sends that match drop; it is called after their
// producers left the topic, without topic.mu held.
func (q *heldSends) drop(drop func(*heldSend) bool) {
	if q.n.Load() == 0 {
		return
	}
	q.Lock()
	q.filterLocked(drop)
	q.Unlock()
}

// admit is the SEND path after the SendInterceptors: it publishes the
// SEND, or holds it behind the topic's held SENDs or by its Quota, or
// refuses it by its Quota.
func (t *topic) admit(p *producer, seq, highest uint64, numMsgs int, e *Entry) {
	q := t.limits.quota()
	if q == nil && t.held.n.Load() == 0 {
		t.publish(p, seq, highest, numMsgs, e)
		return
	}
	t.held.Lock()
	defer t.held.Unlock()
	if len(t.held.sends) == 0 {
		var hold bool
		if q != nil {
			var refuse *SendError
			if hold, refuse = q.AdmitSend(); refuse != nil {
				// As Pulsar: disconnect the producer; its reconnect is
				// refused (AdmitProducer), which makes the client fail
				// its pending sends. The SEND is answered after the
				// CLOSE_PRODUCER (the client ignores that answer).
				t.removeProducer(p)
				p.sink.closeProducer(p)
				p.sink.sendSendError(p.id, seq, int32(refuse.Code), refuse.Msg)
				return
			}
		}
		if !hold {
			t.publish(p, seq, highest, numMsgs, e)
			return
		}
	}
	// Held: behind the held sends, or by the Quota. A producer that left
	// t already (its detach drop may have run before this send got here)
	// has its send dropped instead.
	if !t.hasProducer(p) {
		p.sink.sendDropped(p.id, seq)
		return
	}
	t.held.appendLocked(heldSend{p: p, seq: seq, highest: highest, numMsgs: numMsgs, e: e})
}

// ReleaseHeld publishes the topic's held SENDs, in order, unless its
// Quota still holds them. Sends of producers that went away while held
// are dropped unanswered. No lock held; it may publish many SENDs.
func (v Topic) ReleaseHeld() {
	t := v.t
	if t.held.n.Load() == 0 {
		return
	}
	t.held.Lock()
	defer t.held.Unlock()
	// The detach paths drop them already; this catches a producer
	// fenced meanwhile.
	t.held.filterLocked(func(h *heldSend) bool { return !t.hasProducer(h.p) })
	if len(t.held.sends) == 0 {
		return
	}
	if q := t.limits.quota(); q != nil {
		if hold, _ := q.AdmitSend(); hold {
			return
		}
	}
	for _, h := range t.held.takeLocked() {
		t.publish(h.p, h.seq, h.highest, h.numMsgs, h.e)
	}
}

// HeldSends returns the number of SENDs the topic holds.
func (v Topic) HeldSends() int { return int(v.t.held.n.Load()) }

// dropHeld drops the held sends that match drop, on every loaded topic
// (a closing connection drops the sends of its producers this way; a
// topic no longer loaded dropped its held sends when it closed).
func (b *Broker) dropHeld(drop func(*heldSend) bool) {
	if b.heldCount.Load() == 0 {
		return
	}
	for t := range b.everyLoaded("") {
		t.held.drop(drop)
	}
}

// heldBy returns a drop predicate for the held sends of p (nil: of every
// producer).
func heldBy(p *producer) func(*heldSend) bool {
	return func(h *heldSend) bool { return p == nil || h.p == p }
}
