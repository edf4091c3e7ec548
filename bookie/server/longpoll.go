package server

import (
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/protocol/bkproto"
)

// longPoller parks LONG_POLL requests until the LAC the bookie knows for
// their ledger passes the client's previous LAC, or their timeout fires.
// The known LAC is the highest piggybacked LAC of the adds this server
// stored and of explicit WRITE_LACs, next to what the bookie reports.
type longPoller struct {
	s  *Server
	mu sync.Mutex
	// known: highest LAC seen per ledger since start.
	known   map[int64]int64
	waiters map[int64][]*waiter
	closed  bool
}

type waiter struct {
	c     *conn
	req   bkproto.Request
	timer *time.Timer
	done  bool // guarded by longPoller.mu
}

func newLongPoller(s *Server) *longPoller {
	return &longPoller{s: s, known: map[int64]int64{}, waiters: map[int64][]*waiter{}}
}

// added records a stored entry's piggybacked LAC (or an explicit LAC) and
// wakes the waiters it satisfies. It runs on the bookie's completion
// goroutine, so answers are queued to the read pool, never computed here.
func (lp *longPoller) added(ledger, _ int64, lac int64) {
	lp.mu.Lock()
	if old, ok := lp.known[ledger]; ok && old >= lac {
		lp.mu.Unlock()
		return
	}
	lp.known[ledger] = lac
	ws := lp.waiters[ledger]
	var wake []*waiter
	keep := ws[:0]
	for _, w := range ws {
		if w.req.Entry < lac {
			w.done = true
			w.timer.Stop()
			wake = append(wake, w)
		} else {
			keep = append(keep, w)
		}
	}
	if len(keep) == 0 {
		delete(lp.waiters, ledger)
	} else {
		lp.waiters[ledger] = keep
	}
	lp.mu.Unlock()
	for _, w := range wake {
		lp.answerAsync(w.c, w.req)
	}
}

// answerAsync queues the answer of a long poll to the read pool.
func (lp *longPoller) answerAsync(c *conn, req bkproto.Request) {
	select {
	case lp.s.readQ <- task{c: c, req: req}:
	default:
		c.respond(&bkproto.Response{Op: bkproto.OpLongPoll, Status: bkproto.ETOOMANYREQUESTS, ReqID: req.ReqID, Ledger: req.Ledger, Entry: req.Entry})
	}
}

// lacOf returns the highest LAC known for ledger.
func (lp *longPoller) lacOf(ledger int64) int64 {
	lac := int64(-1)
	if explicit, last, err := readLAC(lp.s.b, ledger); err == nil {
		lac = explicit
		if h, err := bkproto.DecodeEntryHeader(last); err == nil {
			lac = max(lac, h.LAC)
		}
	}
	lp.mu.Lock()
	if k, ok := lp.known[ledger]; ok {
		lac = max(lac, k)
	}
	lp.mu.Unlock()
	return lac
}

// poll answers at once if the LAC already passed req.Entry, else parks.
func (lp *longPoller) poll(c *conn, req bkproto.Request) {
	req.MasterKey, req.Payload = nil, nil
	if lp.lacOf(req.Ledger) > req.Entry || req.TimeoutMs == 0 {
		lp.answerAsync(c, req)
		return
	}
	w := &waiter{c: c, req: req}
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if lp.closed {
		return
	}
	// Re-check under the lock: an add may have raised the LAC meanwhile.
	if k, ok := lp.known[req.Ledger]; ok && k > req.Entry {
		lp.answerAsync(c, req)
		return
	}
	w.timer = time.AfterFunc(time.Duration(req.TimeoutMs)*time.Millisecond, func() {
		lp.mu.Lock()
		if w.done {
			lp.mu.Unlock()
			return
		}
		w.done = true
		ws := lp.waiters[req.Ledger]
		for i, x := range ws {
			if x == w {
				ws = append(ws[:i], ws[i+1:]...)
				break
			}
		}
		if len(ws) == 0 {
			delete(lp.waiters, req.Ledger)
		} else {
			lp.waiters[req.Ledger] = ws
		}
		lp.mu.Unlock()
		lp.answerAsync(c, req)
	})
	lp.waiters[req.Ledger] = append(lp.waiters[req.Ledger], w)
}

// answer builds a long-poll response: the LAC and, if it passed the
// previous LAC, the entry after it.
func (lp *longPoller) answer(c *conn, req *bkproto.Request) {
	lac := lp.lacOf(req.Ledger)
	resp := bkproto.Response{Op: bkproto.OpLongPoll, ReqID: req.ReqID, Ledger: req.Ledger, Entry: lac}
	if lac > req.Entry {
		if v, err := lp.s.b.ReadEntry(req.Ledger, req.Entry+1); err == nil {
			resp.Payload = v
		}
	}
	c.respond(&resp)
}

func (lp *longPoller) close() {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	lp.closed = true
	for _, ws := range lp.waiters {
		for _, w := range ws {
			w.done = true
			w.timer.Stop()
		}
	}
	lp.waiters = map[int64][]*waiter{}
}
