package entrylog

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/magnetar-mq/magnetar/internal/crc32c"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// fileSet is an immutable snapshot of the logs, published through
// Log.files. It holds one reference on each file.
type fileSet struct {
	files map[uint32]*logFile
	ids   []uint32 // sorted
}

func (s *fileSet) sortIDs() {
	s.ids = s.ids[:0]
	for id := range s.files {
		s.ids = append(s.ids, id)
	}
	slices.Sort(s.ids)
}

// swapFiles publishes a modified copy of the file set. Callers hold l.mu.
func (l *Log) swapFiles(mutate func(*fileSet)) *fileSet {
	old := l.files.Load()
	next := &fileSet{files: make(map[uint32]*logFile, len(old.files)+1)}
	for id, f := range old.files {
		next.files[id] = f
	}
	mutate(next)
	next.sortIDs()
	l.files.Store(next)
	return old
}

// logFile is one open log. It is closed (and removed, if marked) when the
// last reference is released: the file set's, or an in-flight reader's.
type logFile struct {
	fs     vfs.FS
	remove func(string) error // Options.Remove
	id     uint32
	path   string
	f      vfs.File

	refs          atomic.Int32
	written       atomic.Int64 // bytes of f readers may read
	active        atomic.Bool
	removeOnClose atomic.Bool
	// recovered: opened without a valid ledgers map (the bookie crashed
	// while it was active), so its tail may hold records that were never
	// synced; reading those is ErrNotFound rather than ErrCorrupt.
	recovered bool

	// ledgers is the bytes per ledger of a sealed log, sorted by ledger
	// (16 B a ledger, against ~37 B in a map: a million single-entry
	// ledgers keep one pair each); known is false until it is read or
	// scanned.
	ledgersMu sync.Mutex
	ledgers   []Pair
	known     bool
	dataEnd   int64 // end of records (map offset) when known

	// syncedMu orders the header writes of the synced end (Sync) and of
	// the seal; syncedEnd is the largest synced end written.
	syncedMu  sync.Mutex
	syncedEnd int64
}

func newLogFile(fs vfs.FS, remove func(string) error, id uint32, path string, f vfs.File, written int64) *logFile {
	lf := &logFile{fs: fs, remove: remove, id: id, path: path, f: f}
	lf.refs.Store(1)
	lf.written.Store(written)
	return lf
}

