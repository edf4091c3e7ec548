package bookie

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/entrylog"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/journal"
)

// fakeDisk is the durable state of the fake storage: it survives a
// "restart" (a new bookie over the same fakeDisk).
type fakeDisk struct {
	mu sync.Mutex
	// journal
	records    []journal.Record // durable
	checkpoint int              // records before it are checkpointed
	syncErr    error            // next syncs fail with it (sticky in the journal)
	// entry log
	logs []fakeLogRec
	// index (durable part)
	locs map[key]uint64
	meta map[int64]ledgerMeta
}

type fakeLogRec struct {
	key
	payload []byte
	live    bool
}

func newFakeDisk() *fakeDisk {
	return &fakeDisk{locs: map[key]uint64{}, meta: map[int64]ledgerMeta{}}
}

func (d *fakeDisk) open() storageSet {
	d.mu.Lock()
	defer d.mu.Unlock()
	idx := &fakeIndex{d: d, locs: map[key]uint64{}, meta: map[int64]ledgerMeta{}}
	for k, v := range d.locs {
		idx.locs[k] = v
	}
	for k, v := range d.meta {
		idx.meta[k] = cloneMeta(v)
	}
	return storageSet{j: &fakeJournal{d: d}, el: &fakeEntryLog{d: d}, idx: idx}
}

func cloneMeta(m ledgerMeta) ledgerMeta {
	m.masterKey = slices.Clone(m.masterKey)
	m.lacBody = slices.Clone(m.lacBody)
	return m
}

// fakeJournal completes every append synchronously ("fsync" at once).
type fakeJournal struct {
	d      *fakeDisk
	mu     sync.Mutex
	err    error
	closed bool
}

func (j *fakeJournal) Append(r journal.Record, c journal.Completion) {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		c.AppendDone(journal.Position{}, journal.ErrClosed)
		return
	}
	if j.err == nil {
		j.d.mu.Lock()
		if j.d.syncErr != nil {
			j.err = j.d.syncErr
		} else {
			r.Payload = slices.Clone(r.Payload)
			j.d.records = append(j.d.records, r)
		}
		j.d.mu.Unlock()
	}
	err := j.err
	j.mu.Unlock()
	c.AppendDone(journal.Position{}, err)
}

// AppendWithCRC checks pcrc (a wrong one would be a record the real
// journal's replay rejects) and appends.
func (j *fakeJournal) AppendWithCRC(r journal.Record, pcrc uint32, c journal.Completion) {
	if want := entrylog.PayloadCRC(r.Payload); pcrc != want {
		c.AppendDone(journal.Position{}, fmt.Errorf("fake journal: payload CRC %08x, want %08x: %w", pcrc, want, errStorageCorrupt))
		return
	}
	j.Append(r, c)
}

// AppendRef is AppendWithCRC (the fake copies every payload).
func (j *fakeJournal) AppendRef(r journal.Record, pcrc uint32, c journal.Completion) {
	j.AppendWithCRC(r, pcrc, c)
}

// AppendBatchWithCRC appends one record at a time. A record without a
// completion that fails passes its error to the next completion of the
// batch (as the real journal would fail every later record), so a wrong
// payload CRC is not lost when only the batch's last record has one.
func (j *fakeJournal) AppendBatchWithCRC(rs []journal.Record, pcrcs []uint32, cs []journal.Completion) {
	var pending error
	for i := range rs {
		var got error
		j.AppendWithCRC(rs[i], pcrcs[i], journal.CompletionFunc(func(_ journal.Position, err error) { got = err }))
		if cs[i] == nil {
			pending = cmp.Or(pending, got)
			continue
		}
		cs[i].AppendDone(journal.Position{}, cmp.Or(pending, got))
		pending = nil
	}
}

func (j *fakeJournal) Mark() func() (journal.Position, error) {
	j.d.mu.Lock()
	n := len(j.d.records)
	j.d.mu.Unlock()
	return func() (journal.Position, error) { return journal.Position{Offset: int64(n)}, j.Err() }
}

func (j *fakeJournal) Checkpoint(m journal.Position) error {
	j.d.mu.Lock()
	defer j.d.mu.Unlock()
	j.d.checkpoint = max(j.d.checkpoint, int(m.Offset))
	return nil
}

