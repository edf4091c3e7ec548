package fuzz

import (
	"path"
	"testing"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/entrylog"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// entryLogFromProgram encodes an entry log with valid framing and CRCs from
// a byte program, 3 bytes per record: ledger id (-2..5; -1 is the
// ledgers-map id), entry id (-128..127, or 2^40 for 0x7f), payload size.
// With seal, a ledgers map built from the (honest or, with lie, wrong)
// byte counts follows and the header points at it. It returns the payload
// each plausible (ledger, entry) should serve (a later copy wins).
func entryLogFromProgram(prog []byte, seal, lie bool) ([]byte, map[ekey][]byte) {
	out := entrylog.AppendHeader(nil, entrylog.Header{Version: 1})
	want := map[ekey][]byte{}
	bytes := map[int64]uint64{}
	for i := 0; i+3 <= len(prog) && i < 3*512; i += 3 {
		l, e := int64(int8(prog[i]))%4-1, int64(int8(prog[i+1]))
		if prog[i+1] == 0x7f {
			e = 1 << 40
		}
		p := make([]byte, prog[i+2])
		for j := range p {
			p[j] = byte(i ^ j)
		}
		start := len(out)
		out = entrylog.AppendRecord(out, l, e, p)
		if l >= 0 {
			bytes[l] += uint64(len(out) - start)
			if e >= 0 && e < 1<<20 {
				want[ekey{l, e}] = p
			}
		}
	}
	if !seal {
		return out, want
	}
	var pairs []entrylog.Pair
	for l := int64(0); l < 8; l++ {
		if n, ok := bytes[l]; ok {
			if lie {
				n = n/2 + 7
			}
			pairs = append(pairs, entrylog.Pair{Ledger: l, Bytes: n})
		}
	}
	mapOff := len(out)
	out = entrylog.AppendLedgersMap(out, pairs)
	h := entrylog.AppendHeader(nil, entrylog.Header{Version: 1, MapOffset: uint64(mapOff),
		LedgerCount: uint32(len(pairs)), MapLength: uint32(len(out) - mapOff)})
	copy(out, h)
	return out, want
}

// FuzzEntryLogRecords is the structure-aware sibling of
// FuzzEntryLogDirOpen: the entry log has valid framing, CRCs and (maybe) a
// ledgers map, so RebuildIndex and GC meet odd records rather than
// checksum failures. After a successful RebuildIndex and Open, every
// plausible (ledger, entry) reads back as its last copy, before and after
// GC (which may fail only when the map lies about the byte counts), and
// nothing panics or hangs.
func FuzzEntryLogRecords(f *testing.F) {
	f.Add([]byte{1, 0, 10, 1, 1, 20, 2, 0, 5}, true, false)
	f.Add([]byte{1, 0, 10, 1, 0, 30, 3, 0x7f, 1, 0xff, 3, 3}, false, false)
	f.Add([]byte{0, 0, 200, 2, 9, 0, 1, 0xf0, 4}, true, true)
	f.Fuzz(func(t *testing.T, prog []byte, seal, lie bool) {
		log, want := entryLogFromProgram(prog, seal, lie)
		fs := vfs.NewMem()
		writeMemFile(t, fs, path.Join(fzLedgerDir, fzEntryLog), log)
		var err error
		withDeadline(t, "RebuildIndex", func() { _, err = bookie.RebuildIndex(fuzzOptions(fs), nil) })
		if err != nil {
			return
		}
		var b *bookie.Bookie
		withDeadline(t, "Open", func() { b, err = bookie.Open(fuzzOptions(fs)) })
		if err != nil {
			t.Fatalf("Open after a successful RebuildIndex = %v", err)
		}
		withDeadline(t, "reads, GC and close", func() {
			defer b.Close()
			for k, p := range want {
				got, err := b.ReadEntry(k.l, k.e)
				if err != nil || string(got) != string(p) {
					t.Errorf("entry %d/%d of the rebuilt log: ReadEntry = %d bytes, %v; want %d bytes", k.l, k.e, len(got), err, len(p))
				}
			}
			if err := b.GC(); err != nil && !lie {
				t.Errorf("GC over valid records = %v", err)
			}
			for k, p := range want {
				got, err := b.ReadEntry(k.l, k.e)
				if err != nil || string(got) != string(p) {
					t.Errorf("entry %d/%d after GC: ReadEntry = %d bytes, %v", k.l, k.e, len(got), err)
				}
			}
		})
	})
}
