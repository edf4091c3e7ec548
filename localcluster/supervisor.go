package localcluster

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
)

// supervisor owns the cluster's children: it reports a child that dies,
// restarts it if asked, and stops them all in reverse start order.
type supervisor struct {
	restart bool
	log     io.Writer // where deaths and restarts are reported
	mu      sync.Mutex
	procs   []*supervised // start order; protected by mu
	stopped bool          // protected by mu
}

type supervised struct {
	name  string
	start func() (*child, <-chan string, error)
	cur   *child // protected by supervisor.mu
}

// add starts a child and waits for its ready line (if it has one).
func (s *supervisor) add(name string, start func() (*child, <-chan string, error)) (string, error) {
	p := &supervised{name: name, start: start}
	c, lines, err := start()
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	p.cur = c
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	if lines == nil {
		return "", nil
	}
	return c.waitReady(lines, 60*time.Second)
}

// watch follows every child until ctx ends: a death is reported and, with
// restart, the child is started again (after a second, then backing off
// to 30 s while it keeps dying).
func (s *supervisor) watch(ctx context.Context) {
	s.mu.Lock()
	procs := slices.Clone(s.procs)
	s.mu.Unlock()
	for _, p := range procs {
		go s.follow(ctx, p)
	}
}

// follow waits for p's current child to exit and restarts it (with
// restart) until ctx ends or the supervisor stops.
func (s *supervisor) follow(ctx context.Context, p *supervised) {
	backoff := time.Second
	for {
		s.mu.Lock()
		c := p.cur
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-c.done:
		}
		s.mu.Lock()
		stopped := s.stopped
		s.mu.Unlock()
		if stopped || ctx.Err() != nil {
			return
		}
		fmt.Fprintf(s.log, "magnetar cluster: %s exited unexpectedly (%v); see %s\n", p.name, c.err, c.logPath)
		if !s.restart {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		started := time.Now()
		if !s.restartOne(p) {
			if s.isStopped() {
				return
			}
			backoff = min(2*backoff, 30*time.Second)
			continue
		}
		fmt.Fprintf(s.log, "magnetar cluster: %s restarted (%v)\n", p.name, time.Since(started).Round(time.Millisecond))
		if time.Since(started) > time.Minute {
			backoff = time.Second
		} else {
			backoff = min(2*backoff, 30*time.Second)
		}
	}
}

// restartOne starts p again and waits for its ready line; false if it
// did not start or the supervisor stopped meanwhile.
func (s *supervisor) restartOne(p *supervised) bool {
	nc, lines, err := p.start()
	if err != nil {
		fmt.Fprintf(s.log, "magnetar cluster: restart %s: %v\n", p.name, err)
		return false
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		nc.stop(30 * time.Second)
		return false
	}
	p.cur = nc
	s.mu.Unlock()
	if lines != nil {
		if _, err := nc.waitReady(lines, 60*time.Second); err != nil {
			fmt.Fprintf(s.log, "magnetar cluster: restart %s: %v\n", p.name, err)
		}
	}
	return true
}

func (s *supervisor) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// stopAll stops every child, last started first.
func (s *supervisor) stopAll() {
	s.mu.Lock()
	s.stopped = true
	procs := slices.Clone(s.procs)
	s.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		s.mu.Lock()
		c := procs[i].cur
		s.mu.Unlock()
		c.stop(30 * time.Second)
	}
}
