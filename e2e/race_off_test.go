//go:build !race

package e2e

// raceEnabled: this test binary runs without the race detector, and so
// does the magnetar binary it builds.
const raceEnabled = false
