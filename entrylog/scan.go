package entrylog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// Record is one entry yielded by a scan. Payload is only valid during the
// callback.
type Record struct {
	Ledger  int64
	Entry   int64
	Loc     uint64
	Payload []byte
}

// ScanFile reads the log at path and calls fn for each entry in file order.
// Ledgers-map records are not yielded. The log id in each Loc comes from
// the file name (0 if the name is not a log name).
//
// A torn tail (a zeroed, short or invalid record after which no valid
// record follows) ends the scan quietly. An invalid record followed by a
// valid one is mid-file corruption: ErrCorrupt naming path and offset. An
// error returned by fn stops the scan and is returned.
func ScanFile(fs vfs.FS, path string, fn func(Record) error) error {
	f, err := fs.Open(path)
	if err != nil {
		return fmt.Errorf("entrylog: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("entrylog: %w", err)
	}
	id, _ := ParseFileName(filepath.Base(path))
	_, err = scan(f, path, id, fi.Size(), fn)
	return err
}

// Scan is ScanFile over log id of l. It does not block writers; for the
// active log it sees the records written to the file so far.
func (l *Log) Scan(id uint32, fn func(Record) error) error {
	f, err := l.acquire(id)
	if err != nil {
		return err
	}
	defer f.release()
	_, err = scan(f.f, f.path, id, f.written.Load(), fn)
	return err
}

// scan reads records from HeaderSize to size. It returns the end of the
// last valid data record (the offset the ledgers map starts at, if any).
func scan(r io.ReaderAt, path string, id uint32, size int64, fn func(Record) error) (int64, error) {
	hdr := make([]byte, HeaderSize)
	if n, err := r.ReadAt(hdr, 0); n < HeaderSize {
		if err == nil || errors.Is(err, io.EOF) {
			err = ErrCorrupt
		}
		return 0, fmt.Errorf("entrylog: %s off 0: short header: %w", path, err)
	}
	_, h, sealed, err := DecodeHeader(hdr)
	if err != nil {
		return 0, fmt.Errorf("entrylog: %s off 0: %w", path, err)
	}
	synced := int64(h.SyncedEnd)
	br := bufio.NewReaderSize(io.NewSectionReader(r, HeaderSize, size-HeaderSize), int(min(256<<10, max(size-HeaderSize, 16))))
	var hb [RecordHeaderSize]byte
	var payload []byte
	off := int64(HeaderSize)
	dataEnd := off
	for {
		if size-off < RecordHeaderSize {
			return dataEnd, tornOrCorrupt(r, path, off, size, sealed, synced)
		}
		if _, err := io.ReadFull(br, hb[:]); err != nil {
			return dataEnd, fmt.Errorf("entrylog: read %s off %d: %w", path, off, err)
		}
		h := decodeRecordHeader(hb[:])
		if isZero(hb[:]) || h.ledger < MapLedgerID || int64(h.n) > size-off-RecordHeaderSize {
			return dataEnd, tornOrCorrupt(r, path, off, size, sealed, synced)
		}
		if cap(payload) < int(h.n) {
			payload = make([]byte, h.n)
		}
		payload = payload[:h.n]
		if _, err := io.ReadFull(br, payload); err != nil {
			return dataEnd, fmt.Errorf("entrylog: read %s off %d: %w", path, off, err)
		}
		if recordCRC(hb[:], payload) != h.crc {
			return dataEnd, tornOrCorrupt(r, path, off, size, sealed, synced)
		}
		if h.ledger != MapLedgerID {
			if err := fn(Record{Ledger: h.ledger, Entry: h.entry, Loc: Location(id, uint32(off)), Payload: payload}); err != nil {
				return dataEnd, err
			}
			dataEnd = off + RecordHeaderSize + int64(h.n)
		}
		off += RecordHeaderSize + int64(h.n)
	}
}

// lostPageSize is the granularity at which unsynced writes are lost in a
// crash (file system block / page size).
const lostPageSize = 4096

// tornOrCorrupt decides about an invalid record at off: nil (torn tail) if
// no valid record starts anywhere after it, ErrCorrupt otherwise. In a log
// that was never sealed (the active log at a crash) unsynced pages can
// reach the disk out of order, so a lost page (or the lost rewrite of a
// page's end) may precede surviving ones. There, when the header records
// the log's synced end, an invalid stretch from that end on is a torn
// tail even if valid records follow (none of them was covered by a Sync,
// so the journal still holds them) and one before it is corruption (those
// bytes were fsynced). Without a synced end (a crash before the log's
// first Sync) the stretch counts as torn when it contains a whole aligned
// zero page.
func tornOrCorrupt(r io.ReaderAt, path string, off, size int64, sealed bool, synced int64) error {
	next, ok := findValidRecord(r, off+1, size)
	if !ok {
		return nil
	}
	if !sealed {
		if synced > 0 && off >= synced {
			return nil
		}
		if synced == 0 && hasZeroPage(r, off, next) {
			return nil
		}
	}
	return fmt.Errorf("entrylog: %s off %d: invalid record followed by a valid one at %d: %w", path, off, next, ErrCorrupt)
}

// overlapsZeroPage reports whether an aligned all-zero page overlaps
// [from, to).
func overlapsZeroPage(r io.ReaderAt, from, to int64) bool {
	return hasZeroPage(r, from/lostPageSize*lostPageSize, (to+lostPageSize-1)/lostPageSize*lostPageSize)
}

// hasZeroPage reports whether [from, to) contains an aligned all-zero page.
func hasZeroPage(r io.ReaderAt, from, to int64) bool {
	page := make([]byte, lostPageSize)
	for p := (from + lostPageSize - 1) / lostPageSize * lostPageSize; p+lostPageSize <= to; p += lostPageSize {
		if n, _ := r.ReadAt(page, p); n == lostPageSize && isZero(page) {
			return true
		}
	}
	return false
}

// findValidRecord looks for the first offset in [from, size) that holds a
// record with a plausible header and a matching checksum.
func findValidRecord(r io.ReaderAt, from, size int64) (int64, bool) {
	const window = 1 << 20
	buf := make([]byte, min(window+RecordHeaderSize, max(size-from, 0)))
	var rec []byte
	for base := from; base+RecordHeaderSize <= size; base += window {
		n, _ := r.ReadAt(buf[:min(int64(len(buf)), size-base)], base)
		for i := 0; i+RecordHeaderSize <= n && i < window; i++ {
			hb := buf[i : i+RecordHeaderSize]
			h := decodeRecordHeader(hb)
			at := base + int64(i)
			if h.crc == 0 && isZero(hb) || h.ledger < MapLedgerID || int64(h.n) > size-at-RecordHeaderSize {
				continue
			}
			var payload []byte
			if i+RecordHeaderSize+int(h.n) <= n {
				payload = buf[i+RecordHeaderSize : i+RecordHeaderSize+int(h.n)]
			} else {
				rec = append(rec[:0], make([]byte, h.n)...)
				if m, _ := r.ReadAt(rec, at+RecordHeaderSize); m != len(rec) {
					continue
				}
				payload = rec
			}
			if recordCRC(hb, payload) == h.crc {
				return at, true
			}
		}
	}
	return 0, false
}

// ReadFileInfo reads the header of the log at path and, if the log is
// sealed, its ledgers map as pairs sorted by ledger (nil otherwise). For
// tools; a bad header is ErrCorrupt, an unreadable map is returned as an
// error with the header.
func ReadFileInfo(fs vfs.FS, path string) (Header, []Pair, error) {
	f, err := fs.Open(path)
	if err != nil {
		return Header{}, nil, fmt.Errorf("entrylog: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Header{}, nil, fmt.Errorf("entrylog: %w", err)
	}
	hdr := make([]byte, HeaderSize)
	n, _ := f.ReadAt(hdr, 0)
	_, h, mapValid, err := DecodeHeader(hdr[:n])
	if err != nil {
		return h, nil, fmt.Errorf("entrylog: %s off 0: %w", path, err)
	}
	if !mapValid {
		return h, nil, nil
	}
	m, err := readLedgersMap(f, int64(h.MapOffset), h, fi.Size())
	if err != nil {
		return h, nil, fmt.Errorf("entrylog: %s off %d: ledgers map: %w", path, h.MapOffset, err)
	}
	return h, m, nil
}
