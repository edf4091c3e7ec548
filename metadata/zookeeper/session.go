package zookeeper

import (
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
)

// onEvent is the client library's event callback. It must not block: it
// only nudges monitor.
func (s *Store) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	select {
	case s.sessCh <- struct{}{}:
	default:
	}
}

// generation returns the number of sessions that replaced an expired one
// so far and a channel closed when it changes.
func (s *Store) generation() (uint64, <-chan struct{}) {
	s.genMu.Lock()
	defer s.genMu.Unlock()
	return s.gen, s.genCh
}

func (s *Store) bumpGeneration() {
	s.genMu.Lock()
	defer s.genMu.Unlock()
	s.gen++
	close(s.genCh)
	s.genCh = make(chan struct{})
}

// monitor follows the client's session. The first session closes ready.
// When a new session replaces an expired one, it re-creates the tracked
// ephemeral nodes and then bumps the generation, which makes every watch
// re-arm and report EventSessionExpired. Owned by Store; exits on Close.
func (s *Store) monitor(ready chan struct{}) {
	defer s.wg.Done()
	var cur int64
	for {
		select {
		case <-s.closing:
			return
		case <-s.sessCh:
		}
		id := s.conn.SessionID()
		if s.conn.State() != zk.StateHasSession || id == 0 || id == cur {
			continue
		}
		if cur == 0 {
			cur = id
			close(ready)
			continue
		}
		s.log.Warn("zookeeper: session expired, re-creating ephemeral nodes", "old", cur, "new", id)
		cur = id
		if !s.recreateEphemerals(id) {
			continue // the new session went too (or Close); handle the next one
		}
		s.bumpGeneration()
	}
}

// recreateEphemerals puts the tracked ephemeral nodes back on session id.
// Connection losses are retried; it gives up (false) if that session
// expires as well or the Store closes.
func (s *Store) recreateEphemerals(id int64) bool {
	s.ephMu.Lock()
	defer s.ephMu.Unlock()
	for p, value := range s.ephemerals {
		for {
			if s.conn.SessionID() != id {
				return false
			}
			err := s.putEphemeralLocked(s.full(p), value)
			if err == nil {
				break
			}
			if errors.Is(err, zk.ErrNodeExists) {
				s.log.Warn("zookeeper: ephemeral node taken by another session, no longer re-created", "path", p)
				delete(s.ephemerals, p)
				break
			}
			if !retryable(err) {
				s.log.Error("zookeeper: cannot re-create ephemeral node", "path", p, "err", err)
				break
			}
			select {
			case <-s.closing:
				return false
			case <-time.After(100 * time.Millisecond): // reconnect backoff
			}
		}
	}
	return true
}
