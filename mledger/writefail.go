package mledger

import "time"

// Back-off after failed rollovers. When no ledger can be created (no
// writable bookies: all full or read-only), every add in stateWriteFailed
// would start another rollover that fails at once, and every failed add
// makes the client reconnect and re-send: a storm of creation attempts,
// SEND_ERRORs, reconnections and log lines. Instead, after a failed
// rollover, adds wait in the queue until the back-off has passed; then
// one rollover tries again for all of them (succeeding, or failing them
// all at once). A single failure has no back-off (the next add retries at
// once: most failures are transient); from the second in a row the
// back-off starts at writeFailMinBackoff and doubles with each one up to
// writeFailMaxBackoff. A created ledger resets it.
const (
	writeFailMinBackoff = 500 * time.Millisecond
	writeFailMaxBackoff = 10 * time.Second
)

// writeFailure is the back-off state, guarded by ManagedLedger.mu.
type writeFailure struct {
	count     int   // consecutive failed rollovers
	until     int64 // unix ns: no rollover is tried before then
	backoff   time.Duration
	scheduled bool // a timer will start the rollover at until
}

// failedLocked records a failed rollover at now; it reports whether it is
// the first of a run (to be logged as an error; later ones are not).
func (w *writeFailure) failedLocked(now time.Time) bool {
	w.count++
	switch {
	case w.count == 1:
		w.backoff = 0
	case w.backoff == 0:
		w.backoff = writeFailMinBackoff
	default:
		w.backoff = min(2*w.backoff, writeFailMaxBackoff)
	}
	w.until = now.Add(w.backoff).UnixNano()
	return w.count == 1
}

// deferLocked reports whether the rollover for a newly queued add must
// wait for the back-off; if so it makes sure one is scheduled for when it
// ends.
func (w *writeFailure) deferLocked(ml *ManagedLedger, now time.Time) bool {
	if w.count == 0 || now.UnixNano() >= w.until {
		return false
	}
	if !w.scheduled {
		w.scheduled = true
		time.AfterFunc(time.Duration(w.until-now.UnixNano()), func() {
			ml.mu.Lock()
			defer ml.mu.Unlock()
			w.scheduled = false
			if ml.state == stateWriteFailed && len(ml.queued) > 0 {
				ml.startRolloverLocked()
			}
		})
	}
	return true
}

// resetLocked clears the state after a created ledger and returns how
// many rollovers had failed in a row.
func (w *writeFailure) resetLocked() int {
	n := w.count
	w.count, w.backoff, w.until = 0, 0, 0
	return n
}
