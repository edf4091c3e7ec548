package journal

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// readChunk is how much the scanner reads at a time.
const readChunk = 1 << 20

// fileReader reads a file through a window buffer.
type fileReader struct {
	f    vfs.File
	size int64
	buf  []byte
	off  int64 // file offset of buf[0]
}

// at returns the bytes at [off, off+n), clipped to the file size. The slice
// is valid until the next call.
func (r *fileReader) at(off int64, n int) ([]byte, error) {
	if off >= r.size {
		return nil, nil
	}
	n = int(min(int64(n), r.size-off))
	if off >= r.off && off+int64(n) <= r.off+int64(len(r.buf)) {
		return r.buf[off-r.off : off-r.off+int64(n)], nil
	}
	want := int(min(int64(max(n, readChunk)), r.size-off))
	if cap(r.buf) < want {
		r.buf = make([]byte, want)
	}
	r.buf = r.buf[:want]
	m, err := r.f.ReadAt(r.buf, off)
	if err != nil && !(errors.Is(err, io.EOF) && m == want) {
		r.buf, r.off = r.buf[:0], 0
		return nil, err
	}
	r.off = off
	return r.buf[:n], nil
}

// scanArgs describes one pass over the journal.
type scanArgs struct {
	fs  vfs.FS
	dir string
	// from: records ending at or before it are validated but not passed
	// to fn. Files before from.FileID are not read.
	from Position
	// limit, when non-zero, ends the pass: nothing at or past it is read.
	limit Position
	// repair truncates a torn tail (and removes a last file whose header
	// never became durable). Without it a torn tail just ends the pass.
	repair bool
	logger *slog.Logger
	fn     func(Record, Position) error
	// strictFrom makes a from.FileID that no longer exists an error.
	strictFrom bool
}

// scanResult is where a pass ended.
type scanResult struct {
	lastFileID uint64 // last file read, 0 if none
	nextSeq    uint64 // sequence number the next record must have, 0 if unknown
}

// scan validates the journal files from a.from onwards, calling a.fn for
// the records after a.from. See doc.go, "Replay and torn tails".
func scan(a scanArgs) (scanResult, error) {
	var res scanResult
	ids, err := listFiles(a.fs, a.dir)
	if err != nil {
		return res, fmt.Errorf("journal: %w", err)
	}
	start := 0
	for start < len(ids) && ids[start] < a.from.FileID {
		start++
	}
	if a.strictFrom && a.from.FileID != 0 && (start == len(ids) || ids[start] != a.from.FileID) {
		return res, fmt.Errorf("%w: %v", ErrMarkNotFound, a.from)
	}
	ids = ids[start:]
	if a.limit != (Position{}) {
		n := 0
		for n < len(ids) && ids[n] <= a.limit.FileID {
			n++
		}
		ids = ids[:n]
	}
	var r fileReader
	for i, id := range ids {
		last := i == len(ids)-1
		next, removed, err := scanFile(&a, &r, id, res.nextSeq, last)
		if err != nil {
			return res, err
		}
		if removed {
			break
		}
		res.lastFileID, res.nextSeq = id, next
	}
	return res, nil
}

// scanFile scans one file. expect is the sequence number its first record
// must have (0: take the header's). It returns the sequence number after
// the file's last valid record, or removed when the file was a last file
// with an unwritten header and was dropped.
func scanFile(a *scanArgs, r *fileReader, id, expect uint64, last bool) (next uint64, removed bool, err error) {
	p := path.Join(a.dir, fileName(id))
	var f vfs.File
	if a.repair {
		f, err = a.fs.OpenReadWrite(p)
	} else {
		f, err = a.fs.Open(p)
	}
	if err != nil {
		return 0, false, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, false, fmt.Errorf("journal: %w", err)
	}
	*r = fileReader{f: f, size: fi.Size(), buf: r.buf[:0]}
	corrupt := func(off int64, format string, args ...any) error {
		return fmt.Errorf("journal: %s offset %d: %s: %w", p, off, fmt.Sprintf(format, args...), ErrCorrupt)
	}

	hb, err := r.at(0, FileHeaderSize)
	if err != nil {
		return 0, false, fmt.Errorf("journal: %s: %w", p, err)
	}
	_, h, herr := decodeFileHeader(hb)
	if herr != nil {
		// A crash between creating a file and syncing its header leaves at
		// most a (possibly torn) header, or zeros: records are only
		// written after the header is synced, so none was acknowledged.
		if last {
			rest := r.size <= FileHeaderSize
			if !rest {
				var rerr error
				if rest, rerr = isZeroFrom(r, 0); rerr != nil {
					return 0, false, fmt.Errorf("journal: %s: %w", p, rerr)
				}
			}
			if rest && !a.repair {
				return expect, true, nil // nothing in it; leave it alone
			}
			if rest {
				a.logger.Warn("journal: removing last file with unwritten header", "path", p, "size", r.size)
				f.Close()
				if err := a.fs.Remove(p); err != nil {
					return 0, false, fmt.Errorf("journal: %w", err)
				}
				if err := a.fs.SyncDir(a.dir); err != nil {
					return 0, false, fmt.Errorf("journal: %w", err)
				}
				return 0, true, nil
			}
		}
		return 0, false, corrupt(0, "%v", herr)
	}
	if h.FileID != id {
		return 0, false, corrupt(0, "header names file %x", h.FileID)
	}
	if expect != 0 && h.BaseSeq != expect {
		return 0, false, corrupt(0, "first sequence number %d, want %d (records missing)", h.BaseSeq, expect)
	}
	expect = h.BaseSeq

	end := r.size
	if a.limit != (Position{}) && id == a.limit.FileID {
		end = min(end, a.limit.Offset)
	}
	off := int64(FileHeaderSize)
	for off < end {
		b, err := r.at(off, RecordHeaderSize)
		if err != nil {
			return 0, false, fmt.Errorf("journal: %s: %w", p, err)
		}
		hdr, derr := decodeRecordHeader(b)
		var rec Record
		if derr == nil {
			b, err = r.at(off, RecordHeaderSize+int(hdr.Length))
			if err != nil {
				return 0, false, fmt.Errorf("journal: %s: %w", p, err)
			}
			_, hdr, rec, derr = decodeRecord(b)
		}
		if derr != nil {
			bad, why, err := provenSynced(r, off, expect)
			if err != nil {
				return 0, false, fmt.Errorf("journal: %s: %w", p, err)
			}
			if bad {
				return 0, false, corrupt(off, "%v (expected sequence %d; %s)", derr, expect, why)
			}
			if a.repair {
				a.logger.Warn("journal: truncating torn tail", "path", p, "offset", off,
					"size", r.size, "reason", derr.Error(), "next_seq", expect)
				if err := f.Truncate(off); err != nil {
					return 0, false, fmt.Errorf("journal: truncate %s: %w", p, err)
				}
				if err := f.Sync(); err != nil {
					return 0, false, fmt.Errorf("journal: truncate %s: %w", p, err)
				}
			}
			return expect, false, nil
		}
		if hdr.Seq != expect {
			return 0, false, corrupt(off, "sequence number %d, want %d", hdr.Seq, expect)
		}
		expect++
		recEnd := off + RecordHeaderSize + int64(hdr.Length)
		pos := Position{FileID: id, Offset: recEnd}
		if a.fn != nil && hdr.Type != typeMark && a.from.Less(pos) {
			if err := a.fn(rec, pos); err != nil {
				return 0, false, err
			}
		}
		off = recEnd
	}
	return expect, false, nil
}

