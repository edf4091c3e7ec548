package entrylog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/magnetar-mq/magnetar/internal/uring"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// Log is a set of entry-log files in one or more directories, with one
// active file receiving appends.
//
// All methods are safe for concurrent use. Add, Flush, Sync and Compact
// serialise on one writer lock; Read and AppendRead never take it except
// for a record still in the append buffer, and never wait for a roll, a
// compaction or a removal.
type Log struct {
	opts  Options
	files atomic.Pointer[fileSet]

	// compactMu allows one Compact at a time.
	compactMu sync.Mutex
	// wg tracks the goroutine preparing the next log.
	wg sync.WaitGroup

	mu struct {
		sync.Mutex
		cur      *logFile     // active log, nil before the first Add
		w        uring.Writer // pwrite writer of cur
		buf      []byte       // records not yet written to cur
		iov      [3][]byte    // scratch for vectored writes
		hdr      [RecordHeaderSize]byte
		bufOff   int64            // file offset of buf[0]
		prealloc int64            // cur is preallocated up to here
		ledgers  map[int64]uint64 // bytes per ledger in cur
		nextID   uint32
		nextDir  int
		next     chan prepared // the log being prepared, nil if none
		err      error         // sticky write error
		wb       writeback
		closed   bool
	}
}

// Open opens (creating the directories if needed) the entry logs in
// opts.Dirs. Existing logs are only read; appends always go to a new log,
// created on the first Add.
func Open(opts Options) (*Log, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	l := &Log{opts: opts}
	l.mu.buf = make([]byte, 0, opts.WriteBufferSize)
	l.mu.nextID = 1
	set := &fileSet{files: map[uint32]*logFile{}}
	fail := func(err error) (*Log, error) {
		for _, f := range set.files {
			f.release()
		}
		return nil, err
	}
	for _, dir := range opts.Dirs {
		if err := opts.FS.MkdirAll(dir, 0o755); err != nil {
			return fail(fmt.Errorf("entrylog: %w", err))
		}
		// Make the directory itself durable, in case MkdirAll created it.
		if err := opts.FS.SyncDir(filepath.Dir(filepath.Clean(dir))); err != nil {
			return fail(fmt.Errorf("entrylog: %w", err))
		}
		names, err := opts.FS.List(dir)
		if err != nil {
			return fail(fmt.Errorf("entrylog: %w", err))
		}
		for _, name := range names {
			id, ok := ParseFileName(name)
			if !ok {
				continue
			}
			if _, dup := set.files[id]; dup {
				return fail(fmt.Errorf("entrylog: log id %d present in two directories: %w", id, ErrCorrupt))
			}
			lf, err := l.openSealed(filepath.Join(dir, name), id)
			if err != nil {
				return fail(err)
			}
			l.mu.nextID = max(l.mu.nextID, id+1)
			if lf != nil {
				set.files[id] = lf
			}
		}
	}
	set.sortIDs()
	l.files.Store(set)
	l.sealCrashed()
	return l, nil
}

// sealCrashed seals the logs a crash left without a ledgers map (the
// active one and the prepared next one, at each crash): each is scanned
// once and gets its map, so that later starts neither scan nor mention
// it again, and GC can weigh it like any sealed log; one holding no
// record is removed. A log that does not scan is left as it is (reads of
// its valid records work; GC reports it).
func (l *Log) sealCrashed() {
	sealed, removed := 0, 0
	for _, info := range l.Logs() {
		f, err := l.acquire(info.ID)
		if err != nil {
			continue
		}
		crashed := f.recovered && !f.known
		f.release()
		if !crashed {
			continue
		}
		pairs, err := l.LedgerBytes(info.ID)
		switch {
		case err != nil:
			l.opts.Logger.Warn("entrylog: a log left unsealed by a crash does not scan", "path", info.Path, "err", err)
		case len(pairs) == 0:
			if l.RemoveLog(info.ID) == nil {
				removed++
			}
		default:
			sealed++
		}
	}
	if sealed+removed > 0 {
		l.opts.Logger.Info("entrylog: logs left unsealed by a crash", "sealed", sealed, "removedEmpty", removed)
	}
}

