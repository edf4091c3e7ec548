package dispatch

import (
	"time"

	"github.com/magnetar-mq/magnetar/broker/storage"
)

// A subscription without timers or queued work holds no goroutine,
// whether or not consumers are connected: its loop exits when idle and
// Do (a flow, an ack, a consumer) or Wake (new entries, with consumers)
// starts it again; Call runs its function inline while the loop is
// stopped. Ownership of the loop state passes through run's mutex
// (happens-before for the state). A live topic whose consumer waits for
// messages so costs no goroutine stack (issue 35: 8 KiB a live topic).
//
// A loop that blocks (one with timers) is woken through one channel,
// run.kick (cap 1), made by the first such loop: the work itself is in
// run.ops (closures from Do and Call) and notified (Wake). The loop
// takes the channel and looks at the work under run's mutex, and a
// signal reads the channel under it after its work was put there, so
// either the loop sees the work or the signal sees the channel (and a
// kick it buffers only costs a spare turn).

// maxOps is how many closures may wait for the loop; Do blocks beyond
// (a connection whose acks and flows outrun the loop waits for it).
const maxOps = 16

// subOp is a closure queued for the loop. done (Call's) is closed once f
// ran, or by Close when the loop will never run it.
type subOp struct {
	f    func()
	done chan struct{}
}

func (op subOp) run() {
	op.f()
	if op.done != nil {
		close(op.done)
	}
}

// idleLocked reports whether the loop has nothing to wait for (loop
// state; the caller owns it).
func (s *Subscription) idleLocked() bool {
	return s.delayTimer == nil && s.notifyTimer == nil && !s.throttled && len(s.requeues) == 0
}

// consumersChanged updates hasConsumers after consumers changed (loop
// state; the caller owns it).
func (s *Subscription) consumersChanged() {
	s.hasConsumers.Store(len(s.consumers) > 0)
}

// dropReadCtx releases the cursor's shared read deadline (and its
// timer) while the subscription sleeps.
func (s *Subscription) dropReadCtx() {
	if a, ok := s.cur.(*storage.LedgerCursor); ok {
		a.DropReadCtx()
	}
}

// signal wakes the loop if it is blocked. Never blocks.
func (s *Subscription) signal() {
	s.run.Lock()
	kick := s.run.kick
	s.run.Unlock()
	kickLoop(kick)
}

// kickLoop sends a wake-up on kick unless one is pending (nil: no loop
// ever blocked).
func kickLoop(kick chan struct{}) {
	select {
	case kick <- struct{}{}:
	default:
	}
}

// blockOn returns the channel the loop blocks on (made on first use) and
// whether work came before it could block.
func (s *Subscription) blockOn() (kick chan struct{}, work bool) {
	s.run.Lock()
	defer s.run.Unlock()
	if s.run.kick == nil {
		s.run.kick = make(chan struct{}, 1)
	}
	return s.run.kick, len(s.run.ops) > 0 || s.run.closed || s.notified.Load()
}

// start starts the loop goroutine unless someone owns the state.
func (s *Subscription) start() {
	s.run.Lock()
	defer s.run.Unlock()
	if s.run.on || s.run.closed {
		return
	}
	s.run.on = true
	s.running.Store(true)
	s.wg.Add(1)
	go s.loop()
}

// release gives up ownership of the loop state (held by a loop about to
// exit, or an inline call): if work is queued or the subscription is not
// idle, a loop goroutine takes over instead. It reports whether the
// state was released.
func (s *Subscription) release(fromLoop bool) bool {
	s.run.Lock()
	defer s.run.Unlock()
	// running goes false before notified is looked at: a wake that saw
	// it true had set notified first (seen here); one that sees it false
	// starts a loop (start waits for this lock).
	s.running.Store(false)
	if !s.run.closed && (len(s.run.ops) > 0 || s.notified.Load() || !s.idleLocked()) {
		s.running.Store(true)
		if !fromLoop {
			s.wg.Add(1)
			go s.loop()
		}
		return false
	}
	s.run.on = false
	return true
}

// claim takes the loop state for an inline call when nobody owns it.
func (s *Subscription) claim() bool {
	s.run.Lock()
	defer s.run.Unlock()
	if s.run.on || s.run.closed {
		return false
	}
	s.run.on = true
	s.running.Store(true)
	return true
}

