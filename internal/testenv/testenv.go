// Package testenv holds the switches tests read from the environment, in
// one place, and the measurements tests of several packages share. Only
// tests import it.
//
//	MAGNETAR_SOAK=1   long iterations: more seeds, ops and crash cycles
//	                  (scripts/test soak sets it)
package testenv

import (
	"os"
	"runtime"
)

// SoakVar is the environment variable that turns on the soak tier.
const SoakVar = "MAGNETAR_SOAK"

// Soak reports whether the long iterations were asked for.
func Soak() bool { return os.Getenv(SoakVar) == "1" }

// LiveHeap is the heap's live bytes after a full collection (two, so
// that objects freed by finalizers of the first are gone too).
func LiveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
