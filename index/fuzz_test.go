package index

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/fuzzpatch"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// FuzzIndexLoad: Open over a variant of the golden metadata file and of
// the golden first segment (with the golden second segment, if segs says
// so), then reads, a Set and a Flush, returns errors and never panics or
// hangs. With reseal the patched metadata (less its old checksum) gets a
// valid checksum, so the fuzzer reaches the decoder behind it.
//
// The inputs are short patch programs (internal/fuzzpatch: truncation,
// XOR patches at any offset, a raw tail) applied to the golden files:
// with whole files as inputs each new input cost up to a minute of
// minimization (1,211 execs in 75 s at the default settings).
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
	truncTo := func(b []byte, n int) []byte { return []byte{fuzzpatch.Truncate | byte(n*128/len(b))} }
	f.Add([]byte(nil), []byte(nil), true, false)
	f.Add(truncTo(meta, 40), []byte(nil), true, false)
	f.Add(truncTo(meta, len(meta)-4), truncTo(seg0, 100), false, true)
	f.Add([]byte(nil), truncTo(seg0, SegmentHeaderSize+10), true, false)
	f.Add(fuzzpatch.Program(0, fuzzpatch.Patch(8, 0xff)), fuzzpatch.Program(0, fuzzpatch.Patch(SegmentHeaderSize+3, 0x10)), true, true)
	f.Fuzz(func(t *testing.T, metaProg, seg0Prog []byte, seg1, resealMeta bool) {
		b, s0 := fuzzpatch.Apply(meta, metaProg), fuzzpatch.Apply(seg0, seg0Prog)
		if resealMeta && len(b) >= 4 {
			b = reseal(b[:len(b)-4])
		}
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
