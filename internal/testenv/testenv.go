// Package testenv holds the switches tests read from the environment, in
// one place. Only tests import it.
//
//	MAGNETAR_SOAK=1   long iterations: more seeds, ops and crash cycles
//	                  (scripts/test soak sets it)
package testenv

import "os"

// SoakVar is the environment variable that turns on the soak tier.
const SoakVar = "MAGNETAR_SOAK"

// Soak reports whether the long iterations were asked for.
func Soak() bool { return os.Getenv(SoakVar) == "1" }
