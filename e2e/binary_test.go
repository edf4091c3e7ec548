package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// binEnv names a magnetar binary already built for these tests. The
// first test that needs the binary builds it and sets binEnv, so a test
// binary this one re-executes (TestClientSuite under unshare) inherits
// the path and does not build again.
const binEnv = "MAGNETAR_E2E_BIN"

// magnetarPkg is the package of the binary under test.
const magnetarPkg = "github.com/magnetar-mq/magnetar/cmd/magnetar"

var build struct {
	once sync.Once
	path string
	dir  string // the directory this process built into; removed at exit
	err  error
}

// magnetarBinary returns the path of the magnetar binary, building it
// the first time: go build [-race] -o TMP/magnetar cmd/magnetar, with
// -race exactly when this test binary has it (raceEnabled), so the
// processes under test are checked for races as the tests are.
func magnetarBinary(t testing.TB) string {
	t.Helper()
	build.once.Do(func() {
		if p := os.Getenv(binEnv); p != "" {
			build.path = p
			return
		}
		dir, err := os.MkdirTemp("", "magnetar-e2e-")
		if err != nil {
			build.err = err
			return
		}
		build.dir = dir
		bin := filepath.Join(dir, "magnetar")
		args := []string{"build"}
		if raceEnabled {
			args = append(args, "-race")
		}
		args = append(args, "-o", bin, magnetarPkg)
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go %v: %v\n%s", args, err, out)
			return
		}
		build.path = bin
		build.err = os.Setenv(binEnv, bin)
	})
	if build.err != nil {
		t.Fatalf("building magnetar: %v", build.err)
	}
	return build.path
}

// removeMagnetarBuild removes the binary this process built, if any.
func removeMagnetarBuild() {
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
}

// magnetarCommand is an exec.Cmd running `magnetar args...`.
func magnetarCommand(t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	return exec.Command(magnetarBinary(t), args...)
}

// runMain runs `magnetar args...` to its end and returns its stdout, or
// its stderr when wantErr; wantErr says whether a non-zero exit is
// expected.
func runMain(t *testing.T, wantErr bool, args ...string) string {
	t.Helper()
	cmd := magnetarCommand(t, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if (err != nil) != wantErr {
		t.Fatalf("magnetar %s: err=%v (want error: %v)\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, wantErr, out.String(), errb.String())
	}
	if wantErr {
		return errb.String()
	}
	return out.String()
}
