package entrylog

import (
	"bytes"
	"errors"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// frame returns the record for (ledger, entry, p), its header encoded
// by PutRecordHeader (large payloads) or PutRecordFields and SetRecordCRC.
func frame(ledger, entry int64, p []byte) []byte {
	rec := make([]byte, RecordHeaderSize+len(p))
	copy(rec[RecordHeaderSize:], p)
	if len(p) >= FoldMin {
		PutRecordHeader(rec, ledger, entry, len(p), PayloadCRC(p))
	} else {
		PutRecordFields(rec, ledger, entry, len(p))
		SetRecordCRC(rec)
	}
	return rec
}

func TestRecordHeaderHelpersMatchAppendRecord(t *testing.T) {
	for _, n := range []int{0, 1, 100, FoldMin - 1, FoldMin, FoldMin + 1, 5000, 400 << 10} {
		p := payloadFor(3, int64(n), n)
		want := AppendRecord(nil, 3, int64(n), p)
		hdr := make([]byte, RecordHeaderSize)
		PutRecordHeader(hdr, 3, int64(n), n, PayloadCRC(p))
		if !bytes.Equal(hdr, want[:RecordHeaderSize]) {
			t.Fatalf("size %d: PutRecordHeader differs from AppendRecord", n)
		}
		rec := append(make([]byte, RecordHeaderSize), p...)
		PutRecordFields(rec, 3, int64(n), n)
		SetRecordCRC(rec)
		if !bytes.Equal(rec, want) {
			t.Fatalf("size %d: PutRecordFields+SetRecordCRC differ from AppendRecord", n)
		}
		if got := frame(3, int64(n), p); !bytes.Equal(got, want) {
			t.Fatalf("size %d: frame differs from AppendRecord", n)
		}
		if _, l, e, got, err := DecodeRecord(want); err != nil || l != 3 || e != int64(n) || !bytes.Equal(got, p) {
			t.Fatalf("size %d: DecodeRecord = %d:%d, %v", n, l, e, err)
		}
	}
}

// addRecords adds n entries through AddRecord (or Add for every third),
// sizes drawn from sizes, round robin over ledgers.
func addRecords(t testing.TB, l *Log, rng *rand.Rand, n, ledgers int, sizes []int, next map[int64]int64) []added {
	t.Helper()
	var out []added
	for i := range n {
		ledger := int64(rng.IntN(ledgers))
		entry := next[ledger]
		next[ledger]++
		p := payloadFor(ledger, entry, sizes[rng.IntN(len(sizes))])
		var loc uint64
		var err error
		if i%3 == 2 {
			loc, err = l.Add(ledger, entry, p)
		} else {
			loc, err = l.AddRecord(frame(ledger, entry, p))
		}
		if err != nil {
			t.Fatalf("add %d:%d = %v", ledger, entry, err)
		}
		out = append(out, added{ledger, entry, p, loc})
	}
	return out
}

var mixedSizes = []int{0, 10, 300, 3000, DirectWriteMin - RecordHeaderSize, DirectWriteMin, 40 << 10, 150 << 10}

func TestAddRecordReadBackAndReopen(t *testing.T) {
	fs := vfs.NewMem()
	opts := func(o *Options) { o.LogSizeLimit = 1 << 20; o.WriteBufferSize = 8 << 10 }
	l := mustOpen(t, fs, opts)
	rng := rand.New(rand.NewPCG(5, 6))
	all := addRecords(t, l, rng, 200, 3, mixedSizes, map[int64]int64{})
	checkAll(t, l, all) // from the buffer and the files
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	checkAll(t, l, all)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	r := mustOpen(t, fs, opts)
	defer r.Close()
	checkAll(t, r, all)
	n := 0
	for _, info := range r.Logs() {
		if err := r.Scan(info.ID, func(Record) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if n != len(all) {
		t.Fatalf("scan found %d records, want %d", n, len(all))
	}
}

func TestAddRecordRejectsBadFraming(t *testing.T) {
	l := mustOpen(t, vfs.NewMem(), nil)
	defer l.Close()
	if _, err := l.AddRecord(make([]byte, RecordHeaderSize-1)); err == nil {
		t.Fatal("AddRecord of a short record succeeded")
	}
	rec := frame(1, 0, []byte("abc"))
	if _, err := l.AddRecord(rec[:len(rec)-1]); err == nil {
		t.Fatal("AddRecord with a length mismatch succeeded")
	}
	if _, err := l.AddRecord(frame(-1, 0, nil)); err == nil {
		t.Fatal("AddRecord of a negative ledger succeeded")
	}
}

// TestAddRecordCrash: records written by AddRecord (copied and direct) and
// synced read back from every crash clone; later ones read back intact or
// as ErrNotFound.
func TestAddRecordCrash(t *testing.T) {
	for seed := uint64(0); seed < 24; seed++ {
		fs := vfs.NewMem()
		rng := rand.New(rand.NewPCG(seed, 3))
		opts := func(o *Options) { o.LogSizeLimit = 512 << 10; o.WriteBufferSize = 4 << 10 }
		l := mustOpen(t, fs, opts)
		next := map[int64]int64{}
		synced := addRecords(t, l, rng, 20+rng.IntN(40), 3, mixedSizes, next)
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		unsynced := addRecords(t, l, rng, rng.IntN(20), 3, mixedSizes, next)
		var clone *vfs.MemFS
		if seed%3 == 0 {
			clone = fs.CrashClone()
		} else {
			clone = fs.CrashCloneRandom(rand.New(rand.NewPCG(seed, 8)))
		}
		l.Close()
		r := mustOpen(t, clone, opts)
		checkAll(t, r, synced)
		for _, e := range unsynced {
			got, err := r.Read(e.loc, e.ledger, e.entry)
			if err == nil && !bytes.Equal(got, e.payload) {
				t.Fatalf("seed %d: unsynced %d:%d reads back wrong bytes", seed, e.ledger, e.entry)
			}
			if err != nil && !errors.Is(err, ErrNotFound) {
				t.Fatalf("seed %d: unsynced %d:%d = %v, want data or ErrNotFound", seed, e.ledger, e.entry, err)
			}
		}
		for _, info := range r.Logs() {
			if err := r.Scan(info.ID, func(Record) error { return nil }); err != nil {
				t.Fatalf("seed %d: Scan(%d) = %v", seed, info.ID, err)
			}
		}
		r.Close()
	}
}

func TestAddRecordDirectWriteFailureIsSticky(t *testing.T) {
	ffs := &failFS{FS: vfs.NewMem()}
	l := mustOpen(t, ffs, func(o *Options) { o.LogSizeLimit = 1 << 20 })
	loc, err := l.AddRecord(frame(1, 0, []byte("buffered")))
	if err != nil {
		t.Fatal(err)
	}
	ffs.failWrite.Store(true)
	if _, err := l.AddRecord(frame(1, 1, make([]byte, DirectWriteMin))); !errors.Is(err, errInjected) {
		t.Fatalf("direct AddRecord on a failing disk = %v, want the injected error", err)
	}
	ffs.failWrite.Store(false)
	if _, err := l.AddRecord(frame(1, 2, []byte("x"))); !errors.Is(err, errInjected) {
		t.Fatalf("AddRecord after the failure = %v, want the sticky error", err)
	}
	if got, err := l.Read(loc, 1, 0); err != nil || string(got) != "buffered" {
		t.Fatalf("buffered record after the failure = %q, %v", got, err)
	}
	if err := l.Close(); !errors.Is(err, errInjected) {
		t.Fatalf("Close = %v, want the sticky error", err)
	}
}

func TestReadRun(t *testing.T) {
	fs := vfs.NewMem()
	l := mustOpen(t, fs, func(o *Options) { o.LogSizeLimit = 1 << 20; o.WriteBufferSize = 4 << 10 })
	defer l.Close()
	var recs []added
	for e := int64(0); e < 20; e++ {
		ledger := int64(1)
		if e == 12 {
			ledger = 2 // another ledger in the middle of the run
		}
		p := payloadFor(ledger, e, 100+int(e)*37)
		loc, err := l.AddRecord(frame(ledger, e, p))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, added{ledger, e, p, loc})
	}
	// The last record stays in the append buffer.
	last, err := l.AddRecord(frame(1, 20, []byte("tail")))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	buffered, err := l.AddRecord(frame(1, 21, []byte("in buffer")))
	if err != nil {
		t.Fatal(err)
	}
	collect := func(buf []byte, i int) ([]RunRecord, error) {
		var got []RunRecord
		_, err := l.ReadRun(buf, recs[i].loc, recs[i].ledger, recs[i].entry, func(r RunRecord) bool {
			got = append(got, r)
			return true
		})
		return got, err
	}
	// A large buffer: everything from record 3 to the flushed end.
	got, err := collect(make([]byte, 0, 1<<20), 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 18 { // records 3..19 and 20 ("tail"), not the buffered one
		t.Fatalf("run from 3 found %d records, want 18", len(got))
	}
	for i, r := range got[:17] {
		e := recs[3+i]
		if r.Ledger != e.ledger || r.Entry != e.entry || r.Loc != e.loc || !bytes.Equal(r.Payload, e.payload) {
			t.Fatalf("run record %d = %d:%d at %x, want %d:%d at %x", i, r.Ledger, r.Entry, r.Loc, e.ledger, e.entry, e.loc)
		}
	}
	if got[17].Loc != last || string(got[17].Payload) != "tail" {
		t.Fatalf("last run record = %d:%d %q", got[17].Ledger, got[17].Entry, got[17].Payload)
	}
	// A small buffer grows for the first record and reads nothing more.
	got, err = collect(make([]byte, 0, 8), 5)
	if err != nil || len(got) != 1 || !bytes.Equal(got[0].Payload, recs[5].payload) {
		t.Fatalf("run with a small buffer = %d records, %v", len(got), err)
	}
	// A buffer cutting the third record: two records.
	size := func(i int) int { return RecordHeaderSize + len(recs[i].payload) }
	got, err = collect(make([]byte, 0, size(7)+size(8)+size(9)-1), 7)
	if err != nil || len(got) != 2 {
		t.Fatalf("run with a buffer cutting record 9 = %d records, %v", len(got), err)
	}
	// fn refusing a record ends the run.
	n := 0
	if _, err := l.ReadRun(nil, recs[0].loc, 1, 0, func(RunRecord) bool { n++; return n < 3 }); err != nil || n != 3 {
		t.Fatalf("refusing run saw %d records, %v", n, err)
	}
	// The first record must be the one asked for.
	if _, err := l.ReadRun(nil, recs[4].loc, 1, 5, func(RunRecord) bool { return true }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ReadRun of the wrong entry = %v, want ErrCorrupt", err)
	}
	// A record still in the append buffer is read alone.
	got = nil
	if _, err := l.ReadRun(nil, buffered, 1, 21, func(r RunRecord) bool { got = append(got, r); return true }); err != nil ||
		len(got) != 1 || string(got[0].Payload) != "in buffer" {
		t.Fatalf("ReadRun of a buffered record = %d records, %v", len(got), err)
	}
	// The payloads alias the returned buffer, appended after its contents.
	out, err := l.ReadRun([]byte("keep"), recs[1].loc, 1, 1, func(r RunRecord) bool { return false })
	if err != nil || string(out[:4]) != "keep" || !bytes.Contains(out, recs[1].payload) {
		t.Fatalf("ReadRun did not append to buf: %v", err)
	}
}

// TestReadRunStopsAtCorruptFollower: a damaged record after the first ends
// the run quietly; reading it directly reports the corruption.
func TestReadRunStopsAtCorruptFollower(t *testing.T) {
	fs := vfs.NewMem()
	l := mustOpen(t, fs, func(o *Options) { o.LogSizeLimit = 1 << 20 })
	var locs []uint64
	for e := int64(0); e < 4; e++ {
		loc, err := l.AddRecord(frame(1, e, payloadFor(1, e, 200)))
		if err != nil {
			t.Fatal(err)
		}
		locs = append(locs, loc)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	_, off := SplitLocation(locs[2])
	names, err := fs.List("/a")
	if err != nil || len(names) != 1 {
		t.Fatalf("logs in /a: %v, %v", names, err)
	}
	b := readMem(t, fs, "/a/"+names[0])
	b[int(off)+RecordHeaderSize+10] ^= 0xff
	writeMem(t, fs, "/a/"+names[0], b)
	r := mustOpen(t, fs, nil)
	defer r.Close()
	n := 0
	if _, err := r.ReadRun(make([]byte, 0, 1<<16), locs[0], 1, 0, func(RunRecord) bool { n++; return true }); err != nil || n != 2 {
		t.Fatalf("run over a corrupt third record: %d records, %v; want 2, nil", n, err)
	}
	if _, err := r.Read(locs[2], 1, 2); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Read of the corrupt record = %v, want ErrCorrupt", err)
	}
}

// TestAddRecords: batches of mixed sizes (buffered and direct records,
// across log rolls) read back like AddRecord's, before and after reopen;
// a malformed record stops the batch there, with the earlier records added
// and their locations returned, and the error naming its index.
func TestAddRecords(t *testing.T) {
	fs := vfs.NewMem()
	opts := func(o *Options) { o.LogSizeLimit = 1 << 20; o.WriteBufferSize = 8 << 10 }
	l := mustOpen(t, fs, opts)
	rng := rand.New(rand.NewPCG(7, 8))
	var all []added
	next := map[int64]int64{}
	var locs []uint64
	for batch := range 20 {
		var recs [][]byte
		var batchAdded []added
		for range 1 + rng.IntN(40) {
			ledger := int64(rng.IntN(3))
			entry := next[ledger]
			next[ledger]++
			p := payloadFor(ledger, entry, mixedSizes[rng.IntN(len(mixedSizes))])
			recs = append(recs, frame(ledger, entry, p))
			batchAdded = append(batchAdded, added{ledger: ledger, entry: entry, payload: p})
		}
		before := len(locs)
		var err error
		if locs, err = l.AddRecords(recs, locs); err != nil {
			t.Fatalf("batch %d: AddRecords = %v", batch, err)
		}
		if got := len(locs) - before; got != len(recs) {
			t.Fatalf("batch %d: %d locations for %d records", batch, got, len(recs))
		}
		for i := range batchAdded {
			batchAdded[i].loc = locs[before+i]
		}
		all = append(all, batchAdded...)
	}
	if len(l.Logs()) < 2 {
		t.Fatalf("%d logs: the batches should have rolled the log", len(l.Logs()))
	}
	checkAll(t, l, all)
	// Each sealed log's ledgers map (usage per ledger, added once per run
	// of a ledger's records) holds exactly the records that went there.
	want := map[uint32]map[int64]uint64{}
	for _, a := range all {
		id := uint32(a.loc >> 32)
		if want[id] == nil {
			want[id] = map[int64]uint64{}
		}
		want[id][a.ledger] += uint64(RecordHeaderSize + len(a.payload))
	}
	for _, info := range l.Logs() {
		if info.Active {
			continue
		}
		pairs, err := l.LedgerBytes(info.ID)
		if err != nil {
			t.Fatal(err)
		}
		got := map[int64]uint64{}
		for _, p := range pairs {
			got[p.Ledger] = p.Bytes
		}
		if !maps.Equal(got, want[info.ID]) {
			t.Fatalf("log %d: ledgers map %v, records %v", info.ID, got, want[info.ID])
		}
	}

	good := frame(5, 0, []byte("ok"))
	bad := frame(5, 1, []byte("bad"))
	got, err := l.AddRecords([][]byte{good, bad[:len(bad)-1], frame(5, 2, nil)}, nil)
	if err == nil || !strings.Contains(err.Error(), "record 1") {
		t.Fatalf("AddRecords with a malformed record = %v, want an error for record 1", err)
	}
	if len(got) != 1 {
		t.Fatalf("AddRecords with a malformed record returned %d locations, want 1", len(got))
	}
	all = append(all, added{ledger: 5, entry: 0, payload: []byte("ok"), loc: got[0]})
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	r := mustOpen(t, fs, opts)
	defer r.Close()
	checkAll(t, r, all)
	if _, err := r.Read(got[0]+uint64(len(good)), 5, 2); err == nil {
		t.Fatal("the record after the malformed one was added")
	}
}
