package zookeeper

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/magnetar-mq/magnetar/metadata"
)

// Watch implements metadata.Watcher with ZooKeeper's one-shot watches: an
// exists/data watch on the path and, while it exists, a children watch,
// each re-armed after it fires. Changes made between a watch firing and its
// re-arming are coalesced into the event already reported, except a change
// of existence, which is reported as a separate EventCreated/EventDeleted.
// After a session expiry the watch re-arms on the new session and reports
// EventSessionExpired. The watches are armed before Watch returns.
func (s *Store) Watch(ctx context.Context, p string, fn func(metadata.Event)) error {
	s.life.RLock()
	defer s.life.RUnlock()
	if err := s.check(ctx, p); err != nil {
		return err
	}
	w := &zwatch{s: s, path: p, full: s.full(p), fn: fn, fresh: true}
	w.gen, _ = s.generation()
	if err := w.arm(); err != nil {
		return s.mapErr(err, p)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		w.run(ctx)
	}()
	return nil
}

// zwatch is the state of one Watch, owned by its goroutine after arm.
type zwatch struct {
	s          *Store
	path, full string
	fn         func(metadata.Event)

	existCh   <-chan zk.Event // armed exists/data watch, nil when not armed
	childCh   <-chan zk.Event // armed children watch, nil when not armed
	exists    bool            // existence as last reported to fn
	wantChild bool            // a children watch should be armed
	fresh     bool            // next arm sets exists without reporting
	lost      bool            // the session expired; wait for a new one
	gen       uint64          // store generation last reported to fn
	armGen    uint64          // store generation when the oldest armed channel was armed
	pending   []metadata.Event
}

func (w *zwatch) emit(t metadata.EventType) {
	w.pending = append(w.pending, metadata.Event{Path: w.path, Type: t})
}

// arm sets the watches that are not armed.
func (w *zwatch) arm() error {
	if w.existCh == nil && w.childCh == nil {
		w.armGen, _ = w.s.generation()
	}
	if w.existCh == nil {
		ok, _, ch, err := w.s.conn.ExistsW(w.full)
		if err != nil {
			return err
		}
		w.existCh = ch
		switch {
		case w.fresh:
			w.fresh = false
			w.exists, w.wantChild = ok, ok
		case ok && !w.exists:
			w.emit(metadata.EventCreated)
			w.exists, w.wantChild = true, true
		case !ok && w.exists:
			w.emit(metadata.EventDeleted)
			w.exists = false
		}
	}
	if w.wantChild && w.childCh == nil && w.exists {
		_, _, ch, err := w.s.conn.ChildrenW(w.full)
		switch {
		case err == nil:
			w.childCh = ch
		case errors.Is(err, zk.ErrNoNode):
			// Deleted meanwhile: the exists watch reports it.
		default:
			return err
		}
	}
	w.wantChild = false
	return nil
}

func (w *zwatch) run(ctx context.Context) {
	backoff := 50 * time.Millisecond
	for {
		if w.existCh == nil || w.wantChild {
			if w.lost {
				if !w.waitNewSession(ctx) {
					return
				}
				w.lost = false
			}
			if err := w.arm(); err != nil {
				switch {
				case errors.Is(err, zk.ErrSessionExpired):
					w.loseSession()
				case errors.Is(err, zk.ErrClosing) || w.s.closed.Load():
					return
				}
				select { // connection loss: the client reconnects meanwhile
				case <-ctx.Done():
					return
				case <-w.s.closing:
					return
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, time.Second)
				continue
			}
			backoff = 50 * time.Millisecond
		}
		gen, genCh := w.s.generation()
		if gen != w.armGen && (w.existCh != nil || w.childCh != nil) {
			// A new session replaced an expired one since the oldest of
			// the armed channels was armed: it may belong to the old
			// session, whose EventNotWatching can still arrive after
			// the new generation was reported and would then wait for
			// yet another session. Drop the channels and re-arm all on
			// the current session.
			w.loseSession()
			continue
		}
		if gen != w.gen {
			w.gen = gen
			w.emit(metadata.EventSessionExpired)
		}
		for _, ev := range w.pending {
			if ctx.Err() != nil {
				return
			}
			w.fn(ev)
		}
		w.pending = w.pending[:0]

		select {
		case <-ctx.Done():
			return
		case <-w.s.closing:
			return
		case <-genCh:
			// A new session replaced an expired one. This watch's
			// channels belong to the old session: their EventNotWatching
			// may still be pending, and handling it after this would
			// wait for yet another session. Drop them and re-arm now.
			w.loseSession()
		case ev := <-w.existCh:
			w.existCh = nil
			switch ev.Type {
			case zk.EventNodeCreated:
				w.emit(metadata.EventCreated)
				w.exists, w.wantChild = true, true
			case zk.EventNodeDataChanged:
				w.emit(metadata.EventChanged)
			case zk.EventNodeDeleted:
				w.emit(metadata.EventDeleted)
				w.exists = false
			case zk.EventNotWatching:
				if errors.Is(ev.Err, zk.ErrClosing) {
					return
				}
				w.loseSession()
			}
		case ev := <-w.childCh:
			w.childCh = nil
			switch ev.Type {
			case zk.EventNodeChildrenChanged:
				w.emit(metadata.EventChildren)
				w.wantChild = true
			case zk.EventNodeDeleted:
				// Reported by the exists watch. If that one already saw
				// the node re-created (this event was still queued when
				// it re-armed), the new node needs a children watch, and
				// children created since the re-creation was reported
				// would fire nothing: report a children change, delivered
				// after the watch is armed, so fn re-lists without a gap.
				if w.exists {
					w.wantChild = true
					w.emit(metadata.EventChildren)
				}
			case zk.EventNotWatching:
				if errors.Is(ev.Err, zk.ErrClosing) {
					return
				}
				w.loseSession()
			}
		}
	}
}

// loseSession drops the watches of an expired session.
func (w *zwatch) loseSession() {
	w.existCh, w.childCh = nil, nil
	w.lost, w.fresh, w.wantChild = true, true, false
}

// waitNewSession waits until the store has replaced the session the lost
// channels were armed on (and re-created its ephemeral nodes).
func (w *zwatch) waitNewSession(ctx context.Context) bool {
	for {
		gen, genCh := w.s.generation()
		if gen != w.armGen {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-w.s.closing:
			return false
		case <-genCh:
		}
	}
}
