package version

import (
	"runtime"
	"strings"
	"testing"
)

func TestGet(t *testing.T) {
	old := Version
	t.Cleanup(func() { Version = old })
	Version = "9.9.9-test"
	i := Get()
	if i.Version != "9.9.9-test" || i.GoVersion != runtime.Version() || i.Commit == "" {
		t.Fatalf("%+v", i)
	}
	if s := i.String(); !strings.HasPrefix(s, "9.9.9-test (commit ") || !strings.HasSuffix(s, runtime.Version()+")") {
		t.Fatalf("String %q", s)
	}
}
