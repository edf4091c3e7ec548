package journal

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/internal/crc32c"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

var update = flag.Bool("update", false, "rewrite testdata/journal-v1.golden")

func TestRecordCodec(t *testing.T) {
	rec := Record{Type: Entry, LedgerID: -3, EntryID: 1 << 40, Payload: []byte("hello journal")}
	for _, tc := range []struct {
		name    string
		rec     Record
		corrupt func([]byte) []byte
		wantErr error // nil: decodes to rec
	}{
		{"ok", rec, nil, nil},
		{"empty payload", Record{Type: Fence, LedgerID: 9}, nil, nil},
		{"explicit lac", Record{Type: ExplicitLAC, LedgerID: 1, EntryID: -1, Payload: []byte{1, 2, 3}}, nil, nil},
		{"truncated payload", rec, func(b []byte) []byte { return b[:len(b)-1] }, errShort},
		{"truncated header", rec, func(b []byte) []byte { return b[:RecordHeaderSize-1] }, errShort},
		{"empty", rec, func(b []byte) []byte { return nil }, errZero},
		{"zero header", rec, func(b []byte) []byte { return make([]byte, 64) }, errZero},
		{"payload bit flip", rec, func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, errChecksum},
		{"seq bit flip", rec, func(b []byte) []byte { b[9] ^= 1; return b }, errChecksum},
		{"crc bit flip", rec, func(b []byte) []byte { b[0] ^= 1; return b }, errChecksum},
		{"ledger bit flip", rec, func(b []byte) []byte { b[30] ^= 0x80; return b }, errChecksum},
		{"bad type", rec, func(b []byte) []byte { b[20] = 9; return b }, errBadType},
		{"reserved set", rec, func(b []byte) []byte { b[22] = 1; return b }, errReserved},
		{"huge length", rec, func(b []byte) []byte { b[7] = 0xff; return b }, errTooLarge},
		{"lag past seq", rec, func(b []byte) []byte { b[19] = 0xff; return b }, errReserved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := AppendRecord([]byte("prefix"), 42, 2, tc.rec)[len("prefix"):]
			if len(b) != RecordHeaderSize+len(tc.rec.Payload) {
				t.Fatalf("encoded %d bytes, want %d", len(b), RecordHeaderSize+len(tc.rec.Payload))
			}
			if tc.corrupt != nil {
				b = tc.corrupt(bytes.Clone(b))
			}
			if tc.wantErr != nil {
				_, _, _, err := decodeRecord(b)
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("decodeRecord = %v, want %v", err, tc.wantErr)
				}
				if _, _, _, _, err := DecodeRecord(b); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("DecodeRecord = %v, want ErrCorrupt", err)
				}
				return
			}
			rest, h, got, err := decodeRecord(append(b, "tail"...))
			if err != nil {
				t.Fatalf("decodeRecord = %v", err)
			}
			if string(rest) != "tail" || h.Seq != 42 || h.GroupLag != 2 || h.groupFirst() != 40 {
				t.Fatalf("rest %q seq %d lag %d", rest, h.Seq, h.GroupLag)
			}
			if got.Type != tc.rec.Type || got.LedgerID != tc.rec.LedgerID || got.EntryID != tc.rec.EntryID || !bytes.Equal(got.Payload, tc.rec.Payload) {
				t.Fatalf("decodeRecord = %+v, want %+v", got, tc.rec)
			}
		})
	}
}

func TestFileHeaderCodec(t *testing.T) {
	h := fileHeader{FileID: 0x18795c6b58c, BaseSeq: 12345}
	for _, tc := range []struct {
		name    string
		corrupt func([]byte) []byte
		wantErr bool
	}{
		{"ok", nil, false},
		{"short", func(b []byte) []byte { return b[:FileHeaderSize-1] }, true},
		{"magic", func(b []byte) []byte { b[1] = 'x'; return b }, true},
		{"version", func(b []byte) []byte { b[4] = 2; return b }, true},
		{"id bit flip", func(b []byte) []byte { b[8] ^= 1; return b }, true},
		{"crc", func(b []byte) []byte { b[31] ^= 1; return b }, true},
	} {
		b := appendFileHeader(nil, h)
		if tc.corrupt != nil {
			b = tc.corrupt(b)
		}
		rest, got, err := decodeFileHeader(append(b, 7))
		if tc.wantErr {
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: decodeFileHeader = %v, want ErrCorrupt", tc.name, err)
			}
			continue
		}
		if err != nil || got != h || len(rest) != 1 {
			t.Errorf("%s: decodeFileHeader = %+v, %v, rest %d; want %+v", tc.name, got, err, len(rest), h)
		}
	}
}

func TestMarkCodec(t *testing.T) {
	m := Position{FileID: 77, Offset: 1 << 33}
	b := appendMark(nil, m)
	if _, got, err := decodeMark(b); err != nil || got != m {
		t.Fatalf("decodeMark = %v, %v; want %v", got, err, m)
	}
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 0x10
		if _, _, err := decodeMark(c); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decodeMark with byte %d flipped = %v, want ErrCorrupt", i, err)
		}
	}
	// A damaged lastMark file stops Open.
	fs := vfs.NewMem()
	fs.MkdirAll(testDir, 0o755)
	writeFile(t, fs, path.Join(testDir, markName), b[:10])
	if _, err := Open(testOptions(fs)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open with a short lastMark = %v, want ErrCorrupt", err)
	}
}