// openSealed opens an existing log read-only. It returns nil for a log
// whose header was never made durable (a crash right after creation): such
// a file holds no synced record and is removed.
func (l *Log) openSealed(path string, id uint32) (*logFile, error) {
	f, err := l.opts.FS.Open(path)
	if err != nil {
		return nil, fmt.Errorf("entrylog: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("entrylog: %w", err)
	}
	size := fi.Size()
	hdr := make([]byte, HeaderSize)
	n, err := f.ReadAt(hdr, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		f.Close()
		return nil, fmt.Errorf("entrylog: %s: %w", path, err)
	}
	if isZero(hdr[:n]) {
		f.Close()
		l.opts.Logger.Warn("entrylog: removing log with no durable header", "path", path, "size", size)
		if err := l.opts.FS.Remove(path); err != nil {
			return nil, fmt.Errorf("entrylog: %w", err)
		}
		return nil, nil
	}
	_, h, mapValid, err := DecodeHeader(hdr[:n])
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("entrylog: %s off 0: %w", path, err)
	}
	lf := newLogFile(l.opts.FS, l.remove(), id, path, f, size)
	if mapValid {
		m, err := readLedgersMap(f, int64(h.MapOffset), h, size)
		if err != nil {
			// A map that does not decode is only a lost optimisation.
			l.opts.Logger.Warn("entrylog: unreadable ledgers map", "path", path, "err", err)
		} else {
			lf.ledgers, lf.known = m, true
			lf.dataEnd = int64(h.MapOffset)
		}
	}
	if !lf.known {
		lf.recovered = true // sealed by Open (sealCrashed)
	}
	return lf, nil
}

func readLedgersMap(f io.ReaderAt, off int64, h Header, size int64) ([]Pair, error) {
	if off < HeaderSize || off+int64(h.MapLength) > size || h.MapLength < RecordHeaderSize {
		return nil, fmt.Errorf("map offset %d length %d outside file of %d bytes: %w", off, h.MapLength, size, ErrCorrupt)
	}
	buf := make([]byte, h.MapLength)
	if _, err := f.ReadAt(buf, off); err != nil {
		return nil, err
	}
	rest, m, err := DecodeLedgersMap(buf, h.LedgerCount)
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%d bytes after ledgers map: %w", len(rest), ErrCorrupt)
	}
	return m, err
}

// Add appends one entry and returns its location. The entry is readable at
// once (from the buffer until it is written out) and durable after the
// next Sync. A failed write makes the Log fail every later Add, Flush and
// Sync with the same error, except a write that found no space (ENOSPC,
// EDQUOT; IsNoSpace): that one changes nothing, and a later Add, Flush or
// Sync retries it once space is back.
//
// A payload too large for the append buffer is written at once, with the
// buffered records, by one vectored write from payload itself (no copy).
func (l *Log) Add(ledger, entry int64, payload []byte) (uint64, error) {
	return l.add(ledger, entry, payload, nil)
}

// AddRecord appends one record already framed (header and payload, back
// to back, in rec; PutRecordHeader, or PutRecordFields and SetRecordCRC)
// and returns its location, like Add. The checksum is not recomputed here
// (reads verify it); the length and ledger id are checked. A record of at
// least DirectWriteMin bytes, or too large for the append buffer, is
// written at once, together with the buffered records, by one vectored
// write from rec itself: a checkpoint writes entries from the bookie's
// write cache without copying them. rec is not referenced after AddRecord
// returns.
func (l *Log) AddRecord(rec []byte) (uint64, error) {
	h, err := framedHeader(rec)
	if err != nil {
		return 0, fmt.Errorf("entrylog: AddRecord: %w", err)
	}
	return l.add(h.ledger, h.entry, nil, rec)
}

// framedHeader decodes the header of a record framed by the caller and
// checks that its length field matches the bytes after it.
func framedHeader(rec []byte) (recordHeader, error) {
	if len(rec) < RecordHeaderSize {
		return recordHeader{}, fmt.Errorf("record of %d bytes, shorter than a record header", len(rec))
	}
	h := decodeRecordHeader(rec)
	if int64(h.n) != int64(len(rec)-RecordHeaderSize) {
		return recordHeader{}, fmt.Errorf("header length %d, %d payload bytes", h.n, len(rec)-RecordHeaderSize)
	}
	return h, nil
}

// DirectWriteMin is the record size from which AddRecord writes the record
// from the caller's memory instead of copying it into the append buffer.
const DirectWriteMin = 16 << 10

