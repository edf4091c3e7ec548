package pulsarclient

// RandomBytes gives the external tests (package pulsarclient_test, which
// may import the broker) the deterministic payload generator.
var RandomBytes = randomBytes
