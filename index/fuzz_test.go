package index

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// FuzzIndexLoad: Open over an arbitrary metadata file (with the golden
// segments), then reads, a Set and a Flush, returns errors and never
// panics or hangs.
func FuzzIndexLoad(f *testing.F) {
	files := map[string][]byte{}
	for _, name := range goldenFiles {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		files[name] = b
	}
	meta := files[MetaFile]
	f.Add(meta, uint8(2))
	f.Add(meta[:40], uint8(2))
	f.Add(reseal(append([]byte(nil), meta[:len(meta)-4]...)), uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, segs uint8) {
		fs := vfs.NewMem()
		writeAll(t, fs, "/ix/"+MetaFile, b)
		for i := range min(int(segs), 2) {
			name := goldenFiles[i]
			writeAll(t, fs, "/ix/"+name, files[name])
		}
		ix, err := Open(Options{FS: fs, Dir: "/ix"})
		if err != nil {
			return
		}
		for _, l := range ix.Ledgers() {
			last, _ := ix.LastEntry(l)
			for e := int64(0); e <= min(last, 64); e++ {
				ix.Get(l, e)
			}
			ix.GetMeta(l)
		}
		if err := ix.Set(1, 3, 77); err != nil {
			t.Fatalf("Set on a loaded index = %v", err)
		}
		if err := ix.Flush(); err != nil {
			t.Fatalf("Flush on a loaded index = %v", err)
		}
		if err := ix.Close(); err != nil {
			t.Fatalf("Close = %v", err)
		}
		if _, err := Open(Options{FS: fs, Dir: "/ix"}); err != nil {
			t.Fatalf("reopen after Flush = %v", err)
		}
	})
}
