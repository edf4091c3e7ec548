package broker

import (
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/magnetar-mq/magnetar/mledger"
)

func (b *Broker) registerSubscriptionRoutes(rt *Router) {
	const sp = "/admin/v2/{domain}/{tenant}/{ns}/{topic}/subscription/{sub}"
	rt.Handle("PUT", sp, b.httpCreateSubscription)
	rt.Handle("DELETE", sp, b.httpDeleteSubscription)
	rt.Handle("POST", sp+"/skip/{n}", b.subOp(func(x *adminExt, t *topic, s *subscription, ca *cursorAdapter, p Params, r *http.Request) (int, error) {
		n, err := strconv.ParseInt(p["n"], 10, 64)
		if err != nil || n < 0 {
			return http.StatusBadRequest, errors.New("skip count must be a non-negative integer")
		}
		s.call(func() { err = ca.c.SkipEntries(n) })
		return 0, err
	}))
	rt.Handle("POST", sp+"/skip_all", b.subOp(func(x *adminExt, t *topic, s *subscription, ca *cursorAdapter, p Params, r *http.Request) (int, error) {
		var err error
		s.call(func() { err = ca.c.ClearBacklog() })
		return 0, err
	}))
	rt.Handle("POST", sp+"/expireMessages/{sec}", b.subOp(func(x *adminExt, t *topic, s *subscription, ca *cursorAdapter, p Params, r *http.Request) (int, error) {
		sec, err := strconv.ParseInt(p["sec"], 10, 64)
		if err != nil || sec < 0 {
			return http.StatusBadRequest, errors.New("expiry must be a non-negative integer")
		}
		return 0, x.expire(t, s, sec)
	}))
	rt.Handle("POST", sp+"/resetcursor/{ts}", b.subOp(func(x *adminExt, t *topic, s *subscription, ca *cursorAdapter, p Params, r *http.Request) (int, error) {
		ts, err := strconv.ParseInt(p["ts"], 10, 64)
		if err != nil {
			return http.StatusBadRequest, errors.New("timestamp must be an integer (ms)")
		}
		return 0, resetSub(t, s, position{}, true, ts)
	}))
	rt.Handle("POST", sp+"/resetcursor", b.subOp(func(x *adminExt, t *topic, s *subscription, ca *cursorAdapter, p Params, r *http.Request) (int, error) {
		var id messageIDJSON
		if err := readJSONBody(r, &id); err != nil {
			return http.StatusBadRequest, err
		}
		return 0, resetSub(t, s, msgIDPosition(id), false, 0)
	}))
	rt.Handle("GET", sp+"/position/{n}", b.httpPeek)
	rt.Handle("POST", "/admin/v2/{domain}/{tenant}/{ns}/{topic}/all_subscription/expireMessages/{sec}", func(w http.ResponseWriter, r *http.Request, p Params) {
		sec, err := strconv.ParseInt(p["sec"], 10, 64)
		if err != nil || sec < 0 {
			writeError(w, http.StatusBadRequest, "expiry must be a non-negative integer")
			return
		}
		b.forEachTarget(w, r, p, func(t *topic) error {
			for _, s := range *t.subList.Load() {
				if err := b.ext.expire(t, s, sec); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// msgIDPosition maps a REST MessageId to a position, honouring the
// Earliest (-1:-1) and Latest (MaxInt64:MaxInt64) sentinels.
func msgIDPosition(id messageIDJSON) position {
	switch {
	case id.LedgerID < 0 && id.EntryID < 0:
		return position(mledger.Earliest)
	case id.LedgerID == math.MaxInt64 && id.EntryID == math.MaxInt64:
		return position(mledger.Latest)
	}
	return position{LedgerID: id.LedgerID, EntryID: id.EntryID}
}

// resetSub moves the cursor and disconnects the consumers, as a SEEK does.
func resetSub(t *topic, s *subscription, pos position, byTime bool, ts int64) error {
	var err error
	done := make(chan struct{})
	t.seek(s, pos, byTime, ts, func(e error) { err = e; close(done) })
	<-done
	return err
}

type subOpFunc func(x *adminExt, t *topic, s *subscription, ca *cursorAdapter, p Params, r *http.Request) (int, error)

// httpError is an error with its HTTP status.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

// forEachTarget runs fn on the path's topic, or on every partition of a
// partitioned topic, answering 204 when all succeed.
func (b *Broker) forEachTarget(w http.ResponseWriter, r *http.Request, p Params, fn func(t *topic) error) {
	tn, ok := TopicFromParams(w, p)
	if !ok || !b.nsExists(r.Context(), w, tn) {
		return
	}
	targets := []topicName{tn}
	if n, err := b.reg.partitions(r.Context(), tn); err != nil {
		internalError(w, err)
		return
	} else if n > 0 {
		targets = targets[:0]
		for i := range n {
			targets = append(targets, tn.Partition(i))
		}
	}
	for _, target := range targets {
		t, err := b.loadedOrLoad(r.Context(), target)
		if err != nil {
			topicHTTPError(w, err)
			return
		}
		if err := fn(t); err != nil {
			var he *httpError
			if errors.As(err, &he) {
				writeError(w, he.code, he.msg)
			} else {
				internalError(w, err)
			}
			return
		}
		b.ext.checkTopic(t)
	}
	w.WriteHeader(http.StatusNoContent)
}

// subOp resolves the durable subscription of the path (on every
// partition of a partitioned topic), runs op and answers 204, then
// re-evaluates the topic's policies (a held producer may resume).
func (b *Broker) subOp(op subOpFunc) HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p Params) {
		b.forEachTarget(w, r, p, func(t *topic) error {
			t.mu.Lock()
			s := t.mu.subs[p["sub"]]
			t.mu.Unlock()
			if s == nil {
				return &httpError{http.StatusNotFound, "Subscription not found"}
			}
			ca, ok := s.cur.(*cursorAdapter)
			if !ok {
				return &httpError{http.StatusMethodNotAllowed, "operation not supported on this subscription"}
			}
			code, err := op(b.ext, t, s, ca, p, r)
			if err != nil && code != 0 {
				return &httpError{code, err.Error()}
			}
			return err
		})
	}
}

func (b *Broker) httpCreateSubscription(w http.ResponseWriter, r *http.Request, p Params) {
	id := messageIDJSON{LedgerID: math.MaxInt64, EntryID: math.MaxInt64}
	if err := readJSONBody(r, &id); err != nil {
		writeError(w, http.StatusBadRequest, "bad message id: "+err.Error())
		return
	}
	b.forEachTarget(w, r, p, func(t *topic) error { return createSubscription(t, p["sub"], msgIDPosition(id)) })
}

// createSubscription adds a durable subscription to t at pos (Earliest,
// Latest or an entry to read first).
func createSubscription(t *topic, name string, pos position) error {
	if !t.persistent() {
		return &httpError{http.StatusMethodNotAllowed, "Create subscription on non-persistent topic is not supported"}
	}
	t.mu.Lock()
	existing := t.mu.subs[name] != nil
	t.mu.Unlock()
	if existing {
		return &httpError{http.StatusConflict, "Subscription already exists for topic"}
	}
	initial := initialLatest
	if position(mledger.Earliest) == pos {
		initial = initialEarliest
	}
	cur, err := t.ml.OpenCursor(name, initial)
	if err != nil {
		return err
	}
	if pos != position(mledger.Earliest) && pos != position(mledger.Latest) {
		if err := cur.Seek(pos); err != nil {
			return &httpError{http.StatusPreconditionFailed, "cannot position the subscription: " + err.Error()}
		}
	}
	s := newSubscription(name, t.full, SubExclusive, t.partition, cur, dispatchEntryMeta, t.b.cfg.DispatchBatch, t.log)
	t.mu.Lock()
	if t.mu.subs[name] != nil {
		t.mu.Unlock()
		s.close()
		return &httpError{http.StatusConflict, "Subscription already exists for topic"}
	}
	t.mu.subs[name] = s
	t.publishSubsLocked()
	t.mu.Unlock()
	return nil
}

func (b *Broker) httpDeleteSubscription(w http.ResponseWriter, r *http.Request, p Params) {
	force := r.URL.Query().Get("force") == "true"
	b.forEachTarget(w, r, p, func(t *topic) error {
		err := t.deleteSubscription(p["sub"], force)
		var es *errSubscribe
		switch {
		case err == nil:
			return nil
		case errors.As(err, &es) && es.code == codeSubscriptionNotFound:
			return &httpError{http.StatusNotFound, "Subscription not found"}
		case errors.As(err, &es):
			return &httpError{http.StatusPreconditionFailed, es.msg}
		}
		return err
	})
}

// httpPeek returns the n-th (1-based) message of the subscription's
// backlog.
func (b *Broker) httpPeek(w http.ResponseWriter, r *http.Request, p Params) {
	n, err := strconv.ParseInt(p["n"], 10, 64)
	if err != nil || n < 1 {
		writeError(w, http.StatusBadRequest, "position must be a positive integer")
		return
	}
	t, ok := b.topicFor(w, r, p)
	if !ok {
		return
	}
	t.mu.Lock()
	s := t.mu.subs[p["sub"]]
	t.mu.Unlock()
	if s == nil {
		writeError(w, http.StatusNotFound, "Subscription not found")
		return
	}
	ca, ok := s.cur.(*cursorAdapter)
	if !ok {
		writeError(w, http.StatusMethodNotAllowed, "peek is not supported on this subscription")
		return
	}
	ml := ca.ml
	pos := ca.c.MarkDeletePosition()
	ls := ml.Stats().Ledgers
	// Walk forward from mark-delete over unacknowledged entries.
	for n > 0 {
		next, ok := nextPosition(ls, pos)
		if !ok {
			writeError(w, http.StatusNotFound, "Message not found")
			return
		}
		pos = next
		if !ca.c.IsAcked(pos) {
			n--
		}
	}
	data, err := ml.ReadEntry(r.Context(), pos)
	if err != nil {
		writeError(w, http.StatusNotFound, "Message not found: "+err.Error())
		return
	}
	writeRawMessage(w, toPos(pos), data.Data)
}

// nextPosition returns the entry after p among ledgers ls.
func nextPosition(ls []mledger.LedgerInfo, p mledger.Position) (mledger.Position, bool) {
	for _, l := range ls {
		switch {
		case l.LedgerID < p.LedgerID:
			continue
		case l.LedgerID == p.LedgerID:
			if p.EntryID+1 < l.Entries {
				return mledger.Position{LedgerID: l.LedgerID, EntryID: p.EntryID + 1}, true
			}
		default:
			if l.Entries > 0 {
				return mledger.Position{LedgerID: l.LedgerID, EntryID: 0}, true
			}
		}
	}
	return mledger.Position{}, false
}
