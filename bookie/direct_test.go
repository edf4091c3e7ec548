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

// TestEntryLogFlushBytesOption: a negative EntryLogFlushBytes is refused
// at Open; with a positive one (kept in the options, passed to the entry
// log as FlushBytes) adds, a checkpoint and reads work on the OS file
// system.
func TestEntryLogFlushBytesOption(t *testing.T) {
	o := osOptions(t.TempDir())
	o.EntryLogFlushBytes = -1
	if b, err := Open(o); err == nil {
		b.Close()
		t.Fatal("Open with EntryLogFlushBytes -1 succeeded")
	}
	o.EntryLogFlushBytes = 4096
	b, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := b.opts.EntryLogFlushBytes; got != 4096 {
		t.Fatalf("EntryLogFlushBytes = %d after Open", got)
	}
	for e := int64(0); e < 200; e++ {
		if err := addSync(b, 7, e, mk, payloadFor(7, e, 1000), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	for e := int64(0); e < 200; e++ {
		mustRead(t, b, 7, e, payloadFor(7, e, 1000))
	}
}
