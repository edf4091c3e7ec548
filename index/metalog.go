package index

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/magnetar-mq/magnetar/internal/atomicfile"
	"github.com/magnetar-mq/magnetar/internal/crc32c"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// The metadata log (see doc.go, "Metadata log") holds, after a snapshot,
// the ledger records changed by each later Flush.
const (
	// MetaLogFile is the name of the metadata log in Options.Dir.
	MetaLogFile       = "INDEX-META-LOG"
	metaLogTmpFile    = "INDEX-META-LOG.tmp"
	metaLogVersion    = 1
	metaLogHeaderLen  = 24
	logBlockHeaderLen = 12
	logUpsert         = 1
	logDelete         = 2
	// minLogLimit is the least the log may grow to before a Flush writes a
	// snapshot instead (with Options.MetaLogLimit zero the limit is the
	// larger of this and the last snapshot's size).
	minLogLimit = 1 << 20
)

var (
	metaLogMagic  = [4]byte{'M', 'G', 'I', 'L'}
	logBlockMagic = [4]byte{'M', 'G', 'L', 'B'}
)

// appendLogHeader appends the log file header for generation gen.
func appendLogHeader(dst []byte, gen uint64) []byte {
	start := len(dst)
	dst = append(dst, metaLogMagic[:]...)
	dst = binary.LittleEndian.AppendUint32(dst, metaLogVersion)
	dst = binary.LittleEndian.AppendUint64(dst, gen)
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	return binary.LittleEndian.AppendUint32(dst, crc32c.Checksum(dst[start:]))
}

func decodeLogHeader(src []byte) (gen uint64, err error) {
	if len(src) < metaLogHeaderLen {
		return 0, fmt.Errorf("short metadata log header (%d bytes): %w", len(src), ErrCorrupt)
	}
	if [4]byte(src[:4]) != metaLogMagic {
		return 0, fmt.Errorf("bad metadata log magic %q: %w", src[:4], ErrCorrupt)
	}
	if v := binary.LittleEndian.Uint32(src[4:]); v != metaLogVersion {
		return 0, fmt.Errorf("unknown metadata log version %d: %w", v, ErrCorrupt)
	}
	if crc32c.Checksum(src[:20]) != binary.LittleEndian.Uint32(src[20:]) {
		return 0, fmt.Errorf("metadata log header checksum mismatch: %w", ErrCorrupt)
	}
	return binary.LittleEndian.Uint64(src[8:]), nil
}

// logChange is one ledger in a log block: its whole record, or its
// deletion.
type logChange struct {
	rec     ledgerRecord
	deleted bool
}

// appendLogBlock appends one block: the segment count at the flush and
// the changes.
func appendLogBlock(dst []byte, segments uint32, changes []logChange) []byte {
	start := len(dst)
	dst = append(dst, logBlockMagic[:]...)
	dst = append(dst, make([]byte, 8)...) // length, crc
	body := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, segments)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(changes)))
	for _, c := range changes {
		if c.deleted {
			dst = append(dst, logDelete)
			dst = binary.LittleEndian.AppendUint64(dst, uint64(c.rec.ID))
			continue
		}
		dst = append(dst, logUpsert)
		dst = appendLedgerRecord(dst, c.rec)
	}
	binary.LittleEndian.PutUint32(dst[start+4:], uint32(len(dst)-body))
	binary.LittleEndian.PutUint32(dst[start+8:], crc32c.Checksum(dst[body:]))
	return dst
}