// AddRecords is AddRecord for each of recs in order, under one
// acquisition of the writer lock (a checkpoint appends a write cache's
// worth of small records; taking the lock per record cost as much as
// copying it). The locations are appended to locs and returned. On an
// error the records before the failing one were added: locs holds their
// locations, and the error names the failing record's index.
func (l *Log) AddRecords(recs [][]byte, locs []uint64) ([]uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// The ledger's usage in the active log is added once per run of its
	// records (a checkpoint hands them over sorted by ledger), not per
	// record; a roll settles it first, as the usage is per log.
	var (
		ledger int64 = -1
		bytes  uint64
	)
	settle := func() {
		if bytes > 0 {
			l.mu.ledgers[ledger] += bytes
		}
		bytes = 0
	}
	defer settle()
	for i, rec := range recs {
		h, err := framedHeader(rec)
		if err != nil {
			return locs, fmt.Errorf("entrylog: AddRecords: record %d: %w", i, err)
		}
		if h.ledger != ledger || l.rollsLocked(int64(len(rec))) {
			settle()
			ledger = h.ledger
		}
		loc, err := l.placeLocked(h.ledger, h.entry, nil, rec)
		if err != nil {
			return locs, fmt.Errorf("entrylog: AddRecords: record %d: %w", i, err)
		}
		bytes += uint64(len(rec))
		locs = append(locs, loc)
	}
	return locs, nil
}

// add is Add (rec nil) or AddRecord (rec is the framed record).
func (l *Log) add(ledger, entry int64, payload, rec []byte) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.addLocked(ledger, entry, payload, rec)
}

// addLocked is add with l.mu held.
func (l *Log) addLocked(ledger, entry int64, payload, rec []byte) (uint64, error) {
	loc, err := l.placeLocked(ledger, entry, payload, rec)
	if err == nil {
		l.mu.ledgers[ledger] += uint64(recordLen(payload, rec))
	}
	return loc, err
}

// recordLen is the length of the record add writes for payload or rec.
func recordLen(payload, rec []byte) int {
	if rec != nil {
		return len(rec)
	}
	return RecordHeaderSize + len(payload)
}

// rollsLocked reports whether adding a record of recLen bytes starts a
// new active log first.
func (l *Log) rollsLocked(recLen int64) bool {
	return l.mu.cur == nil || l.offLocked()+recLen > l.opts.LogSizeLimit
}

// placeLocked is addLocked without the ledger's usage accounting.
func (l *Log) placeLocked(ledger, entry int64, payload, rec []byte) (uint64, error) {
	if ledger < 0 {
		return 0, fmt.Errorf("entrylog: negative ledger id %d", ledger)
	}
	recLen := int64(RecordHeaderSize + len(payload))
	if rec != nil {
		recLen = int64(len(rec))
	}
	if recLen > l.opts.LogSizeLimit-HeaderSize {
		return 0, fmt.Errorf("entrylog: %d-byte payload: %w", recLen-RecordHeaderSize, ErrTooLarge)
	}
	if err := l.checkLocked(); err != nil {
		return 0, err
	}
	if l.rollsLocked(recLen) {
		if err := l.rollLocked(); err != nil {
			return 0, l.failLocked(err)
		}
	}
	direct := recLen > int64(cap(l.mu.buf)) || (rec != nil && recLen >= DirectWriteMin)
	if !direct && len(l.mu.buf)+int(recLen) > cap(l.mu.buf) {
		if err := l.flushLocked(); err != nil {
			return 0, err
		}
	}
	off := l.offLocked()
	loc := Location(l.mu.cur.id, uint32(off))
	switch {
	case !direct && rec != nil:
		l.mu.buf = append(l.mu.buf, rec...)
	case !direct:
		l.mu.buf = AppendRecord(l.mu.buf, ledger, entry, payload)
	default:
		// The buffered records and this one, in one vectored write.
		iov := append(l.mu.iov[:0], l.mu.buf)
		if rec != nil {
			iov = append(iov, rec)
		} else {
			h := l.mu.hdr[:]
			binary.LittleEndian.PutUint32(h[0:], uint32(len(payload)))
			binary.LittleEndian.PutUint64(h[8:], uint64(ledger))
			binary.LittleEndian.PutUint64(h[16:], uint64(entry))
			binary.LittleEndian.PutUint32(h[4:], recordCRC(h, payload))
			iov = append(iov, h, payload)
		}
		err := l.writeLocked(iov)
		clear(iov)
		if err != nil {
			return 0, err
		}
		l.mu.buf = l.mu.buf[:0]
	}
	return loc, nil
}

func (l *Log) checkLocked() error {
	if l.mu.closed {
		return ErrClosed
	}
	return l.mu.err
}

