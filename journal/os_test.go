package journal

import (
	"testing"

	"github.com/magnetar-mq/magnetar/internal/uring"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// TestOSFS runs the journal on the real file system with each writer mode
// this machine supports.
func TestOSFS(t *testing.T) {
	modes := []uring.Mode{uring.ModeAuto, uring.ModePwrite}
	if uring.Available() {
		modes = append(modes, uring.ModeUring)
	}
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			o := DefaultOptions(t.TempDir())
			o.FS = vfs.NewOS()
			o.WriterMode = mode
			o.MaxFileSize = 64 << 10
			j := mustOpen(t, o)
			want := map[uring.Mode]string{uring.ModePwrite: "pwrite", uring.ModeUring: "io_uring", uring.ModeAuto: "pwrite"}[mode]
			if mode == uring.ModeAuto && uring.Available() {
				want = "io_uring+pwrite" // large groups through io_uring, small ones through pwrite
			}
			if j.WriterKind() != want {
				t.Fatalf("WriterKind = %q with %v, want %q", j.WriterKind(), mode, want)
			}
			recs := makeRecords(300, 500, 3)
			pos := appendAll(t, j, recs[:150])
			pos = append(pos, appendAll(t, j, recs[150:])...)
			if pos[len(pos)-1].FileID == pos[0].FileID {
				t.Fatal("no roll with MaxFileSize 64 KiB")
			}
			got, _ := replayAll(t, j, Position{})
			sameRecords(t, got, recs)
			if err := j.Checkpoint(pos[200]); err != nil {
				t.Fatal(err)
			}
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			j = mustOpen(t, o)
			got, _ = replayAll(t, j, j.LastMark())
			sameRecords(t, got, recs[201:])
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
