package bookie

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
)

// roReason is one cause of read-only mode. The bookie is writable only
// while no reason is set.
type roReason uint8

const (
	// roDiskFull: some journal or ledger directory is above the usage
	// threshold. Cleared once all are below the low-water mark.
	roDiskFull roReason = 1 << iota
	// roJournal: the journal failed (sticky; an fsync error is never
	// retried). Cleared only by a restart.
	roJournal
	// roCorrupt: ledger storage reported corruption. Cleared only by a
	// restart (after an operator looked at it).
	roCorrupt
	// roStorage: writing ledger storage failed (entry log, index): the data
	// is safe in the journal, but the write cache cannot drain.
	roStorage
)

func (r roReason) String() string {
	switch r {
	case roDiskFull:
		return "disk full"
	case roJournal:
		return "journal failed"
	case roCorrupt:
		return "corruption"
	case roStorage:
		return "ledger storage failed"
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// roState is the read-only state machine: a set of reasons, each with the
// message that explains it.
type roState struct {
	// fast mirrors mu.reasons for the lock-free check on every add.
	fast atomic.Uint32
	mu   struct {
		sync.Mutex
		reasons roReason
		msgs    map[roReason]string
	}
}

// set adds reason with msg; it reports whether the reason was new.
func (s *roState) set(r roReason, msg string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.msgs == nil {
		s.mu.msgs = make(map[roReason]string)
	}
	isNew := s.mu.reasons&r == 0
	s.mu.reasons |= r
	s.mu.msgs[r] = msg
	s.fast.Store(uint32(s.mu.reasons))
	return isNew
}

// clear removes reason; it reports whether it was set.
func (s *roState) clear(r roReason) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	was := s.mu.reasons&r != 0
	s.mu.reasons &^= r
	delete(s.mu.msgs, r)
	s.fast.Store(uint32(s.mu.reasons))
	return was
}

func (s *roState) reasons() roReason { return roReason(s.fast.Load()) }

// err returns nil while writable, else ErrReadOnly wrapped with every
// reason's message.
func (s *roState) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.reasons == 0 {
		return nil
	}
	var parts []string
	for r := roDiskFull; r <= roStorage; r <<= 1 {
		if s.mu.reasons&r != 0 {
			parts = append(parts, s.mu.msgs[r])
		}
	}
	return fmt.Errorf("%w: %s", ErrReadOnly, strings.Join(parts, "; "))
}

// dirUsage is one directory's volume usage.
type dirUsage struct {
	dir         string
	total, free uint64
}

func (u dirUsage) used() float64 {
	if u.total == 0 {
		return 0
	}
	return 1 - float64(u.free)/float64(u.total)
}

// diskFull decides the disk-full state from the previous state and the
// current usages, with hysteresis: it turns full when any directory is
// above threshold, and back only when every directory is below lwm. msg
// explains the decision when full.
func diskFull(wasFull bool, usages []dirUsage, threshold, lwm float64) (full bool, msg string) {
	var worst dirUsage
	for _, u := range usages {
		if u.used() > worst.used() || worst.dir == "" {
			worst = u
		}
	}
	if worst.dir == "" {
		return wasFull, ""
	}
	switch {
	case worst.used() > threshold:
		return true, fmt.Sprintf("disk usage %.1f%% of %s above threshold %.1f%%", 100*worst.used(), worst.dir, 100*threshold)
	case wasFull && worst.used() >= lwm:
		return true, fmt.Sprintf("disk usage %.1f%% of %s not yet below low-water mark %.1f%%", 100*worst.used(), worst.dir, 100*lwm)
	}
	return false, ""
}
