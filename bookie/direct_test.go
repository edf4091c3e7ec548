package bookie

import "testing"

// crashDirectEnv makes osOptions (crash parent and child alike) run the
// journal with O_DIRECT (Options.JournalDirectIO).
const crashDirectEnv = "MAGNETAR_BOOKIE_CRASH_DIRECT"

// TestCrashRealProcessDirectIO is TestCrashRealProcess (and its large
// entries variant) with an O_DIRECT journal: a child adding entries is
// killed with SIGKILL at random points and every entry it acknowledged
// must be readable after the restart, which finds the zero padding of
// the last aligned group (or a torn group) at the journal's tail.
func TestCrashRealProcessDirectIO(t *testing.T) {
	t.Setenv(crashDirectEnv, "1")
	t.Run("small", func(t *testing.T) { crashRealProcess(t, 12, 500, false) })
	t.Run("large", func(t *testing.T) { crashRealProcess(t, 4, 150, true) })
}