// decodeLogBlock decodes the block at the start of src. It returns the
// block's length, or an error: errTornBlock when src does not hold a
// whole block with a valid checksum, ErrCorrupt when a checksummed body
// does not decode.
func decodeLogBlock(src []byte) (n int, segments uint32, changes []logChange, err error) {
	if len(src) < logBlockHeaderLen || [4]byte(src[:4]) != logBlockMagic {
		return 0, 0, nil, errTornBlock
	}
	size := uint64(binary.LittleEndian.Uint32(src[4:]))
	if size < 8 || size > uint64(len(src)-logBlockHeaderLen) {
		return 0, 0, nil, errTornBlock
	}
	body := src[logBlockHeaderLen : logBlockHeaderLen+int(size)]
	if crc32c.Checksum(body) != binary.LittleEndian.Uint32(src[8:]) {
		return 0, 0, nil, errTornBlock
	}
	segments = binary.LittleEndian.Uint32(body)
	count := binary.LittleEndian.Uint32(body[4:])
	rest := body[8:]
	// Each change takes at least 9 bytes: bound the allocation.
	if uint64(count)*9 > uint64(len(rest)) {
		return 0, 0, nil, fmt.Errorf("metadata log block claims %d changes in %d bytes: %w", count, len(rest), ErrCorrupt)
	}
	changes = make([]logChange, 0, count)
	for i := range count {
		if len(rest) == 0 {
			return 0, 0, nil, fmt.Errorf("metadata log block change %d missing: %w", i, ErrCorrupt)
		}
		kind := rest[0]
		rest = rest[1:]
		switch kind {
		case logDelete:
			if len(rest) < 8 {
				return 0, 0, nil, fmt.Errorf("metadata log block change %d truncated: %w", i, ErrCorrupt)
			}
			id := int64(binary.LittleEndian.Uint64(rest))
			if id < 0 {
				return 0, 0, nil, fmt.Errorf("metadata log block deletes ledger %d: %w", id, ErrCorrupt)
			}
			changes = append(changes, logChange{rec: ledgerRecord{ID: id}, deleted: true})
			rest = rest[8:]
		case logUpsert:
			var r ledgerRecord
			if rest, r, err = decodeLedgerRecord(rest); err != nil {
				return 0, 0, nil, fmt.Errorf("metadata log block change %d: %w", i, err)
			}
			changes = append(changes, logChange{rec: r})
		default:
			return 0, 0, nil, fmt.Errorf("metadata log block change %d of kind %d: %w", i, kind, ErrCorrupt)
		}
	}
	if len(rest) != 0 {
		return 0, 0, nil, fmt.Errorf("%d bytes after the last change of a metadata log block: %w", len(rest), ErrCorrupt)
	}
	return logBlockHeaderLen + int(size), segments, changes, nil
}

// errTornBlock: no whole, checksummed block at an offset.
var errTornBlock = fmt.Errorf("torn metadata log block: %w", ErrCorrupt)

// logReplay is what a metadata log adds to its snapshot.
type logReplay struct {
	end      int64 // just past the last valid block
	size     int64 // file size (end < size: a torn tail to truncate)
	segments uint32
	changes  []logChange // in order
}

// readLog decodes the log in src (whose header names generation gen).
// A block that is not whole at the end is a torn tail (the Flush that
// wrote it never returned); an invalid block followed by a valid one is
// corruption, as each append is synced before the next starts.
func readLog(src []byte, path string) (logReplay, error) {
	r := logReplay{end: metaLogHeaderLen, size: int64(len(src))}
	off := metaLogHeaderLen
	for off < len(src) {
		n, segs, ch, err := decodeLogBlock(src[off:])
		if err == errTornBlock {
			// Any valid block later proves this one was synced.
			for at := off + 1; at+logBlockHeaderLen <= len(src); at++ {
				k := bytes.Index(src[at:], logBlockMagic[:])
				if k < 0 {
					break
				}
				at += k
				if _, _, _, err := decodeLogBlock(src[at:]); err == nil {
					return r, fmt.Errorf("index: %s offset %d: invalid block before a valid one at %d: %w", path, off, at, ErrCorrupt)
				}
			}
			return r, nil
		}
		if err != nil {
			return r, fmt.Errorf("index: %s offset %d: %w", path, off, err)
		}
		off += n
		r.end = int64(off)
		r.segments = max(r.segments, segs)
		r.changes = append(r.changes, ch...)
	}
	return r, nil
}

// applyLog applies a log's changes to a snapshot's ledger records and
// returns the result sorted by ledger id.
func applyLog(ledgers []ledgerRecord, changes []logChange) []ledgerRecord {
	if len(changes) == 0 {
		return ledgers
	}
	byID := make(map[int64]ledgerRecord, len(ledgers))
	for _, l := range ledgers {
		byID[l.ID] = l
	}
	for _, c := range changes {
		if c.deleted {
			delete(byID, c.rec.ID)
		} else {
			byID[c.rec.ID] = c.rec
		}
	}
	out := make([]ledgerRecord, 0, len(byID))
	for _, l := range byID {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b ledgerRecord) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// createLog starts an empty log for generation gen (written to the
// temporary name, synced, renamed, directory synced) and returns it open
// for appends.
func createLog(fs vfs.FS, dir string, gen uint64) (vfs.File, error) {
	f, err := atomicfile.CreateFS(fs, dir, metaLogTmpFile, MetaLogFile, appendLogHeader(nil, gen))
	if err != nil {
		return nil, fmt.Errorf("index: create %s: %w", filepath.Join(dir, MetaLogFile), err)
	}
	return f, nil
}
