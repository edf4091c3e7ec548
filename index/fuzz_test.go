package index

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// FuzzIndexLoad: Open over an arbitrary metadata file and an arbitrary
// first segment (with the golden second segment, if segs says so), then
// reads, a Set and a Flush, returns errors and never panics or hangs.
func FuzzIndexLoad(f *testing.F) {
	files := map[string][]byte{}
	for _, name := range goldenFiles {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		files[name] = b
	}
	meta, seg0 := files[MetaFile], files[goldenFiles[0]]
	f.Add(meta, seg0, true)
	f.Add(meta[:40], seg0, true)
	f.Add(reseal(append([]byte(nil), meta[:len(meta)-4]...)), seg0[:100], false)
	f.Add(meta, seg0[:SegmentHeaderSize+10], true)
	f.Fuzz(func(t *testing.T, b, s0 []byte, seg1 bool) {
		fs := vfs.NewMem()
		writeAll(t, fs, "/ix/"+MetaFile, b)
		if len(s0) > 0 {
			writeAll(t, fs, "/ix/"+goldenFiles[0], s0)
		}
		if seg1 {
			writeAll(t, fs, "/ix/"+goldenFiles[1], files[goldenFiles[1]])
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
