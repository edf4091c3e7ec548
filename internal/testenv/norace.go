package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// withoutRace is the calling package's test binary built without the
// race detector, built once per process by RunWithoutRace and removed
// by RemoveWithoutRace (call it from TestMain).
var withoutRace struct {
	once sync.Once
	bin  string
	took time.Duration
	err  error
}

// RunWithoutRace runs the tests matching the -test.run pattern run in
// the current package's tests built without the race detector, with env
// added to the environment, and fails t when they fail. It is for two
// kinds of test: sizes the detector makes too slow to run in process,
// and tests whose only race is inside a dependency (each caller says
// which). The test binary's working directory is its package's, so "."
// builds the same package.
func RunWithoutRace(t testing.TB, run string, env ...string) {
	t.Helper()
	withoutRace.once.Do(func() {
		dir, err := os.MkdirTemp("", "norace-")
		if err != nil {
			withoutRace.err = err
			return
		}
		withoutRace.bin = filepath.Join(dir, "pkg.test")
		t0 := time.Now()
		if out, err := exec.Command("go", "test", "-c", "-o", withoutRace.bin, ".").CombinedOutput(); err != nil {
			withoutRace.err = fmt.Errorf("go test -c: %v\n%s", err, out)
		}
		withoutRace.took = time.Since(t0)
	})
	if withoutRace.err != nil {
		t.Fatal(withoutRace.err)
	}
	// The run may take what is left of this test's own deadline (a
	// loaded CI machine runs it several times slower than a quiet one).
	timeout := 10 * time.Minute
	if dl, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if d, set := dl.Deadline(); set {
			timeout = max(time.Until(d)-30*time.Second, time.Minute)
		}
	}
	cmd := exec.Command(withoutRace.bin, "-test.run="+run, "-test.count=1", "-test.v", "-test.timeout="+timeout.String())
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	t.Logf("built in %s; the run without the race detector:\n%s", withoutRace.took.Round(time.Millisecond), out)
	if err != nil {
		t.Fatal(err)
	}
}

// RemoveWithoutRace removes the binary RunWithoutRace built, if any.
// Call it from TestMain after m.Run.
func RemoveWithoutRace() {
	if withoutRace.bin != "" {
		os.RemoveAll(filepath.Dir(withoutRace.bin))
	}
}