// isZeroFrom reports whether the file holds only zero bytes from off on.
func isZeroFrom(r *fileReader, off int64) (bool, error) {
	for off < r.size {
		b, err := r.at(off, readChunk)
		if err != nil {
			return false, err
		}
		if !allZero(b) {
			return false, nil
		}
		off += int64(len(b))
	}
	return true, nil
}

// provenSynced decides what an invalid record at off (which should have had
// sequence number s) is. It looks at every later offset for a record with a
// valid checksum. Such a record from a later group than s proves that s was
// synced (a group is written only after the previous one's sync returned),
// so the invalid record is corruption. So does a valid record that does not
// belong after s at all. Valid records of s's own group do not: the
// kernel or the disk may persist the pages of one unsynced write in any
// order, and nothing in that group was acknowledged.
func provenSynced(r *fileReader, off int64, s uint64) (bool, string, error) {
	for p := off + 1; p+RecordHeaderSize <= r.size; p++ {
		b, err := r.at(p, RecordHeaderSize)
		if err != nil {
			return false, "", err
		}
		// Cheap filters first: most offsets fail on the type byte.
		if t := RecordType(b[20]); !t.valid() || b[21]|b[22]|b[23] != 0 {
			continue
		}
		h, err := decodeRecordHeader(b)
		if err != nil || p+RecordHeaderSize+int64(h.Length) > r.size {
			continue
		}
		b, err = r.at(p, RecordHeaderSize+int(h.Length))
		if err != nil {
			return false, "", err
		}
		if _, _, _, err := decodeRecord(b); err != nil {
			continue
		}
		if h.Seq < s {
			return true, fmt.Sprintf("valid record with old sequence %d at offset %d follows", h.Seq, p), nil
		}
		if h.groupFirst() > s {
			return true, fmt.Sprintf("valid record %d of a later group at offset %d follows", h.Seq, p), nil
		}
		p += RecordHeaderSize + int64(h.Length) - 1
	}
	return false, "", nil
}

// Replay calls fn for every record after from, in order, with the position
// just past it, up to the durable end of the journal as of the call. Use
// LastMark() as from on start. fn's Record.Payload is only valid during the
// call. An error from fn stops the replay and is returned as is; damaged
// data gives an error wrapping ErrCorrupt with the file and offset.
// Reading from a checkpoint rereads the checkpoint's file from its start
// (to check sequence numbers), skipping records up to from.
func (j *Journal) Replay(from Position, fn func(Record, Position) error) error {
	limit, _ := j.c.state()
	if limit.Less(from) {
		return fmt.Errorf("%w: %v is past the end %v", ErrMarkNotFound, from, limit)
	}
	_, err := scan(scanArgs{
		fs: j.opts.FS, dir: j.opts.Dir, from: from, limit: limit,
		logger: j.opts.Logger, fn: fn, strictFrom: from.FileID != 0,
	})
	return err
}

// ReplayDir reads the journal in dir without opening it for writing (for
// tools such as a journal dump): like Replay, but up to the end of the
// files, without repairing anything. A torn tail ends its file quietly;
// corruption is an error wrapping ErrCorrupt. Do not use it on a directory
// a Journal is writing to.
func ReplayDir(fs vfs.FS, dir string, from Position, fn func(Record, Position) error) error {
	_, err := scan(scanArgs{
		fs: fs, dir: dir, from: from, fn: fn,
		logger: slog.New(slog.DiscardHandler), strictFrom: from.FileID != 0,
	})
	return err
}
