package journal

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/magnetar-mq/magnetar/internal/uring"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

const fileSuffix = ".txn"

// fileName is the name of journal file id: 16 hex digits, so that names
// sort like ids.
func fileName(id uint64) string { return fmt.Sprintf("%016x%s", id, fileSuffix) }

// parseFileName returns the id of a journal file name.
func parseFileName(name string) (uint64, bool) {
	hex, ok := strings.CutSuffix(name, fileSuffix)
	if !ok || len(hex) != 16 {
		return 0, false
	}
	id, err := strconv.ParseUint(hex, 16, 64)
	return id, err == nil
}

// listFiles returns the ids of the journal files in dir, ascending.
func listFiles(fs vfs.FS, dir string) ([]uint64, error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, err
	}
	var ids []uint64
	for _, n := range names {
		if id, ok := parseFileName(n); ok {
			ids = append(ids, id)
		}
	}
	return ids, nil // List is sorted and names are fixed-width
}

// Journal is a write-ahead log with group commit. Append, Replay,
// Checkpoint, LastMark and Durable are safe for concurrent use; Close must
// be called once, after which Append fails with ErrClosed.
type Journal struct {
	opts Options
	c    *committer

	// Owned by the committer goroutine (commitEnv.write and wait).
	f        vfs.File
	w        uring.Writer
	fileID   uint64
	off      int64        // end of the data written to f
	prealloc int64        // f is preallocated up to here
	direct   *directState // DirectIO only
	zero     *zeroFiller  // ZeroFill only

	writerKind atomic.Pointer[string] // "io_uring", "pwrite" or "io_uring+pwrite"

	markMu sync.Mutex // serializes Checkpoint; guards mark
	mark   Position

	closeOnce sync.Once
	closeErr  error
}

