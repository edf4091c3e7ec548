//go:build race

package e2e

// raceEnabled: this test binary runs under the race detector, and so
// does the magnetar binary it builds.
const raceEnabled = true