// failLocked makes err the sticky write error, unless it only says that a
// write found no space (IsNoSpace): the state is then unchanged (offsets
// not advanced, buffered records kept) and the write can be retried.
func (l *Log) failLocked(err error) error {
	if IsNoSpace(err) {
		return err
	}
	if l.mu.err == nil {
		l.mu.err = err
	}
	return l.mu.err
}

func (l *Log) offLocked() int64 { return l.mu.bufOff + int64(len(l.mu.buf)) }

// flushLocked writes the buffer to the active file.
func (l *Log) flushLocked() error {
	if len(l.mu.buf) == 0 {
		return nil
	}
	// On failure the buffer is kept: the Log is failed for writes, but the
	// records stay readable.
	iov := append(l.mu.iov[:0], l.mu.buf)
	err := l.writeLocked(iov)
	clear(iov)
	if err != nil {
		return err
	}
	l.mu.buf = l.mu.buf[:0]
	return nil
}

// writeLocked writes bufs back to back at bufOff (the append buffer, if
// among them, must be bufs[0]: bufOff is its file offset) and publishes
// them to readers. It does not reset the append buffer.
func (l *Log) writeLocked(bufs [][]byte) error {
	cur := l.mu.cur
	n := int64(0)
	for _, b := range bufs {
		n += int64(len(b))
	}
	end := l.mu.bufOff + n
	if end > l.mu.prealloc && l.opts.PreallocateSize > 0 {
		n := max(l.opts.PreallocateSize, end-l.mu.prealloc)
		n = min(n, l.opts.LogSizeLimit-l.mu.prealloc)
		if n > 0 {
			err := cur.f.Preallocate(l.mu.prealloc, n)
			if IsNoSpace(err) && end-l.mu.prealloc < n {
				// Not room for a whole step: reserve only what this
				// write needs.
				n = end - l.mu.prealloc
				err = cur.f.Preallocate(l.mu.prealloc, n)
			}
			if err != nil {
				return l.failLocked(fmt.Errorf("entrylog: preallocate %s: %w", cur.path, err))
			}
			l.mu.prealloc += n
		}
	}
	// The pwrite writer does the I/O inside Submit: pwrite(2) or
	// pwritev(2) on a descriptor, WriteAt per buffer otherwise.
	err := l.mu.w.Submit(l.mu.bufOff, bufs, false)
	if err == nil {
		err = l.mu.w.Wait()
	}
	if err != nil {
		return l.failLocked(fmt.Errorf("entrylog: write %s off %d: %w", cur.path, l.mu.bufOff, err))
	}
	start := l.mu.bufOff
	l.mu.bufOff = end
	cur.written.Store(end)
	l.paceLocked(cur, start, end)
	return nil
}

// Flush writes buffered records to the active file (no fsync).
func (l *Log) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkLocked(); err != nil {
		return err
	}
	return l.flushLocked()
}

// Sync flushes and then fsyncs the active file: every entry added before
// Sync was called is durable when it returns nil. Logs rolled earlier were
// synced when they were sealed. The fsync runs without the writer lock, so
// Adds proceed meanwhile.
func (l *Log) Sync() error {
	l.mu.Lock()
	if err := l.checkLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	if err := l.flushLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	cur := l.mu.cur
	if cur == nil || !cur.tryRef() {
		l.mu.Unlock()
		return nil
	}
	end := l.mu.bufOff
	if l.mu.wb.file == cur {
		// Writeback is paced for this log (FlushBytes, or a
		// checkpoint's Writeback): the rest goes to the device in
		// writebackChunk requests too, not as the fsync's large ones.
		l.writebackLocked(cur, end)
	}
	l.mu.Unlock()
	defer cur.release()
	if err := cur.f.Sync(); err != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.failLocked(fmt.Errorf("entrylog: sync %s: %w", cur.path, syncError{err}))
	}
	cur.recordSyncedEnd(end)
	return nil
}

// recordSyncedEnd writes end, up to which the file was just fsynced, into
// the header's synced-end field, for a scan after a crash to tell a torn
// unsynced tail from corruption. The write becomes durable with the next
// Sync or the seal, so the durable value never exceeds what was synced.
// It is advisory: a failed write is ignored (the scan then falls back to
// an earlier value or to the zero-page rule).
func (f *logFile) recordSyncedEnd(end int64) {
	f.syncedMu.Lock()
	defer f.syncedMu.Unlock()
	if end <= f.syncedEnd || !f.active.Load() {
		return
	}
	f.syncedEnd = end
	_, _ = f.f.WriteAt(appendSyncedEnd(nil, uint64(end)), syncedEndOffset)
}

