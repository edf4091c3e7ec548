package bookie

import (
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// The GC reserve. Garbage collection needs a little space before it can
// give any back: the checkpoint before a roll writes the write cache's
// entries, sealing the active log writes its ledgers map, the next log
// needs a header, and compaction copies the live entries out of a log
// before removing it. On a volume that is 100 % full (the bookie's own
// data, another process's files) none of that fits, and deleting data
// would cure nothing. So each ledger directory holds a preallocated
// reserve file (GCReserve bytes; default 1/64 of the volume, 1 to
// 64 MiB), made while there is room. While the bookie is read-only for
// lack of space, GC deletes the reserves and spends that space when a
// roll's checkpoint or a compaction needs no more than the free space and
// the reserves together (a checkpoint of a write cache larger than that
// would fail anyway, its partial appends would take the reserve, and none
// would be left once a ledger is deleted);
// once usage is below DiskUsageLWM again they are made anew. The reserve
// counts as used space in the threshold check (it is a real file).

// reserveName is the reserve file's name in a ledger directory.
const reserveName = "gc-reserve"

// reserveSize is the reserve for a volume of total bytes.
func (b *Bookie) reserveSize(total uint64) int64 { return reserveSize(&b.opts, total) }

func reserveSize(opts *Options, total uint64) int64 {
	if opts.GCReserve != 0 {
		return max(opts.GCReserve, 0)
	}
	return min(max(int64(total/64), 1<<20), 64<<20)
}

// ensureReserves makes the reserve file of every ledger directory that
// lacks one, where that leaves usage below DiskUsageLWM.
func (b *Bookie) ensureReserves() {
	du, ok := b.opts.FS.(vfs.DiskUsager)
	if !ok {
		return
	}
	for _, dir := range b.opts.LedgerDirs {
		path := filepath.Join(dir, reserveName)
		if _, err := b.opts.FS.Stat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		total, free, err := du.DiskUsage(dir)
		if err != nil {
			continue
		}
		size := b.reserveSize(total)
		if size == 0 || float64(free-min(free, uint64(size))) < float64(total)*(1-b.opts.DiskUsageLWM) {
			continue
		}
		if err := b.makeReserve(path, size); err != nil {
			b.log.Warn("could not set aside the GC reserve", "path", path, "bytes", size, "err", err)
			continue
		}
		b.log.Info("GC reserve set aside", "path", path, "bytes", size)
	}
}

func (b *Bookie) makeReserve(path string, size int64) error {
	return makeReserve(b.opts.FS, path, size)
}

func makeReserve(fsys vfs.FS, path string, size int64) error {
	f, err := fsys.Create(path)
	if err != nil {
		return err
	}
	err = f.Preallocate(0, size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fsys.Remove(path)
	}
	return err
}

// reserveBytes is the size of the reserve files in b's ledger
// directories.
func (b *Bookie) reserveBytes() int64 {
	var n int64
	for _, dir := range b.opts.LedgerDirs {
		fi, err := b.opts.FS.Stat(filepath.Join(dir, reserveName))
		if err != nil {
			continue
		}
		// Preallocated with the size kept at 0: its blocks are the space.
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		} else {
			n += fi.Size()
		}
	}
	return n
}

// reserveHelps reports whether need bytes fit in the fullest ledger
// directory's free space once the reserves are released (true when the
// file system cannot tell its free space).
func (b *Bookie) reserveHelps(need int64) bool {
	room := b.compactionRoom()
	return room < 0 || need <= room+b.reserveBytes()
}

// checkpointNeed is the space the next checkpoint needs in a ledger
// directory: the half it writes (the frozen one, else the active one)
// with its records' headers, and gcMargin for the index pages and the
// next log's header.
func (b *Bookie) checkpointNeed() int64 {
	entries, n := b.wc.nextFlush()
	n = max(n, 0)
	return n + int64(entries)*entrylogRecordOverhead + gcMargin(uint64(n))
}

// releaseReserves is releaseReserves for b's options.
func (b *Bookie) releaseReserves() int { return releaseReserves(&b.opts) }

// releaseReserves deletes the reserve files of opts' ledger directories
// and returns how many it deleted: for GC on a full disk, and for a start
// on one, where the journal cannot create its next file otherwise (the
// reserve is made anew once usage is below DiskUsageLWM).
func releaseReserves(opts *Options) int {
	n := 0
	for _, dir := range opts.LedgerDirs {
		path := filepath.Join(dir, reserveName)
		if err := opts.FS.Remove(path); err == nil {
			n++
			opts.Logger.Info("GC reserve released to reclaim space on a full disk", "path", path)
		}
	}
	return n
}

// halfReserves sets aside half a reserve in each ledger directory again,
// where it fits: after a start on a full volume released the reserves so
// that the journal could create its file, the checkpoints that follow
// would otherwise take all of that space and leave GC none when a ledger
// is deleted. (While the reserve is there, ensureReserves does not make
// the full one; GC spends it first, and the full one is made once usage
// is below DiskUsageLWM.)
func halfReserves(opts *Options) {
	du, ok := opts.FS.(vfs.DiskUsager)
	if !ok {
		return
	}
	for _, dir := range opts.LedgerDirs {
		total, free, err := du.DiskUsage(dir)
		if err != nil {
			continue
		}
		size := min(reserveSize(opts, total)/2, int64(free)/2)
		if size < 64<<10 {
			continue
		}
		path := filepath.Join(dir, reserveName)
		if err := makeReserve(opts.FS, path, size); err != nil {
			opts.Logger.Warn("could not set aside half the GC reserve", "path", path, "bytes", size, "err", err)
			continue
		}
		opts.Logger.Info("half the GC reserve set aside again after the journal took what it needed", "path", path, "bytes", size)
	}
}
