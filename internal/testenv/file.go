package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFile writes body to a file called name in a directory of its own
// (t.TempDir) and returns the file's path: the configuration files
// (name.conf, name.yml) and other inputs tests hand to a command.
func WriteFile(t testing.TB, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