// goldenRecords are the records of testdata/journal-v1.golden, written in
// groups of three.
func goldenRecords() []Record {
	return []Record{
		{Type: MasterKey, LedgerID: 1, EntryID: -1, Payload: []byte("master-key-0123456789abcdef")},
		{Type: Entry, LedgerID: 1, EntryID: 0, Payload: []byte("first entry")},
		{Type: Entry, LedgerID: 1, EntryID: 1, Payload: bytes.Repeat([]byte{0xab}, 100)},
		{Type: ExplicitLAC, LedgerID: 1, EntryID: 1, Payload: []byte{0, 0, 0, 0, 0, 0, 0, 1}},
		{Type: Entry, LedgerID: 2, EntryID: 0, Payload: nil},
		{Type: Fence, LedgerID: 1, EntryID: -1},
	}
}

const goldenPath = "testdata/journal-v1.golden"

// writeGolden produces the golden journal file with the real writer,
// the golden records added in two groups of three by appendGroup (which
// waits for their completions).
func writeGolden(t *testing.T, appendGroup func(j *Journal, recs []Record)) []byte {
	fs := vfs.NewMem()
	o := testOptions(fs)
	o.MaxGroupWait = time.Hour
	o.MaxGroupEntries = 3
	j := mustOpen(t, o)
	recs := goldenRecords()
	appendGroup(j, recs[:3])
	appendGroup(j, recs[3:])
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	_, b := journalFile(t, fs, 0)
	return b
}

// TestGoldenWriteWithCRC: AppendWithCRC writes the golden bytes too.
func TestGoldenWriteWithCRC(t *testing.T) {
	got := writeGolden(t, func(j *Journal, recs []Record) {
		ch := make(chan error, len(recs))
		for _, r := range recs {
			j.AppendWithCRC(r, crc32c.Checksum(r.Payload), CompletionFunc(func(_ Position, err error) { ch <- err }))
		}
		for range recs {
			if err := <-ch; err != nil {
				t.Fatal(err)
			}
		}
	})
	want, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendWithCRC output (%d bytes) differs from %s (%d bytes)", len(got), goldenPath, len(want))
	}
}

func TestGoldenWrite(t *testing.T) {
	got := writeGolden(t, func(j *Journal, recs []Record) { appendAll(t, j, recs) })
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
		t.Fatalf("writer output (%d bytes) differs from %s (%d bytes): format changed?", len(got), goldenPath, len(want))
	}
}

func TestGoldenRead(t *testing.T) {
	b, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	fs := vfs.NewMem()
	fs.MkdirAll(testDir, 0o755)
	writeFile(t, fs, path.Join(testDir, fileName(1)), b)
	j := mustOpen(t, testOptions(fs))
	defer j.Close()
	got, pos := replayAll(t, j, Position{})
	sameRecords(t, got, goldenRecords())
	if last := pos[len(pos)-1]; last.FileID != 1 || last.Offset != int64(len(b))-RecordHeaderSize {
		t.Fatalf("last position %v, want 1:%d (before the mark record)", last, len(b)-RecordHeaderSize)
	}
	// Groups of three: lags 0,1,2,0,1,2, then the lone mark.
	rest := b[FileHeaderSize:]
	for i, want := range []uint32{0, 1, 2, 0, 1, 2, 0} {
		var seq uint64
		var lag uint32
		var rec Record
		rest, seq, lag, rec, err = DecodeRecord(rest)
		if err != nil || seq != uint64(i+1) || lag != want {
			t.Fatalf("record %d: seq %d lag %d err %v, want seq %d lag %d", i, seq, lag, err, i+1, want)
		}
		if i == 6 && rec.Type != typeMark {
			t.Fatalf("last record is %v, want mark", rec.Type)
		}
	}
	if len(rest) != 0 {
		t.Fatalf("%d bytes after the mark", len(rest))
	}
}

// FuzzReplay opens a journal directory holding one file with arbitrary
// bytes: Open and Replay must return (an error or records), never panic or
// hang, and a journal that opened once must reopen with the same records.
func FuzzReplay(f *testing.F) {
	g, err := os.ReadFile(goldenPath)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(g)
	f.Add(g[:len(g)-7])
	f.Add(g[:FileHeaderSize])
	f.Add(append(bytes.Clone(g), make([]byte, 300)...))
	for _, off := range []int{FileHeaderSize + 5, FileHeaderSize + 60, len(g) / 2, len(g) - 45} {
		c := bytes.Clone(g)
		c[off] ^= 0x41
		f.Add(c)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		fs := vfs.NewMem()
		fs.MkdirAll(testDir, 0o755)
		writeFile(t, fs, path.Join(testDir, fileName(1)), data)
		j, err := Open(testOptions(fs))
		if err != nil {
			return
		}
		first, _ := replayAll(t, j, Position{})
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		j, err = Open(testOptions(fs))
		if err != nil {
			t.Fatalf("reopen after a successful open: %v", err)
		}
		second, _ := replayAll(t, j, Position{})
		sameRecords(t, second, first)
		j.Close()
	})
}