// next takes the oldest queued op (ok); closed reports that close began
// (the loop exits, leaving the rest to close).
func (s *Subscription) next() (op subOp, ok, closed bool) {
	s.run.Lock()
	defer s.run.Unlock()
	if s.run.closed {
		return op, false, true
	}
	if len(s.run.ops) == 0 {
		return op, false, false
	}
	op = s.run.ops[0]
	s.run.ops[0] = subOp{}
	s.run.ops = s.run.ops[1:]
	if len(s.run.ops) == 0 {
		s.run.ops = nil // an idle subscription holds no queue
	}
	if s.run.room != nil {
		close(s.run.room)
		s.run.room = nil
	}
	return op, true, false
}

func (s *Subscription) loop() {
	defer s.wg.Done()
	var timerC, notifyC <-chan time.Time
	for {
		if s.idleLocked() {
			s.dropReadCtx()
			if s.release(true) {
				return
			}
		}
		op, ok, closed := s.next()
		if closed {
			s.exitLoop()
			return
		}
		if ok {
			op.run()
		}
		if len(s.requeues) > 0 {
			// Requeue chunks to move (requeue.go): one op (if any) per
			// chunk, so neither waits for the other; new entries wait
			// until the last chunk dispatches.
			s.requeueStep()
			continue
		}
		if s.notified.Swap(false) {
			s.dispatch()
			continue
		}
		if ok {
			continue
		}
		kick, work := s.blockOn()
		if work {
			continue
		}
		timerC, notifyC = nil, nil
		if s.delayTimer != nil {
			timerC = s.delayTimer.C
		}
		if s.notifyTimer != nil {
			notifyC = s.notifyTimer.C
		}
		select {
		case <-kick:
		case <-notifyC:
			s.notifyTimer = nil
			for _, c := range s.extra.notifyQ {
				s.notifyActiveLocked(c)
			}
			s.extra.notifyQ = nil
		case <-timerC:
			s.delayTimer = nil
			s.releaseDelayed()
			s.dispatch()
		}
	}
}

// exitLoop releases what the loop holds when the subscription closes.
func (s *Subscription) exitLoop() {
	s.dropReadCtx()
	s.stopRequeues()
	if s.delayTimer != nil {
		s.delayTimer.Stop()
	}
	if s.notifyTimer != nil {
		s.notifyTimer.Stop()
	}
}

// enqueue queues op for the loop, starting it if nobody owns the state
// (an inline call that does hands over to a loop in release). It waits
// while maxOps are queued and reports false once the subscription is
// closed.
func (s *Subscription) enqueue(op subOp) bool {
	s.run.Lock()
	for len(s.run.ops) >= maxOps && !s.run.closed {
		if s.run.room == nil {
			s.run.room = make(chan struct{})
		}
		room := s.run.room
		s.run.Unlock()
		<-room
		s.run.Lock()
	}
	if s.run.closed {
		s.run.Unlock()
		return false
	}
	s.run.ops = append(s.run.ops, op)
	start := !s.run.on
	if start {
		s.run.on = true
		s.running.Store(true)
		s.wg.Add(1)
	}
	kick := s.run.kick
	s.run.Unlock()
	if start {
		go s.loop()
	} else {
		kickLoop(kick)
	}
	return true
}

// Do runs f on the loop goroutine. It reports false if the subscription
// is closed.
func (s *Subscription) Do(f func()) bool {
	return s.enqueue(subOp{f: f})
}

// Call runs f on the loop goroutine and waits for it. It reports false
// if the subscription closed first (f never runs then).
func (s *Subscription) Call(f func()) bool {
	if s.claim() {
		// Idle: run f here, as the loop would, then hand over.
		f()
		s.release(false)
		return true
	}
	var ran bool
	op := subOp{f: func() { f(); ran = true }, done: make(chan struct{})}
	if !s.enqueue(op) {
		return false
	}
	<-op.done // closed after f returned (ran), or by close (never ran)
	return ran
}

// Wake tells the loop that new entries are available, starting it if
// it is stopped and consumers are connected. Never blocks.
func (s *Subscription) Wake() {
	if !s.running.Load() && !s.hasConsumers.Load() {
		return // no consumer: nothing to dispatch to
	}
	s.notified.Store(true)
	s.signal()
	if !s.running.Load() {
		s.start()
	}
}

// Close stops the loop; the closures it had not run never run (a call
// waiting on one returns false). It does not touch consumers: callers
// disconnect them first.
func (s *Subscription) Close() {
	s.run.Lock()
	s.run.closed = true
	if s.run.room != nil {
		close(s.run.room)
		s.run.room = nil
	}
	s.run.Unlock()
	s.signal()
	s.wg.Wait()
	s.run.Lock()
	ops := s.run.ops
	s.run.ops = nil
	s.run.Unlock()
	for _, op := range ops {
		if op.done != nil {
			close(op.done)
		}
	}
}
