package main

import "github.com/magnetar-mq/magnetar/internal/testenv"

// soak reports whether the long iterations were asked for
// (scripts/test soak).
func soak() bool { return testenv.Soak() }
