package main

import "os"

// soak reports whether the long iterations were asked for
// (MAGNETAR_SOAK=1 scripts/test).
func soak() bool { return os.Getenv("MAGNETAR_SOAK") == "1" }