func (j *fakeJournal) Replay(fn func(journal.Record) error) error {
	j.d.mu.Lock()
	recs := slices.Clone(j.d.records[j.d.checkpoint:])
	j.d.mu.Unlock()
	for _, r := range recs {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func (j *fakeJournal) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

func (j *fakeJournal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.closed = true
	return nil
}

// fakeEntryLog keeps records in a slice; a location is the index + 1.
type fakeEntryLog struct {
	d      *fakeDisk
	addErr error
}

func (l *fakeEntryLog) Add(ledger, entry int64, payload []byte) (uint64, error) {
	if l.addErr != nil {
		return 0, l.addErr
	}
	l.d.mu.Lock()
	defer l.d.mu.Unlock()
	l.d.logs = append(l.d.logs, fakeLogRec{key{ledger, entry}, slices.Clone(payload), true})
	return uint64(len(l.d.logs)), nil
}

// AddRecord decodes rec, checksum included, and adds its entry.
func (l *fakeEntryLog) AddRecord(rec []byte) (uint64, error) {
	rest, ledger, entry, payload, err := entrylog.DecodeRecord(rec)
	if err != nil || len(rest) != 0 {
		return 0, fmt.Errorf("fake entry log: bad record (%d bytes left): %v: %w", len(rest), err, errStorageCorrupt)
	}
	return l.Add(ledger, entry, payload)
}

func (l *fakeEntryLog) AddRecords(recs [][]byte, locs []uint64) ([]uint64, error) {
	for _, rec := range recs {
		loc, err := l.AddRecord(rec)
		if err != nil {
			return locs, err
		}
		locs = append(locs, loc)
	}
	return locs, nil
}

func (l *fakeEntryLog) Flush() error { return nil }
func (l *fakeEntryLog) Sync() error  { return nil }

func (l *fakeEntryLog) Writeback() error { return nil }

func (l *fakeEntryLog) Read(loc uint64, ledger, entry int64) ([]byte, error) {
	l.d.mu.Lock()
	defer l.d.mu.Unlock()
	if loc == 0 || loc > uint64(len(l.d.logs)) || !l.d.logs[loc-1].live {
		return nil, errFakeNotFoundMarker
	}
	r := l.d.logs[loc-1]
	if r.key != (key{ledger, entry}) {
		return nil, fmt.Errorf("loc %d holds %v not %d/%d: %w", loc, r.key, ledger, entry, errStorageCorrupt)
	}
	return slices.Clone(r.payload), nil
}

func (l *fakeEntryLog) AppendRead(dst []byte, loc uint64, ledger, entry int64) ([]byte, error) {
	p, err := l.Read(loc, ledger, entry)
	if err != nil {
		return dst, err
	}
	return append(dst, p...), nil
}

// ReadRun returns the record at loc and the live records after it (the
// fake's locations are consecutive), as long as they fit in buf's
// capacity.
func (l *fakeEntryLog) ReadRun(buf []byte, loc uint64, ledger, entry int64, fn func(entrylog.RunRecord) bool) ([]byte, error) {
	p, err := l.Read(loc, ledger, entry)
	if err != nil {
		return buf, err
	}
	start := len(buf)
	buf = append(buf, p...)
	if !fn(entrylog.RunRecord{Ledger: ledger, Entry: entry, Loc: loc, Payload: buf[start:]}) {
		return buf, nil
	}
	for next := loc + 1; ; next++ {
		l.d.mu.Lock()
		if next > uint64(len(l.d.logs)) || !l.d.logs[next-1].live {
			l.d.mu.Unlock()
			return buf, nil
		}
		r := l.d.logs[next-1]
		l.d.mu.Unlock()
		if len(buf)+len(r.payload) > cap(buf) {
			return buf, nil
		}
		start := len(buf)
		buf = append(buf, r.payload...)
		if !fn(entrylog.RunRecord{Ledger: r.ledger, Entry: r.entry, Loc: next, Payload: buf[start:]}) {
			return buf, nil
		}
	}
}

func (l *fakeEntryLog) Scan(fn func(ledger, entry int64, loc uint64) error) error {
	l.d.mu.Lock()
	logs := slices.Clone(l.d.logs)
	l.d.mu.Unlock()
	for i, r := range logs {
		if r.live {
			if err := fn(r.ledger, r.entry, uint64(i+1)); err != nil {
				return err
			}
		}
	}
	return nil
}

// GC "compacts" everything: live records are re-added and the old ones
// dropped.
func (l *fakeEntryLog) GC(_ context.Context, req gcRequest) (gcStats, error) {
	live, relocate := req.live, req.relocate
	l.d.mu.Lock()
	n := len(l.d.logs)
	l.d.mu.Unlock()
	var moves []relocation
	var st gcStats
	for i := 0; i < n; i++ {
		l.d.mu.Lock()
		r := l.d.logs[i]
		l.d.mu.Unlock()
		if !r.live {
			continue
		}
		if live(r.ledger) {
			nl, _ := l.Add(r.ledger, r.entry, r.payload)
			moves = append(moves, relocation{r.ledger, r.entry, uint64(i + 1), nl})
		} else {
			st.BytesReclaimed += int64(len(r.payload))
		}
	}
	if err := relocate(moves); err != nil {
		return st, err
	}
	l.d.mu.Lock()
	for i := 0; i < n; i++ {
		l.d.logs[i].live = false
	}
	l.d.mu.Unlock()
	st.LogsCompacted = 1
	return st, nil
}

func (l *fakeEntryLog) Close() error { return nil }

// ActiveLogID: the fake has no logs to seal; its GC ignores the horizon.
func (l *fakeEntryLog) ActiveLogID() uint32 { return ^uint32(0) }

// fakeIndex is an in-memory index whose Flush copies into the disk.
type fakeIndex struct {
	d    *fakeDisk
	mu   sync.Mutex
	locs map[key]uint64
	meta map[int64]ledgerMeta
}

func (x *fakeIndex) Put(ledger, entry int64, loc uint64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.locs[key{ledger, entry}] = loc
	return nil
}

func (x *fakeIndex) PutRun(ledger, first int64, locs []uint64) error {
	for i, loc := range locs {
		if err := x.Put(ledger, first+int64(i), loc); err != nil {
			return err
		}
	}
	return nil
}

func (x *fakeIndex) Get(ledger, entry int64) (uint64, bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	loc, ok := x.locs[key{ledger, entry}]
	return loc, ok, nil
}

func (x *fakeIndex) LastEntry(ledger int64) (int64, bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	last, ok := int64(-1), false
	for k := range x.locs {
		if k.ledger == ledger && k.entry > last {
			last, ok = k.entry, true
		}
	}
	return last, ok, nil
}

func (x *fakeIndex) Meta(ledger int64) (ledgerMeta, bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	m, ok := x.meta[ledger]
	return cloneMeta(m), ok, nil
}

func (x *fakeIndex) SetMeta(ledger int64, m ledgerMeta) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.meta[ledger] = cloneMeta(m)
	return nil
}

func (x *fakeIndex) Delete(ledger int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.meta, ledger)
	for k := range x.locs {
		if k.ledger == ledger {
			delete(x.locs, k)
		}
	}
	return nil
}

