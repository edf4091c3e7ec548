package broker

import (
	"encoding/json"
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
		t, ok := b.topicFor(w, r, p)
		if !ok {
			return
		}
		for _, s := range *t.subList.Load() {
			if err := b.ext.expire(t, s, sec); err != nil {
				internalError(w, err)
				return
			}
		}
		b.ext.checkTopic(t)
		w.WriteHeader(http.StatusNoContent)
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

// subOp resolves the topic and durable subscription of the path, runs op
// and answers 204, then re-evaluates the topic's policies (a held
// producer may resume).
func (b *Broker) subOp(op subOpFunc) HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p Params) {
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
			writeError(w, http.StatusMethodNotAllowed, "operation not supported on this subscription")
			return
		}
		code, err := op(b.ext, t, s, ca, p, r)
		if err != nil {
			if code == 0 {
				code = http.StatusInternalServerError
			}
			writeError(w, code, err.Error())
			return
		}
		b.ext.checkTopic(t)
		w.WriteHeader(http.StatusNoContent)
	}
}

func (b *Broker) httpCreateSubscription(w http.ResponseWriter, r *http.Request, p Params) {
	t, ok := b.topicFor(w, r, p)
	if !ok {
		return
	}
	if !t.persistent() {
		writeError(w, http.StatusMethodNotAllowed, "Create subscription on non-persistent topic is not supported")
		return
	}
	id := messageIDJSON{LedgerID: math.MaxInt64, EntryID: math.MaxInt64}
	if err := readJSONBody(r, &id); err != nil {
		writeError(w, http.StatusBadRequest, "bad message id: "+err.Error())
		return
	}
	name := p["sub"]
	t.mu.Lock()
	existing := t.mu.subs[name] != nil
	t.mu.Unlock()
	if existing {
		writeError(w, http.StatusConflict, "Subscription already exists for topic")
		return
	}
	pos := msgIDPosition(id)
	initial := initialLatest
	if position(mledger.Earliest) == pos {
		initial = initialEarliest
	}
	cur, err := t.ml.OpenCursor(name, initial)
	if err != nil {
		internalError(w, err)
		return
	}
	if pos != position(mledger.Earliest) && pos != position(mledger.Latest) {
		if err := cur.Seek(pos); err != nil {
			writeError(w, http.StatusPreconditionFailed, "cannot position the subscription: "+err.Error())
			return
		}
	}
	s := newSubscription(name, t.full, SubExclusive, t.partition, cur, dispatchEntryMeta, t.b.cfg.DispatchBatch, t.log)
	t.mu.Lock()
	if t.mu.subs[name] != nil {
		t.mu.Unlock()
		s.close()
		writeError(w, http.StatusConflict, "Subscription already exists for topic")
		return
	}
	t.mu.subs[name] = s
	t.publishSubsLocked()
	t.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (b *Broker) httpDeleteSubscription(w http.ResponseWriter, r *http.Request, p Params) {
	t, ok := b.topicFor(w, r, p)
	if !ok {
		return
	}
	err := t.deleteSubscription(p["sub"], r.URL.Query().Get("force") == "true")
	var es *errSubscribe
	switch {
	case err == nil:
		b.ext.checkTopic(t)
		w.WriteHeader(http.StatusNoContent)
	case errors.As(err, &es) && es.code == codeSubscriptionNotFound:
		writeError(w, http.StatusNotFound, "Subscription not found")
	case errors.As(err, &es):
		writeError(w, http.StatusPreconditionFailed, es.msg)
	default:
		internalError(w, err)
	}
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

var _ = json.Marshal
