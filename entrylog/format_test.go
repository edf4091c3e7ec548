package entrylog

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestHeaderCodec(t *testing.T) {
	good := Header{Version: Version, MapOffset: 4096, LedgerCount: 3, MapLength: 72}
	cases := []struct {
		name         string
		corrupt      func([]byte) []byte
		wantErr      bool
		wantMapValid bool
		want         Header
	}{
		{name: "ok", corrupt: func(b []byte) []byte { return b }, wantMapValid: true, want: good},
		{name: "short", corrupt: func(b []byte) []byte { return b[:HeaderSize-1] }, wantErr: true},
		{name: "bad magic", corrupt: func(b []byte) []byte { b[0] ^= 1; return b }, wantErr: true},
		{name: "bad version", corrupt: func(b []byte) []byte { b[4] = 2; return b }, wantErr: true},
		// A torn header patch: the map is ignored, not an error.
		{name: "bad map offset crc", corrupt: func(b []byte) []byte { b[9] ^= 1; return b }, want: Header{Version: Version}},
		{name: "bad crc", corrupt: func(b []byte) []byte { b[25] ^= 1; return b }, want: Header{Version: Version}},
		{name: "padding ignored", corrupt: func(b []byte) []byte { b[500] = 7; return b }, wantMapValid: true, want: good},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := AppendHeader(nil, good)
			if len(b) != HeaderSize {
				t.Fatalf("len(AppendHeader) = %d, want %d", len(b), HeaderSize)
			}
			_, h, mapValid, err := DecodeHeader(tc.corrupt(b))
			if gotErr := err != nil; gotErr != tc.wantErr {
				t.Fatalf("DecodeHeader err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("DecodeHeader err = %v, want ErrCorrupt", err)
				}
				return
			}
			if h != tc.want || mapValid != tc.wantMapValid {
				t.Fatalf("DecodeHeader = %+v, %v, want %+v, %v", h, mapValid, tc.want, tc.wantMapValid)
			}
		})
	}
}

func TestRecordCodec(t *testing.T) {
	cases := []struct {
		name    string
		corrupt func([]byte) []byte
		wantErr bool
	}{
		{name: "ok", corrupt: func(b []byte) []byte { return b }},
		{name: "truncated header", corrupt: func(b []byte) []byte { return b[:10] }, wantErr: true},
		{name: "truncated payload", corrupt: func(b []byte) []byte { return b[:RecordHeaderSize+4] }, wantErr: true},
		{name: "length grown", corrupt: func(b []byte) []byte { b[0]--; return b }, wantErr: true},
		{name: "crc", corrupt: func(b []byte) []byte { b[4] ^= 0x80; return b }, wantErr: true},
		{name: "ledger id", corrupt: func(b []byte) []byte { b[8] ^= 1; return b }, wantErr: true},
		{name: "entry id", corrupt: func(b []byte) []byte { b[16] ^= 1; return b }, wantErr: true},
		{name: "payload", corrupt: func(b []byte) []byte { b[RecordHeaderSize] ^= 1; return b }, wantErr: true},
		{name: "negative ledger", corrupt: func(b []byte) []byte {
			return AppendRecord(nil, -5, 1, []byte("hello"))
		}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := AppendRecord([]byte("prefix"), 7, 42, []byte("hello"))[6:]
			b = append(b, "tail"...)
			rest, ledger, entry, payload, err := DecodeRecord(tc.corrupt(b))
			if gotErr := err != nil; gotErr != tc.wantErr {
				t.Fatalf("DecodeRecord err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("DecodeRecord err = %v, want ErrCorrupt", err)
				}
				return
			}
			if ledger != 7 || entry != 42 || string(payload) != "hello" || string(rest) != "tail" {
				t.Fatalf("DecodeRecord = %d, %d, %q, rest %q; want 7, 42, hello, tail", ledger, entry, payload, rest)
			}
		})
	}
}

func TestLedgersMapCodec(t *testing.T) {
	many := make([]Pair, mapPairsPerRecord+10)
	for i := range many {
		many[i] = Pair{int64(i), uint64(i * 3)}
	}
	cases := []struct {
		name    string
		pairs   []Pair
		count   uint32
		corrupt func([]byte) []byte
		wantErr bool
	}{
		{name: "empty", count: 0},
		{name: "one", pairs: []Pair{{5, 100}}, count: 1},
		{name: "two records", pairs: many, count: uint32(len(many))},
		{name: "count too small", pairs: []Pair{{5, 100}, {6, 1}}, count: 1, wantErr: true},
		{name: "count too large", pairs: []Pair{{5, 100}}, count: 2, wantErr: true},
		{name: "bad crc", pairs: []Pair{{5, 100}}, count: 1, corrupt: func(b []byte) []byte { b[30] ^= 1; return b }, wantErr: true},
		{name: "truncated", pairs: many, count: uint32(len(many)), corrupt: func(b []byte) []byte { return b[:len(b)-20] }, wantErr: true},
		{name: "not a map record", count: 1, corrupt: func([]byte) []byte {
			return AppendRecord(nil, 3, 0, make([]byte, 16))
		}, wantErr: true},
		{name: "odd payload", count: 1, corrupt: func([]byte) []byte {
			return AppendRecord(nil, MapLedgerID, 0, make([]byte, 15))
		}, wantErr: true},
		{name: "negative ledger", count: 1, corrupt: func([]byte) []byte {
			return AppendLedgersMap(nil, []Pair{{-3, 1}})
		}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := AppendLedgersMap(nil, tc.pairs)
			if tc.corrupt != nil {
				b = tc.corrupt(b)
			}
			_, ps, err := DecodeLedgersMap(b, tc.count)
			m := pairsMap(t, ps)
			if gotErr := err != nil; gotErr != tc.wantErr {
				t.Fatalf("DecodeLedgersMap err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("DecodeLedgersMap err = %v, want ErrCorrupt", err)
				}
				return
			}
			if len(m) != len(tc.pairs) {
				t.Fatalf("DecodeLedgersMap: %d ledgers, want %d", len(m), len(tc.pairs))
			}
			for _, p := range tc.pairs {
				if m[p.Ledger] != p.Bytes {
					t.Fatalf("DecodeLedgersMap[%d] = %d, want %d", p.Ledger, m[p.Ledger], p.Bytes)
				}
			}
		})
	}
}