// rollLocked seals the active log (if any) and makes the prepared next
// log active, preparing the one after it in the background.
func (l *Log) rollLocked() error {
	if cur := l.mu.cur; cur != nil {
		if err := l.sealLocked(cur); err != nil {
			return err
		}
		l.mu.cur, l.mu.w = nil, nil
	}
	if l.mu.next == nil {
		l.startPrepareLocked()
	}
	p := <-l.mu.next
	l.mu.next = nil
	if IsNoSpace(p.err) {
		// Prepared while the disk was full: space may be back now.
		l.startPrepareLocked()
		p = <-l.mu.next
		l.mu.next = nil
	}
	if p.err != nil {
		return p.err
	}
	lf := newLogFile(l.opts.FS, l.remove(), p.id, p.path, p.f, HeaderSize)
	lf.active.Store(true)
	w, err := uring.NewWriter(p.f, uring.ModePwrite)
	if err != nil {
		return fmt.Errorf("entrylog: %s: %w", p.path, err)
	}
	l.mu.cur, l.mu.w = lf, w
	l.mu.bufOff = HeaderSize
	l.mu.prealloc = p.prealloc
	l.mu.ledgers = map[int64]uint64{}
	l.swapFiles(func(s *fileSet) { s.files[p.id] = lf })
	l.startPrepareLocked()
	return nil
}

// prepared is a created, preallocated log whose header and directory entry
// are durable, waiting to become the active log.
type prepared struct {
	id       uint32
	path     string
	f        vfs.File
	prealloc int64
	err      error
}

// startPrepareLocked reserves the next log id and directory and creates
// that log in a goroutine (owned by l, waited for by Close), so that a roll
// does not wait for file creation and its fsyncs.
func (l *Log) startPrepareLocked() {
	id, dir := l.mu.nextID, l.opts.Dirs[l.mu.nextDir%len(l.opts.Dirs)]
	l.mu.nextID++
	l.mu.nextDir++
	ch := make(chan prepared, 1)
	l.mu.next = ch
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		ch <- l.prepare(id, dir)
	}()
}

func (l *Log) prepare(id uint32, dir string) prepared {
	p := prepared{id: id, path: filepath.Join(dir, FileName(id))}
	f, err := l.opts.FS.Create(p.path)
	if err != nil {
		p.err = fmt.Errorf("entrylog: %w", err)
		return p
	}
	p.prealloc = min(l.opts.PreallocateSize, l.opts.LogSizeLimit)
	if p.prealloc > 0 {
		if err = f.Preallocate(0, p.prealloc); IsNoSpace(err) {
			// The first write preallocates what it needs.
			p.prealloc, err = 0, nil
		}
		if err != nil {
			err = fmt.Errorf("entrylog: preallocate %s: %w", p.path, err)
		}
	}
	if err == nil {
		if _, err = f.WriteAt(AppendHeader(nil, Header{Version: Version}), 0); err != nil {
			err = fmt.Errorf("entrylog: write header %s: %w", p.path, err)
		}
	}
	if err == nil {
		if err = f.Sync(); err != nil {
			err = fmt.Errorf("entrylog: sync %s: %w", p.path, syncError{err})
		}
	}
	if err == nil {
		if err = l.opts.FS.SyncDir(dir); err != nil {
			err = fmt.Errorf("entrylog: sync dir %s: %w", dir, err)
		}
	}
	if err != nil {
		// The file holds no record: remove it, so that a disk that is
		// full does not collect empty logs with every retry.
		f.Close()
		if l.opts.FS.Remove(p.path) == nil {
			_ = l.opts.FS.SyncDir(dir)
		}
		p.err = err
		return p
	}
	p.f = f
	return p
}

// remove is Options.Remove, or the file system's.
func (l *Log) remove() func(string) error {
	if l.opts.Remove != nil {
		return l.opts.Remove
	}
	return l.opts.FS.Remove
}

// dropPreparedLocked waits for the prepared log, if any, and deletes it:
// it holds no record.
func (l *Log) dropPreparedLocked() {
	if l.mu.next == nil {
		return
	}
	p := <-l.mu.next
	l.mu.next = nil
	if p.err != nil {
		return
	}
	p.f.Close()
	if l.opts.FS.Remove(p.path) == nil {
		_ = l.opts.FS.SyncDir(filepath.Dir(p.path))
	}
}