// tryRef takes a reference unless the file is already being closed.
func (f *logFile) tryRef() bool {
	for {
		r := f.refs.Load()
		if r <= 0 {
			return false
		}
		if f.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

func (f *logFile) release() {
	r := f.refs.Add(-1)
	if r > 0 {
		return
	}
	if r < 0 {
		panic("BUG: entrylog: logFile reference count below zero")
	}
	f.f.Close()
	if f.removeOnClose.Load() {
		// The file left the set before; a failed remove only leaks space
		// (and a log resurrected by a crash is compacted again).
		if f.remove(f.path) == nil {
			_ = f.fs.SyncDir(filepath.Dir(f.path))
		}
	}
}

// acquire returns a referenced file for id, or ErrNotFound.
func (l *Log) acquire(id uint32) (*logFile, error) {
	for {
		s := l.files.Load()
		f := s.files[id]
		if f == nil {
			return nil, fmt.Errorf("entrylog: log %d: %w", id, ErrNotFound)
		}
		if f.tryRef() {
			return f, nil
		}
		if l.files.Load() == s {
			return nil, fmt.Errorf("entrylog: log %d: %w", id, ErrNotFound)
		}
	}
}

// Read returns the payload of the record at loc, which must hold entry
// (ledger, entry). See AppendRead.
func (l *Log) Read(loc uint64, ledger, entry int64) ([]byte, error) {
	return l.AppendRead(nil, loc, ledger, entry)
}

// AppendRead appends the payload of the record at loc to dst. It verifies
// the record's length and checksum and that it holds (ledger, entry):
// anything else is ErrCorrupt naming the file and offset. A location past
// the written data, or in a removed log, is ErrNotFound.
func (l *Log) AppendRead(dst []byte, loc uint64, ledger, entry int64) ([]byte, error) {
	id, off32 := SplitLocation(loc)
	off := int64(off32)
	f, err := l.acquire(id)
	if err != nil {
		return dst, err
	}
	defer f.release()
	if off < HeaderSize {
		return dst, fmt.Errorf("entrylog: %s off %d: location inside header: %w", f.path, off, ErrCorrupt)
	}
	if f.pastRecoveredData(off) {
		return dst, fmt.Errorf("entrylog: %s off %d: past the records a crash left: %w", f.path, off, ErrNotFound)
	}
	if off >= f.written.Load() {
		if out, ok, err := l.readBuffered(dst, f, off, ledger, entry); ok {
			return out, err
		}
	}
	// One pread for the header and, speculatively, the payload: into the
	// spare capacity of dst (at least readAhead bytes).
	const readAhead = 512
	start := len(dst)
	want := min(max(int64(cap(dst)-start), readAhead), f.written.Load()-off)
	if want < RecordHeaderSize {
		want = RecordHeaderSize
	}
	dst = slices.Grow(dst, int(want))[:start+int(want)]
	buf := dst[start:]
	if err := readFull(f, buf, off); err != nil {
		return dst[:start], err
	}
	if isZero(buf[:RecordHeaderSize]) {
		return dst[:start], fmt.Errorf("entrylog: %s off %d: zero record header: %w", f.path, off, f.missing())
	}
	h := decodeRecordHeader(buf)
	if off+RecordHeaderSize+int64(h.n) > f.written.Load() {
		return dst[:start], fmt.Errorf("entrylog: %s off %d: record length %d past end of data: %w", f.path, off, h.n, f.missing())
	}
	// The header checksum part is computed before the payload is moved
	// over the header.
	c := crc32c.Update(crc32c.Update(0, buf[0:4]), buf[8:RecordHeaderSize])
	n := int(h.n)
	if RecordHeaderSize+n <= len(buf) {
		copy(dst[start:], buf[RecordHeaderSize:RecordHeaderSize+n])
	} else {
		have := len(buf) - RecordHeaderSize
		copy(dst[start:], buf[RecordHeaderSize:])
		dst = slices.Grow(dst[:start+have], n-have)[:start+n]
		if err := readFull(f, dst[start+have:start+n], off+int64(len(buf))); err != nil {
			return dst[:start], err
		}
	}
	dst = dst[:start+n]
	crc := crc32c.Update(c, dst[start:])
	if err := checkRecordCRC(f.path, off, h, crc, ledger, entry); err != nil {
		if f.recovered && crc != h.crc && overlapsZeroPage(f.f, off, off+RecordHeaderSize+int64(n)) {
			// Part of the record was on a page lost in the crash.
			return dst[:start], fmt.Errorf("entrylog: %s off %d: record on a lost page: %w", f.path, off, ErrNotFound)
		}
		return dst[:start], err
	}
	return dst, nil
}

// RunRecord is one record found by ReadRun.
type RunRecord struct {
	Ledger, Entry int64
	Loc           uint64
	// Payload aliases the buffer ReadRun returns.
	Payload []byte
}

// ReadRun reads the record at loc, which must hold (ledger, entry), and
// the records that follow it in the same log: one read of up to the spare
// capacity of buf (at least the first record; buf grows, with a second
// read, only when that record does not fit). It calls fn for each whole,
// valid record in file order, the first being (ledger, entry).
//
// The first record is checked as AppendRead checks it, with the same
// errors. Later records are only opportunistic: the first one that is cut
// off by the end of the read or of the written data, fails its checksum,
// is a ledgers-map record, or that fn refuses (returns false) quietly ends
// the run. Records still in the append buffer are not read ahead: a first
// record there is copied out alone.
//
// It returns buf with the bytes read appended; payloads alias that part,
// so the caller that owns buf owns them.
func (l *Log) ReadRun(buf []byte, loc uint64, ledger, entry int64, fn func(RunRecord) bool) ([]byte, error) {
	id, off32 := SplitLocation(loc)
	off := int64(off32)
	f, err := l.acquire(id)
	if err != nil {
		return buf, err
	}
	defer f.release()
	if off < HeaderSize {
		return buf, fmt.Errorf("entrylog: %s off %d: location inside header: %w", f.path, off, ErrCorrupt)
	}
	if f.pastRecoveredData(off) {
		return buf, fmt.Errorf("entrylog: %s off %d: past the records a crash left: %w", f.path, off, ErrNotFound)
	}
	start := len(buf)
	written := f.written.Load()
	if off >= written {
		out, ok, err := l.readBuffered(buf, f, off, ledger, entry)
		if ok {
			if err == nil {
				fn(RunRecord{Ledger: ledger, Entry: entry, Loc: loc, Payload: out[start:]})
			}
			return out, err
		}
		written = f.written.Load()
	}
	want := min(max(int64(cap(buf)-start), 512), written-off)
	want = max(want, RecordHeaderSize)
	buf = slices.Grow(buf, int(want))[:start+int(want)] // no clearing within capacity
	if err := readFull(f, buf[start:], off); err != nil {
		return buf[:start], err
	}
	span := buf[start:]
	if isZero(span[:RecordHeaderSize]) {
		return buf[:start], fmt.Errorf("entrylog: %s off %d: zero record header: %w", f.path, off, f.missing())
	}
	h := decodeRecordHeader(span)
	end := RecordHeaderSize + int64(h.n)
	if off+end > written {
		return buf[:start], fmt.Errorf("entrylog: %s off %d: record length %d past end of data: %w", f.path, off, h.n, f.missing())
	}
	if end > int64(len(span)) {
		have := len(span)
		buf = slices.Grow(buf, int(end)-have)[:start+int(end)]
		if err := readFull(f, buf[start+have:], off+int64(have)); err != nil {
			return buf[:start], err
		}
		span = buf[start:]
	}
	payload := span[RecordHeaderSize:end]
	crc := recordCRC(span, payload)
	if err := checkRecordCRC(f.path, off, h, crc, ledger, entry); err != nil {
		if f.recovered && crc != h.crc && overlapsZeroPage(f.f, off, off+end) {
			// Part of the record was on a page lost in the crash.
			return buf[:start], fmt.Errorf("entrylog: %s off %d: record on a lost page: %w", f.path, off, ErrNotFound)
		}
		return buf[:start], err
	}
	if !fn(RunRecord{Ledger: ledger, Entry: entry, Loc: loc, Payload: payload}) {
		return buf, nil
	}
	for pos := end; pos+RecordHeaderSize <= int64(len(span)); {
		hb := span[pos:]
		h := decodeRecordHeader(hb)
		next := pos + RecordHeaderSize + int64(h.n)
		if next > int64(len(span)) || h.ledger < 0 {
			break
		}
		p := hb[RecordHeaderSize : RecordHeaderSize+int64(h.n)]
		if recordCRC(hb, p) != h.crc {
			break
		}
		if !fn(RunRecord{Ledger: h.ledger, Entry: h.entry, Loc: Location(id, uint32(off+pos)), Payload: p}) {
			break
		}
		pos = next
	}
	return buf, nil
}

func checkRecord(path string, off int64, hb []byte, h recordHeader, payload []byte, ledger, entry int64) error {
	return checkRecordCRC(path, off, h, recordCRC(hb, payload), ledger, entry)
}

func checkRecordCRC(path string, off int64, h recordHeader, crc uint32, ledger, entry int64) error {
	if crc != h.crc {
		return fmt.Errorf("entrylog: %s off %d: record checksum mismatch: %w", path, off, ErrCorrupt)
	}
	if h.ledger != ledger || h.entry != entry {
		return fmt.Errorf("entrylog: %s off %d: record holds %d:%d, want %d:%d: %w", path, off, h.ledger, h.entry, ledger, entry, ErrCorrupt)
	}
	return nil
}

// pastRecoveredData reports whether off lies past the valid records of a
// log recovered after a crash and sealed since: its map was written where
// the crash's unsynced tail began, so nothing there is a record.
func (f *logFile) pastRecoveredData(off int64) bool {
	if !f.recovered {
		return false
	}
	f.ledgersMu.Lock()
	defer f.ledgersMu.Unlock()
	return f.known && off >= f.dataEnd
}

// missing is the error for a location with no record: ErrNotFound in a
// recovered log, whose unsynced tail may legitimately be gone, ErrCorrupt
// in a log that was sealed or is being written.
func (f *logFile) missing() error {
	if f.recovered {
		return ErrNotFound
	}
	return ErrCorrupt
}

func readFull(f *logFile, p []byte, off int64) error {
	n, err := f.f.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("entrylog: %s off %d: past end of data: %w", f.path, off, f.missing())
	}
	return fmt.Errorf("entrylog: read %s off %d: %w", f.path, off, err)
}

// readBuffered serves a record of the active log that is still in the
// append buffer. ok is false when the record has been written to the file
// in the meantime.
func (l *Log) readBuffered(dst []byte, f *logFile, off int64, ledger, entry int64) ([]byte, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.cur != f || off < l.mu.bufOff {
		return dst, false, nil
	}
	if off-l.mu.bufOff+RecordHeaderSize > int64(len(l.mu.buf)) {
		return dst, true, fmt.Errorf("entrylog: %s off %d: past end of data: %w", f.path, off, ErrCorrupt)
	}
	b := l.mu.buf[off-l.mu.bufOff:]
	h := decodeRecordHeader(b)
	if int64(h.n) > int64(len(b)-RecordHeaderSize) {
		return dst, true, fmt.Errorf("entrylog: %s off %d: record length %d past end of data: %w", f.path, off, h.n, ErrCorrupt)
	}
	payload := b[RecordHeaderSize : RecordHeaderSize+int(h.n)]
	if err := checkRecord(f.path, off, b, h, payload, ledger, entry); err != nil {
		return dst, true, err
	}
	return append(dst, payload...), true, nil
}

// LogInfo describes one log file.
type LogInfo struct {
	ID     uint32
	Path   string
	Size   int64 // bytes written, header and map included
	Active bool
}

// Logs lists the logs, oldest first.
func (l *Log) Logs() []LogInfo {
	s := l.files.Load()
	out := make([]LogInfo, 0, len(s.ids))
	for _, id := range s.ids {
		f := s.files[id]
		out = append(out, LogInfo{ID: id, Path: f.path, Size: f.written.Load(), Active: f.active.Load()})
	}
	return out
}
