package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"

	"github.com/magnetar-mq/magnetar/internal/atomicfile"
	"github.com/magnetar-mq/magnetar/internal/crc32c"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

const (
	markName    = "lastMark"
	markTmpName = "lastMark.tmp"
	markSize    = 24
	markMagic   = "MGLM"
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

// readMark reads dir's lastMark; a missing file is the zero Position
// (replay everything).
func readMark(fsys vfs.FS, dir string) (Position, error) {
	p := path.Join(dir, markName)
	f, err := fsys.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Position{}, nil
	}
	if err != nil {
		return Position{}, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	var b [markSize]byte
	if _, err := f.ReadAt(b[:], 0); err != nil && !errors.Is(err, io.EOF) {
		return Position{}, fmt.Errorf("journal: %s: %w", p, err)
	}
	_, m, err := decodeMark(b[:])
	if err != nil {
		return Position{}, fmt.Errorf("journal: %s offset 0: %w", p, err)
	}
	return m, nil
}

// writeMark replaces dir's lastMark atomically: temp file, sync, rename,
// sync dir.
func writeMark(fsys vfs.FS, dir string, m Position) error {
	return atomicfile.WriteFS(fsys, dir, markTmpName, markName, appendMark(nil, m))
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
	if err := writeMark(fsys, dir, pos); err != nil {
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
		remove := fsys.Remove
		if j.opts.Remove != nil {
			remove = j.opts.Remove
		}
		if err := remove(path.Join(dir, fileName(id))); err != nil {
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