func TestFileName(t *testing.T) {
	for _, id := range []uint32{0, 1, 0xabc, 0xffffffff} {
		got, ok := ParseFileName(FileName(id))
		if !ok || got != id {
			t.Fatalf("ParseFileName(FileName(%d)) = %d, %v", id, got, ok)
		}
	}
	for _, name := range []string{"1.log", "0000000g.log", "00000001.idx", "000000001.log"} {
		if _, ok := ParseFileName(name); ok {
			t.Fatalf("ParseFileName(%q) ok, want not a log", name)
		}
	}
	if id, off := SplitLocation(Location(7, 1234)); id != 7 || off != 1234 {
		t.Fatalf("SplitLocation(Location(7, 1234)) = %d, %d", id, off)
	}
}

// goldenEntries is what testdata/00000001.log holds.
var goldenEntries = []struct {
	ledger, entry int64
	payload       string
}{
	{1, 0, "first"}, {2, 0, ""}, {1, 1, "second entry of ledger one"}, {3, 7, "x"}, {2, 1, "ledger two"},
}

func writeGolden(t testing.TB, fs vfs.FS) {
	l, err := Open(Options{FS: fs, Dirs: []string{"/d"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range goldenEntries {
		if _, err := l.Add(e.ledger, e.entry, []byte(e.payload)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func readMem(t testing.TB, fs vfs.FS, path string) []byte {
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

func writeMem(t testing.TB, fs vfs.FS, path string, b []byte) {
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

const goldenPath = "testdata/00000001.log"

// TestGolden: the writer reproduces the golden file byte for byte and the
// reader reads it.
func TestGolden(t *testing.T) {
	fs := vfs.NewMem()
	writeGolden(t, fs)
	got := readMem(t, fs, "/d/00000001.log")
	if *update {
		if err := os.WriteFile(goldenPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("writer output (%d bytes) differs from %s (%d bytes): format changed? (-update rewrites)", len(got), goldenPath, len(want))
	}

	rfs := vfs.NewMem()
	writeMem(t, rfs, "/r/00000001.log", want)
	var got2 []string
	if err := ScanFile(rfs, "/r/00000001.log", func(r Record) error {
		got2 = append(got2, fmt.Sprintf("%d:%d:%s", r.Ledger, r.Entry, r.Payload))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var want2 []string
	for _, e := range goldenEntries {
		want2 = append(want2, fmt.Sprintf("%d:%d:%s", e.ledger, e.entry, e.payload))
	}
	if fmt.Sprint(got2) != fmt.Sprint(want2) {
		t.Fatalf("ScanFile(golden) = %v, want %v", got2, want2)
	}
	h, hm, err := ReadFileInfo(rfs, "/r/00000001.log")
	if err != nil || h.LedgerCount != 3 || len(hm) != 3 {
		t.Fatalf("ReadFileInfo(golden) = %+v, %v, %v; want 3 ledgers", h, hm, err)
	}
	l, err := Open(Options{FS: rfs, Dirs: []string{"/r"}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m, err := l.LedgerBytes(1)
	if err != nil {
		t.Fatal(err)
	}
	wantBytes := map[int64]uint64{}
	for _, e := range goldenEntries {
		wantBytes[e.ledger] += uint64(RecordHeaderSize + len(e.payload))
	}
	if fmt.Sprint(pairsMap(t, m)) != fmt.Sprint(wantBytes) {
		t.Fatalf("LedgerBytes(golden) = %v, want %v", m, wantBytes)
	}
}

// TestLedgersMapDecodeMerges: a map listing ledgers out of order or one
// twice (not what a seal writes, but what a file may hold) decodes sorted,
// the bytes of a repeated ledger summed, with no spare capacity kept.
func TestLedgersMapDecodeMerges(t *testing.T) {
	in := []Pair{{9, 1}, {5, 100}, {9, 2}, {1, 7}, {5, 1}}
	_, ps, err := DecodeLedgersMap(AppendLedgersMap(nil, in), uint32(len(in)))
	if err != nil {
		t.Fatal(err)
	}
	want := []Pair{{1, 7}, {5, 101}, {9, 3}}
	if !slices.Equal(ps, want) || cap(ps) != len(ps) {
		t.Fatalf("decoded %v (cap %d), want %v", ps, cap(ps), want)
	}
}

// pairsMap is ps as a map, after checking that ps is sorted by ledger
// with each ledger once, as LedgerBytes and DecodeLedgersMap promise.
func pairsMap(t *testing.T, ps []Pair) map[int64]uint64 {
	t.Helper()
	m := make(map[int64]uint64, len(ps))
	for i, p := range ps {
		if i > 0 && ps[i-1].Ledger >= p.Ledger {
			t.Fatalf("pairs not sorted by ledger, each once: %v", ps)
		}
		m[p.Ledger] = p.Bytes
	}
	return m
}
