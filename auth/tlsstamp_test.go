package auth

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFileStampSeesRenameOfSameSize: a file renamed over the certificate
// with the same size and the same modification time (a rotation within
// one tick of the file system's coarse clock, where the PEM kept its
// length) changes the stamp, so the next handshake reloads. The stamp of
// unchanged files is stable. (TestServerTLSReload failed now and then
// with the old certificate served after the rotation.)
func TestFileStampSeesRenameOfSameSize(t *testing.T) {
	dir := t.TempDir()
	crt := filepath.Join(dir, "srv.crt")
	mtime := time.Unix(1_700_000_000, 0)
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	write(crt, "certificate one")
	before := filesStamp(crt)
	if again := filesStamp(crt); again != before {
		t.Fatalf("stamp of an unchanged file moved: %q, then %q", before, again)
	}
	next := filepath.Join(dir, "next.crt")
	write(next, "certificate two") // same length
	if err := os.Rename(next, crt); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(crt)
	if err != nil || !fi.ModTime().Equal(mtime) || fi.Size() != int64(len("certificate one")) {
		t.Fatalf("setup: %v %v", fi, err)
	}
	if after := filesStamp(crt); after == before {
		t.Fatalf("a file renamed over the certificate with its size and mtime left the stamp %q", after)
	}
	if got := filesStamp(filepath.Join(dir, "gone")); got == "" {
		t.Fatal("a missing file has no stamp")
	}
}