// Open opens (creating if needed) the journal in opts.Dir. It scans the
// files from the last checkpoint, truncates a torn tail (logging it),
// fails with an error wrapping ErrCorrupt on corruption, and starts a new
// journal file for appends. Call Replay(LastMark(), ...) to re-apply what
// is after the checkpoint.
func Open(opts Options) (*Journal, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	fs, dir := opts.FS, opts.Dir
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	// The directory entry of dir itself must be durable before anything
	// in it is acknowledged.
	if err := fs.SyncDir(path.Dir(path.Clean(dir))); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	mark, err := readMark(fs, dir)
	if err != nil {
		return nil, err
	}
	res, err := scan(scanArgs{fs: fs, dir: dir, from: mark, repair: true, logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	j := &Journal{opts: opts, mark: mark}
	if opts.ZeroFill && opts.PreallocSize > 0 && !opts.NoSync {
		j.zero = newZeroFiller(zeroAhead(opts), opts.Alignment, opts.Logger)
	}
	id := max(res.lastFileID, mark.FileID) + 1
	nextSeq := res.nextSeq
	if nextSeq == 0 {
		nextSeq = 1
	}
	if err := j.createFile(id, nextSeq); err != nil {
		if j.zero != nil {
			j.zero.close()
		}
		return nil, err
	}
	j.c = newCommitter(commitEnv{write: j.write, wait: j.wait, blocking: j.blocking}, committerOptions{
		maxWait:    opts.MaxGroupWait,
		maxBytes:   opts.MaxGroupBytes,
		maxEntries: opts.MaxGroupEntries,
		maxQueued:  opts.MaxQueuedBytes,
		mark:       true,
	}, nextSeq, Position{FileID: id, Offset: FileHeaderSize})
	return j, nil
}

// createFile creates journal file id whose first record will have sequence
// number baseSeq, makes its header and directory entry durable, and makes
// it the current file.
func (j *Journal) createFile(id, baseSeq uint64) error {
	fs := j.opts.FS
	p := path.Join(j.opts.Dir, fileName(id))
	f, err := fs.Create(p)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	fail := func(err error) error {
		// The file is new and holds nothing acknowledged: a start that
		// fails (a full disk) leaves no empty journal file behind.
		f.Close()
		fs.Remove(p)
		return fmt.Errorf("journal: create %s: %w", p, err)
	}
	hdr := appendFileHeader(nil, fileHeader{FileID: id, BaseSeq: baseSeq})
	if _, err := f.WriteAt(hdr, 0); err != nil {
		return fail(err)
	}
	prealloc := j.opts.PreallocSize
	if err := f.Preallocate(0, prealloc); err != nil {
		if !isNoSpace(err) {
			return fail(err)
		}
		// A nearly full disk: the first write preallocates what it
		// needs (write).
		prealloc = 0
	}
	if j.opts.DirectIO && prealloc > 0 {
		// Direct writes past the size take the slow, metadata-heavy
		// extending path; see direct.go.
		if err := f.Truncate(prealloc); err != nil {
			return fail(err)
		}
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := fs.SyncDir(j.opts.Dir); err != nil {
		return fail(err)
	}
	wf := f // the file the group writes go to
	var direct *directState
	if j.opts.DirectIO {
		var df vfs.File
		if do, ok := fs.(vfs.DirectOpener); ok {
			if df, err = do.OpenDirect(p); err != nil {
				return fail(fmt.Errorf("O_DIRECT: %w", err))
			}
			wf = df
		}
		direct = newDirectState(j.opts.Alignment, df, hdr, j.direct)
	}
	w, err := uring.NewWriter(wf, j.opts.WriterMode)
	if err != nil {
		if direct != nil && direct.f != nil {
			direct.f.Close()
		}
		return fail(err)
	}
	j.f, j.w, j.fileID, j.off, j.prealloc, j.direct = f, w, id, FileHeaderSize, prealloc, direct
	kind := fmt.Sprint(w)
	if direct != nil {
		kind += "+direct"
	}
	j.writerKind.Store(&kind)
	if j.zero != nil {
		zf := f
		if direct != nil && direct.f != nil {
			zf = direct.f
		}
		j.zero.setFile(zf, FileHeaderSize, prealloc)
	}
	return nil
}

// closeFile releases the current file and its writer; nothing is in flight.
func (j *Journal) closeFile() error {
	if j.f == nil {
		return nil
	}
	if j.zero != nil {
		// No fill in flight past this point; the zeros past the last
		// record go with the truncate below.
		j.zero.setFile(nil, 0, 0)
	}
	err := j.w.Close()
	if d := j.direct; d != nil {
		if d.f != nil {
			if cerr := d.f.Close(); err == nil {
				err = cerr
			}
			d.f = nil
		}
	}
	if j.direct != nil || j.zero != nil {
		// Drop the zero padding and fill past the last record (replay
		// would take them for a torn tail), durably below.
		if err == nil {
			err = j.f.Truncate(j.off)
		}
	}
	if j.opts.NoSync || j.direct != nil || j.zero != nil {
		// Even without per-group syncs, a file is synced when left.
		if serr := j.f.Sync(); err == nil {
			err = serr
		}
	}
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	j.f, j.w = nil, nil
	return err
}

// write is commitEnv.write: roll if the group would pass MaxFileSize,
// extend the preallocation, and submit write+sync.
func (j *Journal) write(g *group) error {
	n := int64(g.size)
	if j.off > FileHeaderSize && j.off+n > j.opts.MaxFileSize {
		if err := j.closeFile(); err != nil {
			return err
		}
		if err := j.createFile(j.fileID+1, g.firstSeq); err != nil {
			return err
		}
	}
	end := j.off + n
	if j.direct != nil {
		end = j.direct.paddedEnd(j.off, g.size)
	}
	need := end
	if j.zero != nil {
		// Keep preallocated room ahead for the zero fill, within the file
		// size limit.
		need = max(end, min(end+j.zero.ahead, j.opts.MaxFileSize))
	}
	if need > j.prealloc && j.opts.PreallocSize > 0 {
		step := j.opts.PreallocSize
		newEnd := (need + step - 1) / step * step
		err := j.f.Preallocate(j.prealloc, newEnd-j.prealloc)
		if isNoSpace(err) && newEnd > end {
			// Not room for a whole step: reserve only this group.
			newEnd = end
			err = j.f.Preallocate(j.prealloc, newEnd-j.prealloc)
		}
		if err != nil {
			return err
		}
		if j.direct != nil {
			if err := j.f.Truncate(newEnd); err != nil {
				return err
			}
		}
		j.prealloc = newEnd
		if j.zero != nil {
			j.zero.setLimit(newEnd)
		}
	}
	g.fileID, g.off = j.fileID, j.off
	at, bufs := j.off, g.chunks
	if d := j.direct; d != nil {
		var buf []byte
		at, buf = d.stageGroup(j.off, g.chunks, g.size)
		bufs = [][]byte{buf}
	}
	if j.zero != nil {
		j.zero.claim(at, end)
	}
	if err := j.w.Submit(at, bufs, !j.opts.NoSync); err != nil {
		return err
	}
	j.off += n
	return nil
}

// zeroAhead is how far ahead of the writer a ZeroFill journal keeps zeros:
// half a preallocation step, at most 4 MiB, at least one chunk.
func zeroAhead(o Options) int64 {
	return max(min(o.PreallocSize/2, 4<<20), zeroChunk)
}

// blocking is commitEnv.blocking.
func (j *Journal) blocking(n int) bool { return j.w != nil && j.w.Blocking(n) }

// wait is commitEnv.wait.
func (j *Journal) wait() error { return j.w.Wait() }

// Append queues rec and calls c.AppendDone once rec is durable (after the
// fdatasync covering it returned; after the write alone when the journal
// is not Durable) or has failed. Completions run in append order on one
// goroutine, except refusals (ErrInvalidType, ErrTooLarge, ErrClosed),
// which are delivered on the caller's goroutine before Append returns.
// The payload is copied before Append returns. c may be nil. Append blocks
// while more than MaxQueuedBytes are queued.
func (j *Journal) Append(rec Record, c Completion) {
	if j.refuse(&rec, c) {
		return
	}
	j.c.append(&rec, c)
}

// AppendWithCRC is Append for a caller that already has pcrc, the CRC-32C
// (Castagnoli) of rec.Payload as hash/crc32.Checksum computes it: the
// journal then does not read the payload a second time for its record
// checksum (the bookie computes the CRC once for the journal and the entry
// log). pcrc must have been computed over these very bytes: a wrong one
// writes a record that replay rejects as torn or corrupt.
func (j *Journal) AppendWithCRC(rec Record, pcrc uint32, c Completion) {
	if j.refuse(&rec, c) {
		return
	}
	j.c.appendCRC(&rec, pcrc, false, c)
}

// AppendBatchWithCRC is AppendWithCRC for recs[i], pcrcs[i] and cs[i], in
// order, with the same guarantees per record; the queue's lock is taken
// once for as many records as the queue has room for. The three slices
// have the same length. A completion may be nil: a caller that gives only
// the batch's last record one learns, when it runs without an error,
// that the whole batch is durable (records complete in order), and pays
// no completion per record. A refused record without a completion
// passes its error on: the records after it up to the next completion
// are refused too, and that completion receives the error.
func (j *Journal) AppendBatchWithCRC(recs []Record, pcrcs []uint32, cs []Completion) {
	for i := 0; i < len(recs); {
		k := i
		for k < len(recs) && j.refusal(&recs[k]) == nil {
			k++
		}
		for i < k {
			n := j.c.appendBatchCRC(recs[i:k], pcrcs[i:k], cs[i:k])
			if n == 0 {
				j.c.appendCRC(&recs[i], pcrcs[i], false, cs[i])
				n = 1
			}
			i += n
		}
		if k < len(recs) {
			i = j.refuseInBatch(recs, cs, k)
		}
	}
}

// refuseInBatch refuses recs[k] and returns where the batch goes on. A
// refused record without a completion cannot report its error, and a
// later completion must not report success for a span that lost a
// record: the records up to the next one with a completion are refused
// with the same error, which that completion receives.
func (j *Journal) refuseInBatch(recs []Record, cs []Completion, k int) int {
	err := j.refusal(&recs[k])
	m := k
	for m < len(recs)-1 && cs[m] == nil {
		m++
	}
	if cs[m] != nil {
		cs[m].AppendDone(Position{}, err)
	}
	return m + 1
}

// RefMinPayload is the payload size from which AppendRef writes a payload
// from the caller's memory; smaller ones are copied as by Append.
const RefMinPayload = 64 << 10

// AppendRef is AppendWithCRC for a caller that keeps rec.Payload unmodified
// until c.AppendDone has run (c must not be nil): a payload of at least
// RefMinPayload bytes is then not copied into the group but written from
// rec.Payload by the group's vectored write (the record header is encoded
// as usual, the bytes on disk are the same). The bookie passes the entry's
// copy in its write cache, which it keeps until the completion.
func (j *Journal) AppendRef(rec Record, pcrc uint32, c Completion) {
	if j.refuse(&rec, c) {
		return
	}
	j.c.appendCRC(&rec, pcrc, len(rec.Payload) >= RefMinPayload && c != nil, c)
}

// refuse completes c with the reason rec cannot be appended, if any.
func (j *Journal) refuse(rec *Record, c Completion) bool {
	err := j.refusal(rec)
	if err == nil {
		return false
	}
	if c != nil {
		c.AppendDone(Position{}, err)
	}
	return true
}

// refusal is the reason rec cannot be appended, or nil.
func (j *Journal) refusal(rec *Record) error {
	switch {
	case !rec.Type.valid() || rec.Type == typeMark:
		return fmt.Errorf("%w: %d", ErrInvalidType, rec.Type)
	case len(rec.Payload) > MaxPayloadSize:
		return fmt.Errorf("%w: %d bytes", ErrTooLarge, len(rec.Payload))
	}
	return nil
}

// Sync is a barrier that writes nothing: c.AppendDone runs once every
// record appended before Sync was called is durable, with the position
// just past the last of them (the position that record's completion gets;
// not past records appended after Sync, so a Checkpoint at it keeps them),
// or with the sticky error (ErrClosed after Close began). It runs on the
// completion goroutine after the completions of those records, or at once
// on the caller's goroutine when nothing is pending. Sync never blocks;
// the position it yields is a valid Checkpoint.
func (j *Journal) Sync(c Completion) { j.c.sync(c) }

// AppendFunc is Append with a function completion.
func (j *Journal) AppendFunc(rec Record, done func(Position, error)) {
	var c Completion
	if done != nil {
		c = CompletionFunc(done)
	}
	j.Append(rec, c)
}

// Durable reports whether completions mean fdatasync'ed (false with
// NoSync; results measured that way must be labelled "not durable").
func (j *Journal) Durable() bool { return !j.opts.NoSync }

// WriterKind names the durable-write path in use ("io_uring", "pwrite" or "io_uring+pwrite"),
// for benchmark labels and logs.
func (j *Journal) WriterKind() string { return *j.writerKind.Load() }

// Err returns the sticky failure, or nil while the journal is healthy.
func (j *Journal) Err() error { return j.c.failure() }

// End returns the position just past the last durable record.
func (j *Journal) End() Position {
	p, _ := j.c.state()
	return p
}

// Close flushes what is queued, waits for its completions and for the
// journal's goroutines, and closes the current file. It returns the
// sticky failure, if any. Later calls return the first call's result.
func (j *Journal) Close() error {
	j.closeOnce.Do(func() {
		err := j.c.close()
		if cerr := j.closeFile(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("journal: close: %w", cerr))
		}
		if j.zero != nil {
			j.zero.close()
		}
		j.closeErr = err
	})
	return j.closeErr
}

// isNoSpace reports whether err says the file system is full (ENOSPC, or
// EDQUOT: over quota).
func isNoSpace(err error) bool {
	return err != nil && (errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT))
}
