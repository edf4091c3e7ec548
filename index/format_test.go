package index

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestSegmentHeaderCodec(t *testing.T) {
	good := SegmentHeader{SlotsPerPage: 512, PagesPerSegment: 100, Segment: 3}
	cases := []struct {
		name    string
		corrupt func([]byte) []byte
		wantErr bool
	}{
		{name: "ok", corrupt: func(b []byte) []byte { return b }},
		{name: "short", corrupt: func(b []byte) []byte { return b[:100] }, wantErr: true},
		{name: "magic", corrupt: func(b []byte) []byte { b[0] = 'X'; return b }, wantErr: true},
		{name: "version", corrupt: func(b []byte) []byte { b[4] = 9; return b }, wantErr: true},
		{name: "slots", corrupt: func(b []byte) []byte { b[8] ^= 1; return b }, wantErr: true},
		{name: "crc", corrupt: func(b []byte) []byte { b[21] ^= 1; return b }, wantErr: true},
		{name: "zero geometry", corrupt: func([]byte) []byte { return AppendSegmentHeader(nil, SegmentHeader{}) }, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := AppendSegmentHeader(nil, good)
			if len(b) != SegmentHeaderSize {
				t.Fatalf("len(AppendSegmentHeader) = %d, want %d", len(b), SegmentHeaderSize)
			}
			_, h, err := DecodeSegmentHeader(tc.corrupt(b))
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, ErrCorrupt)) {
				t.Fatalf("DecodeSegmentHeader err = %v, want error %v (ErrCorrupt)", err, tc.wantErr)
			}
			if err == nil && h != good {
				t.Fatalf("DecodeSegmentHeader = %+v, want %+v", h, good)
			}
		})
	}
}

func TestMetaCodec(t *testing.T) {
	hdr := metaHeader{SlotsPerPage: 4, PagesPerSegment: 8, Segments: 1}
	recs := []ledgerRecord{
		{ID: 1, Meta: Meta{Fenced: true, MasterKey: []byte("key"), ExplicitLAC: []byte("lac")}, Pages: []uint32{1, 0, 3}},
		{ID: 9, Meta: Meta{MasterKey: []byte("k2")}, Pages: []uint32{}},
		{ID: 10, Meta: Meta{ExplicitLAC: []byte{}}, Pages: []uint32{2}},
	}
	// Offsets into the encoding of recs[0].
	const rec0 = metaHeaderLen
	cases := []struct {
		name    string
		corrupt func([]byte) []byte
		wantErr bool
	}{
		{name: "ok", corrupt: func(b []byte) []byte { return b }},
		{name: "short", corrupt: func(b []byte) []byte { return b[:10] }, wantErr: true},
		{name: "magic", corrupt: func(b []byte) []byte { b[1] = 'x'; return b }, wantErr: true},
		{name: "version", corrupt: func(b []byte) []byte { b[4] = 3; return b }, wantErr: true},
		{name: "crc", corrupt: func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, wantErr: true},
		{name: "body bit flip", corrupt: func(b []byte) []byte { b[rec0+3] ^= 1; return b }, wantErr: true},
		{name: "truncated", corrupt: func(b []byte) []byte { return reseal(b[:len(b)-9]) }, wantErr: true},
		{name: "trailing bytes", corrupt: func(b []byte) []byte { return reseal(append(b[:len(b)-4:len(b)-4], 0, 0, 0)) }, wantErr: true},
		{name: "ledger count", corrupt: func(b []byte) []byte { b[20] = 200; return reseal(b[:len(b)-4]) }, wantErr: true},
		{name: "unknown flag", corrupt: func(b []byte) []byte { b[rec0+8] |= 0x80; return reseal(b[:len(b)-4]) }, wantErr: true},
		{name: "negative ledger", corrupt: func(b []byte) []byte { b[rec0+7] = 0x80; return reseal(b[:len(b)-4]) }, wantErr: true},
		{name: "key length", corrupt: func(b []byte) []byte { b[rec0+9] = 0xff; return reseal(b[:len(b)-4]) }, wantErr: true},
		{name: "geometry", corrupt: func(b []byte) []byte { clear(b[8:12]); return reseal(b[:len(b)-4]) }, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := appendMeta(nil, hdr, recs)
			h, got, err := decodeMeta(tc.corrupt(b))
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, ErrCorrupt)) {
				t.Fatalf("decodeMeta err = %v, want error %v (ErrCorrupt)", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			hdr.Ledgers = uint32(len(recs))
			if h != hdr || !reflect.DeepEqual(got, recs) {
				t.Fatalf("decodeMeta = %+v %+v, want %+v %+v", h, got, hdr, recs)
			}
		})
	}
}

