package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"

	"github.com/magnetar-mq/magnetar/internal/crc32c"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

const (
	markName    = "lastMark"
	markTmpName = "lastMark.tmp"
	markSize    = 24
	markMagic   = "MGLM"
	// markSlot is the offset of the second copy of the mark; a file of
	// markFileSize bytes has two slots, an older one of markSize bytes one.
	markSlot     = 512
	markFileSize = markSlot + markSize
)

// appendMark encodes a lastMark file.
func appendMark(dst []byte, p Position) []byte {
	var b [markSize]byte
	copy(b[0:4], markMagic)
	binary.LittleEndian.PutUint64(b[4:12], p.FileID)
	binary.LittleEndian.PutUint64(b[12:20], uint64(p.Offset))
	binary.LittleEndian.PutUint32(b[20:24], crc32c.Checksum(b[:20]))
	return append(dst, b[:]...)
}

// decodeMark decodes a lastMark file.
func decodeMark(src []byte) (rest []byte, p Position, err error) {
	if len(src) < markSize || string(src[0:4]) != markMagic ||
		binary.LittleEndian.Uint32(src[20:24]) != crc32c.Checksum(src[:20]) {
		return src, p, fmt.Errorf("bad lastMark: %w", ErrCorrupt)
	}
	p.FileID = binary.LittleEndian.Uint64(src[4:12])
	p.Offset = int64(binary.LittleEndian.Uint64(src[12:20]))
	return src[markSize:], p, nil
}

// readMark returns the mark in dir's lastMark, the zero Position if there
// is none, and the slot it came from (-1 for a one-slot file or none). Of
// two valid slots the later position wins: marks only move forward, and
// a write that tore one slot left the other intact.
func readMark(fsys vfs.FS, dir string) (Position, int, error) {
	p := path.Join(dir, markName)
	f, err := fsys.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Position{}, -1, nil
	}
	if err != nil {
		return Position{}, -1, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	var b [markFileSize]byte
	n, err := f.ReadAt(b[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return Position{}, -1, fmt.Errorf("journal: %s: %w", p, err)
	}
	if n < markFileSize {
		_, m, err := decodeMark(b[:n])
		if err != nil {
			return Position{}, -1, fmt.Errorf("journal: %s offset 0: %w", p, err)
		}
		return m, -1, nil
	}
	best, slot := Position{}, -1
	for i, off := range [2]int{0, markSlot} {
		if _, m, err := decodeMark(b[off : off+markSize]); err == nil && (slot < 0 || best.Less(m)) {
			best, slot = m, i
		}
	}
	if slot < 0 {
		return Position{}, -1, fmt.Errorf("journal: %s: neither slot (offsets 0 and %d) holds a valid mark: %w", p, markSlot, ErrCorrupt)
	}
	return best, slot, nil
}

// writeMark makes m dir's mark. With a two-slot file (slot >= 0, the slot
// holding the current mark) it overwrites the other slot in place and
// syncs: no file is created or renamed, so the sync commits no metadata.
// Otherwise (no file yet, or a one-slot file from an older version) it
// writes a two-slot file with m in both slots atomically: temp file, sync,
// rename, directory sync. It returns the slot that now holds m.
func writeMark(fsys vfs.FS, dir string, m Position, slot int) (int, error) {
	if slot >= 0 {
		next := 1 - slot
		f, err := fsys.OpenReadWrite(path.Join(dir, markName))
		if err != nil {
			return slot, err
		}
		_, err = f.WriteAt(appendMark(nil, m), int64(next*markSlot))
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return slot, err
		}
		return next, nil
	}
	tmp := path.Join(dir, markTmpName)
	f, err := fsys.Create(tmp)
	if err != nil {
		return slot, err
	}
	var b [markFileSize]byte
	appendMark(b[:0], m)
	appendMark(b[:markSlot], m)
	if _, err := f.WriteAt(b[:], 0); err != nil {
		f.Close()
		return slot, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return slot, err
	}
	if err := f.Close(); err != nil {
		return slot, err
	}
	if err := fsys.Rename(tmp, path.Join(dir, markName)); err != nil {
		return slot, err
	}
	if err := fsys.SyncDir(dir); err != nil {
		return slot, err
	}
	return 1, nil
}

// Checkpoint records that everything up to pos (a position from a
// completion or from Replay) is persisted elsewhere: it makes pos the
// lastMark, then removes journal files wholly before pos except the newest
// MaxBackups of them. A pos not after the current mark is ignored; a pos
// past the durable end is an error wrapping ErrMarkNotFound. Every position
// a completion or Sync reported is within the durable end by the time it
// is reported, so Checkpoint accepts it.
func (j *Journal) Checkpoint(pos Position) error {
	j.markMu.Lock()
	defer j.markMu.Unlock()
	if !j.mark.Less(pos) {
		return nil
	}
	if end := j.End(); end.Less(pos) {
		return fmt.Errorf("%w: checkpoint %v is past the durable end %v", ErrMarkNotFound, pos, end)
	}
	fsys, dir := j.opts.FS, j.opts.Dir
	slot, err := writeMark(fsys, dir, pos, j.markSlot)
	j.markSlot = slot
	if err != nil {
		return fmt.Errorf("journal: checkpoint: %w", err)
	}
	j.mark = pos
	ids, err := listFiles(fsys, dir)
	if err != nil {
		return fmt.Errorf("journal: checkpoint: %w", err)
	}
	var before []uint64
	for _, id := range ids {
		if id < pos.FileID {
			before = append(before, id)
		}
	}
	keep := max(j.opts.MaxBackups, 0)
	if len(before) <= keep {
		return nil
	}
	for _, id := range before[:len(before)-keep] {
		if err := fsys.Remove(path.Join(dir, fileName(id))); err != nil {
			return fmt.Errorf("journal: checkpoint: %w", err)
		}
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("journal: checkpoint: %w", err)
	}
	return nil
}

// LastMark returns the last checkpointed position (the zero Position when
// there was none: replay from the first file).
func (j *Journal) LastMark() Position {
	j.markMu.Lock()
	defer j.markMu.Unlock()
	return j.mark
}