func (x *fakeIndex) Ledgers() ([]int64, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	var ls []int64
	for l := range x.meta {
		ls = append(ls, l)
	}
	slices.Sort(ls)
	return ls, nil
}

func (x *fakeIndex) Flush() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.d.mu.Lock()
	defer x.d.mu.Unlock()
	clear(x.d.locs)
	clear(x.d.meta)
	for k, v := range x.locs {
		x.d.locs[k] = v
	}
	for k, v := range x.meta {
		x.d.meta[k] = cloneMeta(v)
	}
	return nil
}

func (x *fakeIndex) Close() error { return nil }

// fakeOptions are options for a bookie over fake storage: no background
// disk check or GC, a long checkpoint interval (tests call Checkpoint).
func fakeOptions() Options {
	fs := vfs.NewMem()
	for _, d := range []string{"/j", "/l"} {
		if err := fs.MkdirAll(d, 0o755); err != nil {
			panic(err)
		}
	}
	o := Options{
		FS:                 fs,
		JournalDir:         "/j",
		LedgerDirs:         []string{"/l"},
		CheckpointInterval: time.Hour,
		DiskCheckInterval:  -1,
		GCInterval:         -1,
		WriteCacheSize:     1 << 20,
	}
	o.EnsureDefaults()
	return o
}

func openFake(t *testing.T, d *fakeDisk, mod func(*Options)) *Bookie {
	t.Helper()
	o := fakeOptions()
	if mod != nil {
		mod(&o)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := open(o, d.open())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// addSync adds an entry and waits for its callback.
func addSync(b *Bookie, ledger, entry int64, key, payload []byte, recovery bool) error {
	ch := make(chan error, 1)
	b.AddEntry(ledger, entry, key, payload, recovery, func(err error) { ch <- err })
	return <-ch
}

// payloadFor derives an entry's payload from its ids, so a reader can
// verify it without remembering what was written.
func payloadFor(ledger, entry int64, size int) []byte {
	p := make([]byte, size)
	x := uint64(ledger)*0x9E3779B97F4A7C15 ^ uint64(entry)*0xC2B2AE3D27D4EB4F
	for i := range p {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		p[i] = byte(x)
	}
	return p
}