// reseal appends a fresh checksum to a metadata body.
func reseal(body []byte) []byte {
	return appendMetaCRC(append([]byte(nil), body...))
}

func readAll(t testing.TB, fs vfs.FS, path string) []byte {
	t.Helper()
	b, err := readFile(Options{FS: fs}, path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeAll(t testing.TB, fs vfs.FS, path string, b []byte) {
	t.Helper()
	if err := fs.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

var goldenFiles = []string{"00000000.seg", "00000001.seg", MetaFile, MetaLogFile}

// goldenState builds the index the golden files hold: 4 slots per page, 4
// pages per segment, two segments, a deleted ledger's pages reused.
func goldenState(t testing.TB, ix *Index) {
	t.Helper()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for e := range int64(10) {
		must(ix.Set(1, e, 0x1_0000_0400+uint64(e)*100))
	}
	must(ix.Set(2, 5, 0x2_0000_0400))
	must(ix.SetMeta(2, Meta{Fenced: true, MasterKey: []byte("master-key"), ExplicitLAC: []byte{1, 2, 3}}))
	must(ix.SetMeta(3, Meta{MasterKey: []byte("k3")}))
	must(ix.Set(7, 0, 0x3_0000_0400))
	must(ix.Flush())
	must(ix.Delete(7))
	must(ix.Flush())
	must(ix.Set(4, 2, 0x4_0000_0400)) // reuses ledger 7's page
	must(ix.Flush())
}

func goldenGets() map[[2]int64]uint64 {
	want := map[[2]int64]uint64{}
	for e := range int64(10) {
		want[[2]int64{1, e}] = 0x1_0000_0400 + uint64(e)*100
	}
	want[[2]int64{2, 5}] = 0x2_0000_0400
	want[[2]int64{4, 2}] = 0x4_0000_0400
	return want
}

func TestGolden(t *testing.T) {
	fs := vfs.NewMem()
	ix, err := Open(Options{FS: fs, Dir: "/ix", SlotsPerPage: 4, PagesPerSegment: 4})
	if err != nil {
		t.Fatal(err)
	}
	goldenState(t, ix)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range goldenFiles {
		got := readAll(t, fs, "/ix/"+name)
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("writer output for %s (%d bytes) differs from %s (%d bytes): format changed? (-update rewrites)", name, len(got), path, len(want))
		}
	}

	checkGolden(t, "testdata", goldenFiles)
}

// TestGoldenV1: an index written with version 1 of the metadata file (no
// generation, no log) opens with the same content, and its first Flush
// with a change moves it to a version 2 snapshot and a log.
func TestGoldenV1(t *testing.T) {
	ix := checkGolden(t, filepath.Join("testdata", "v1"), []string{"00000000.seg", "00000001.seg", MetaFile})
	if err := ix.Set(5, 0, 0x5_0000_0400); err != nil {
		t.Fatal(err)
	}
	if err := ix.Flush(); err != nil {
		t.Fatal(err)
	}
	h, _, err := decodeMeta(readAll(t, ix.opts.FS, "/r/"+MetaFile))
	if err != nil || h.Generation != 1 {
		t.Fatalf("after a flush: generation %d, %v", h.Generation, err)
	}
}

// checkGolden opens an index made of the files in dir and checks the
// golden state; the index is closed when the test ends.
func checkGolden(t *testing.T, dir string, files []string) *Index {
	t.Helper()
	rfs := vfs.NewMem()
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		writeAll(t, rfs, "/r/"+name, b)
	}
	ix, err := Open(Options{FS: rfs, Dir: "/r"}) // geometry comes from the files
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	if got := fmt.Sprint(ix.Ledgers()); got != "[1 2 3 4]" {
		t.Fatalf("Ledgers() = %s, want [1 2 3 4]", got)
	}
	for k, want := range goldenGets() {
		if got, ok := ix.Get(k[0], k[1]); !ok || got != want {
			t.Fatalf("Get(%d, %d) = %#x, %v, want %#x", k[0], k[1], got, ok, want)
		}
	}
	if _, ok := ix.Get(1, 10); ok {
		t.Fatal("Get(1, 10) found an entry never set")
	}
	for ledger, want := range map[int64]int64{1: 9, 2: 5, 3: -1, 4: 2} {
		if got, ok := ix.LastEntry(ledger); !ok || got != want {
			t.Fatalf("LastEntry(%d) = %d, %v, want %d", ledger, got, ok, want)
		}
	}
	m, ok := ix.GetMeta(2)
	if !ok || !m.Fenced || string(m.MasterKey) != "master-key" || !bytes.Equal(m.ExplicitLAC, []byte{1, 2, 3}) {
		t.Fatalf("GetMeta(2) = %+v, %v", m, ok)
	}
	return ix
}
