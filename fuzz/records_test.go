package fuzz

import (
	"encoding/binary"
	"errors"
	"path"
	"testing"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/journal"
)

// journalFromProgram encodes a journal file with valid checksums from a
// byte program, 4 bytes per record: type and group boundary, ledger id
// (-7..7), entry id (-128..127, or 2^40 for 0x7f), payload size/shape.
// The file header is the real bookie's (file 1, base sequence 1). It
// returns the file and the payload each (ledger, entry) of a valid id
// should serve, last write wins.
func journalFromProgram(header, prog []byte) ([]byte, map[ekey][]byte) {
	out := append([]byte(nil), header...)
	want := map[ekey][]byte{}
	seq, lag := uint64(1), uint32(0)
	for i := 0; i+4 <= len(prog) && i < 4*512; i += 4 {
		b0, b1, b2, b3 := prog[i], prog[i+1], prog[i+2], prog[i+3]
		if b0&0x80 != 0 {
			lag = 0 // a new group starts with this record
		}
		rec := journal.Record{
			Type:     journal.RecordType(1 + b0%4),
			LedgerID: int64(int8(b1)) % 8,
			EntryID:  int64(int8(b2)),
		}
		if b2 == 0x7f {
			rec.EntryID = 1 << 40
		}
		switch rec.Type {
		case journal.Entry:
			rec.Payload = make([]byte, b3)
			for j := range rec.Payload {
				rec.Payload[j] = byte(i + j)
			}
			if rec.LedgerID >= 0 && rec.EntryID >= 0 && rec.EntryID < 1<<20 {
				want[ekey{rec.LedgerID, rec.EntryID}] = rec.Payload
			}
		case journal.MasterKey:
			rec.Payload = []byte("key-"[:b3%5])
		case journal.ExplicitLAC:
			if b3%2 == 0 {
				rec.Payload = binary.BigEndian.AppendUint64(nil, uint64(rec.EntryID))
				rec.Payload = append(rec.Payload, "body"...)
			} else {
				rec.Payload = make([]byte, b3%16)
			}
		}
		out = journal.AppendRecord(out, seq, lag, rec)
		seq++
		lag++
	}
	return out, want
}

// FuzzBookieJournalRecords is structure-aware: the journal it writes has
// valid framing and checksums, so the bookie's replay (not the journal's
// framing checks) meets odd records: negative ids, huge entry ids, entries
// of ledgers with no master key, empty keys, malformed explicit LACs.
// Open returns an error or opens; an opened bookie serves every entry
// record with a plausible id (ledger >= 0, 0 <= entry < 2^20) as the last
// payload written for it, and reopens serving the same state.
func FuzzBookieJournalRecords(f *testing.F) {
	j, _, _ := realBookieFiles(f)
	header := j[:journal.FileHeaderSize]
	f.Add([]byte{0x80, 1, 0, 10, 0, 1, 1, 20, 2, 1, 0, 0, 3, 1, 1, 2})
	f.Add([]byte{0x81, 2, 0, 3, 0x80, 2, 5, 9, 0x83, 2, 5, 2, 0, 0xff, 0x80, 7})
	f.Add([]byte{0x80, 3, 0x7f, 1, 0x80, 3, 0xf0, 1, 3, 0xf9, 0, 1})
	f.Fuzz(func(t *testing.T, prog []byte) {
		data, want := journalFromProgram(header, prog)
		fs := vfs.NewMem()
		writeMemFile(t, fs, path.Join(fzJournalDir, fzJournal), data)
		var b *bookie.Bookie
		var err error
		withDeadline(t, "Open", func() { b, err = bookie.Open(fuzzOptions(fs)) })
		if err != nil {
			return
		}
		var first, second string
		withDeadline(t, "reads, checkpoint, close and reopen", func() {
			for k, p := range want {
				got, err := b.ReadEntry(k.l, k.e)
				if err != nil || string(got) != string(p) {
					t.Errorf("entry %d/%d from the journal: ReadEntry = %d bytes, %v; want %d bytes", k.l, k.e, len(got), err, len(p))
				}
			}
			first = bookieState(b)
			if err := b.Checkpoint(); err != nil {
				t.Errorf("Checkpoint after a successful Open = %v", err)
			}
			if err := b.Close(); err != nil && !errors.Is(err, bookie.ErrClosed) {
				t.Errorf("Close = %v", err)
			}
			b, err = bookie.Open(fuzzOptions(fs))
			if err != nil {
				t.Fatalf("reopen after a successful open and close = %v", err)
			}
			second = bookieState(b)
			b.Close()
		})
		if first != second {
			t.Fatalf("state changed across a clean reopen:\nfirst:\n%s\nsecond:\n%s", first, second)
		}
	})
}