// sealLocked appends the ledgers map to cur, patches the header and syncs.
//
// The records are synced before the map and the header are written: a
// crash may then lose the map or the header (the log reads back as an
// unsealed log with a torn tail), but never keep the map while losing
// records before it, which would read back as a hole followed by a valid
// record, i.e. as corruption.
func (l *Log) sealLocked(cur *logFile) error {
	if err := l.flushLocked(); err != nil {
		return err
	}
	if err := cur.f.Sync(); err != nil {
		return fmt.Errorf("entrylog: sync %s: %w", cur.path, syncError{err})
	}
	pairs := sortedPairs(l.mu.ledgers)
	mapOff := l.mu.bufOff
	rec := AppendLedgersMap(nil, pairs)
	if err := l.writeLocked([][]byte{rec}); err != nil {
		return err
	}
	// A seal that fails from here on leaves the log active with its data
	// ending at mapOff: a retry writes the map there again.
	rewind := func() {
		l.mu.bufOff = mapOff
		cur.written.Store(mapOff)
	}
	h := Header{Version: Version, MapOffset: uint64(mapOff), LedgerCount: uint32(len(pairs)), MapLength: uint32(len(rec)), SyncedEnd: uint64(mapOff)}
	cur.syncedMu.Lock()
	cur.syncedEnd = mapOff
	_, err := cur.f.WriteAt(AppendHeader(nil, h), 0)
	cur.syncedMu.Unlock()
	if err != nil {
		rewind()
		return fmt.Errorf("entrylog: patch header %s: %w", cur.path, err)
	}
	if err := cur.f.Sync(); err != nil {
		return fmt.Errorf("entrylog: sync %s: %w", cur.path, syncError{err})
	}
	cur.ledgersMu.Lock()
	cur.ledgers, cur.known = pairs, true
	cur.dataEnd = mapOff
	cur.ledgersMu.Unlock()
	cur.active.Store(false)
	l.mu.ledgers = nil
	return nil
}

func sortedPairs(m map[int64]uint64) []Pair {
	pairs := make([]Pair, 0, len(m))
	for k, v := range m {
		pairs = append(pairs, Pair{k, v})
	}
	slices.SortFunc(pairs, comparePairs)
	return pairs
}

// ActiveLogID returns a log id such that every log with a smaller id is
// sealed: the id of the log receiving appends, or one past the newest log
// if none is active.
//
// The bookie uses it to pick logs that are safe to compact: read it while
// no write-cache flush is running (all index updates for entries already
// added are done), and compact only logs with a smaller id. A log sealed
// while a flush is still setting index locations for its entries must not
// be compacted yet: relocating an entry before its first index update
// would let that update overwrite the new location with the old one.
func (l *Log) ActiveLogID() uint32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.cur != nil {
		return l.mu.cur.id
	}
	ids := l.files.Load().ids
	if len(ids) == 0 {
		return 1
	}
	return ids[len(ids)-1] + 1
}

// Roll seals the active log and starts a new one at the next Add. The
// bookie may call it, for example, before compacting so that recent data
// becomes eligible.
func (l *Log) Roll() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkLocked(); err != nil {
		return err
	}
	cur := l.mu.cur
	if cur == nil {
		return nil
	}
	if err := l.sealLocked(cur); err != nil {
		return l.failLocked(err)
	}
	l.mu.cur, l.mu.w = nil, nil
	return nil
}

// Close seals the active log (appends its ledgers map and syncs it) and
// closes every file once in-flight reads finish. After a write error, or
// when there is no space left for the map, it only closes: the active log
// then stays map-less, as after a crash.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	err := l.mu.err
	if cur := l.mu.cur; cur != nil && err == nil {
		err = l.sealLocked(cur)
		if IsNoSpace(err) {
			// Every record synced before stays durable; the log reads
			// back as an unsealed one (scanned, then sealed, on the next
			// open). Not a failure of Close.
			l.opts.Logger.Warn("entrylog: no space to seal the active log at close; it will be scanned at the next open", "path", cur.path, "err", err)
			err = nil
		}
	}
	l.dropPreparedLocked()
	l.mu.closed = true
	l.mu.cur, l.mu.w = nil, nil
	old := l.files.Swap(&fileSet{files: map[uint32]*logFile{}})
	l.mu.Unlock()
	l.wg.Wait()
	for _, f := range old.files {
		f.release()
	}
	return err
}
