package e2e

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestStatusPage: GET /status.html has Pulsar's status-file semantics.
// With statusFilePath set it answers 200 "OK" while the file exists and
// 404 once the operator removes it (how a broker leaves a load
// balancer's rotation before it stops); without a status file it is
// always 404, as in Pulsar. The page needs no credentials.
func TestStatusPage(t *testing.T) {
	dir := t.TempDir()
	status := filepath.Join(dir, "status")
	if err := os.WriteFile(status, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	get := func(p *proc) (int, string) {
		t.Helper()
		resp, err := http.Get(p.http + "/status.html")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	p := startStandalone(t, filepath.Join(dir, "a"), "--status-file", status, "--no-functions-worker")
	if code, body := get(p); code != 200 || body != "OK" {
		t.Fatalf("with the status file: %d %q, want 200 OK", code, body)
	}
	if err := os.Remove(status); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(p); code != 404 {
		t.Fatalf("status file removed: %d, want 404", code)
	}
	// A directory of that name is no status file.
	if err := os.Mkdir(status, 0o755); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(p); code != 404 {
		t.Fatalf("a directory as the status file: %d, want 404", code)
	}
	os.Remove(status)
	if err := os.WriteFile(status, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, body := get(p); code != 200 || body != "OK" {
		t.Fatalf("status file back: %d %q, want 200 OK", code, body)
	}
	q := startStandalone(t, filepath.Join(dir, "b"), "--no-functions-worker")
	if code, _ := get(q); code != 404 {
		t.Fatalf("without a status file: %d, want 404 (Pulsar's answer)", code)
	}
}
