package mledger

import "time"

// Back-off after failed rollovers. When no ledger can be created (no
// writable bookies: all full or read-only), every add in stateWriteFailed
// would start another rollover, and each producer retry another ledger
// creation attempt and log line. Instead, after a failed rollover adds
// fail at once with that error until the back-off has passed; the first
// add after it tries again. A single failure has no back-off (the next add
// retries at once: most failures are transient); from the second in a row
// the back-off starts at writeFailMinBackoff and doubles with each one up
// to writeFailMaxBackoff. A created ledger resets it.
const (
	writeFailMinBackoff = 500 * time.Millisecond
	writeFailMaxBackoff = 10 * time.Second
)

// writeFailure is the back-off state, guarded by ManagedLedger.mu.
type writeFailure struct {
	count   int       // consecutive failed rollovers
	err     error     // the last one's error, as given to the adds
	until   time.Time // adds fail with err until then
	backoff time.Duration
}

// failedLocked records a failed rollover at now; it reports whether it is
// the first of a run (to be logged as an error; later ones are not).
func (w *writeFailure) failedLocked(now time.Time, err error) bool {
	w.count++
	w.err = err
	switch {
	case w.count == 1:
		w.backoff = 0
	case w.backoff == 0:
		w.backoff = writeFailMinBackoff
	default:
		w.backoff = min(2*w.backoff, writeFailMaxBackoff)
	}
	w.until = now.Add(w.backoff)
	return w.count == 1
}

// refuseLocked returns the error an add gets within the back-off, nil
// when a rollover may be tried.
func (w *writeFailure) refuseLocked(now time.Time) error {
	if w.count == 0 || !now.Before(w.until) {
		return nil
	}
	return w.err
}

// resetLocked clears the state after a created ledger and returns how
// many rollovers had failed in a row.
func (w *writeFailure) resetLocked() int {
	n := w.count
	*w = writeFailure{}
	return n
}
