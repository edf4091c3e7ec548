package testenv

import (
	"testing"
	"time"
)

// DefaultWait is how long WaitFor waits when given no timeout.
const DefaultWait = 10 * time.Second

// WaitFor polls cond until it holds, failing the test when timeout (0:
// DefaultWait) passes first. It polls often at first (1 ms) and backs
// off to every 50 ms, so a condition that holds soon is seen soon and a
// long wait costs little. It is the one wait of the test kits: use it
// where no signal (a channel, a callback) exists to wait on.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if timeout <= 0 {
		timeout = DefaultWait
	}
	deadline := time.Now().Add(timeout)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}
