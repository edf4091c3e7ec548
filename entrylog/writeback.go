package entrylog

import (
	"golang.org/x/sys/unix"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// writeback paces the active log's writeback in FlushBytes steps (see
// Options.FlushBytes and doc.go, "Writeback pacing"). Guarded by Log.mu.
type writeback struct {
	file    *logFile
	started int64 // writeback was started for [.., started)
	waited  int64 // writeback finished for [.., waited)
}

// paceLocked is called after a write ended at end in cur. Once FlushBytes
// were written since the last step it starts writeback of them
// (sync_file_range WRITE) and waits for the previous step's writeback to
// finish, so at most two steps are queued at the device: a journal sync
// behind them waits for those, not for the whole checkpoint. Advisory:
// errors are ignored (the checkpoint's fsync reports them), and files
// without a descriptor (MemFS) are not paced.
func (l *Log) paceLocked(cur *logFile, start, end int64) {
	step := l.opts.FlushBytes
	if step <= 0 {
		return
	}
	wb := &l.mu.wb
	if wb.file != cur {
		*wb = writeback{file: cur, started: start, waited: start}
	}
	if end-wb.started < step {
		return
	}
	l.writebackLocked(cur, end)
}

// writebackLocked starts writeback of cur up to end and waits for the
// previous step's (see paceLocked).
func (l *Log) writebackLocked(cur *logFile, end int64) {
	wb := &l.mu.wb
	if wb.file != cur {
		*wb = writeback{file: cur}
	}
	if end <= wb.started {
		return
	}
	fd, ok := cur.f.(vfs.Fder)
	if !ok {
		return
	}
	startWriteback(int(fd.Fd()), wb.started, end)
	if wb.started > wb.waited {
		_ = syncFileRange(int(fd.Fd()), wb.waited, wb.started-wb.waited,
			unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
	}
	wb.waited, wb.started = wb.started, end
}

// syncFileRange is sync_file_range(2); tests record the calls.
var syncFileRange = unix.SyncFileRange

// writebackChunk is the most startWriteback hands the device in one
// request. One sync_file_range over a step of MiB becomes requests of the
// device's largest size (max_sectors_kb, 4 MiB on virtio disks), and a
// journal write queued behind one waits for all of it: on the test
// machine's disk a half-peak journal sync's p99 went from 6.6-6.9 ms to
// 2.7-3.4 ms with requests of 256 KiB (bench/bookie/NOTES.md, "Writeback
// requests").
const writebackChunk = 256 << 10

// startWriteback starts writeback of [from, to) of fd in writebackChunk
// pieces, one sync_file_range each, so the device gets them as separate
// requests a journal write can pass between. Advisory, as paceLocked.
func startWriteback(fd int, from, to int64) {
	for off := from; off < to; off += writebackChunk {
		_ = syncFileRange(fd, off, min(writebackChunk, to-off), unix.SYNC_FILE_RANGE_WRITE)
	}
}

// Writeback writes the append buffer to the active log and starts
// writeback of everything written to it since the last step (sync_file_range
// WRITE), then waits for the previous step's writeback to finish: a
// caller pacing its adds over time (the bookie's checkpoint) sends them
// to the device in steps, so a journal sync on the same device waits
// behind one step, not behind the whole batch at the final Sync. Like
// FlushBytes pacing it changes when bytes reach the disk, not what is
// durable. It returns the append buffer's write error, if any.
func (l *Log) Writeback() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkLocked(); err != nil {
		return err
	}
	if err := l.flushLocked(); err != nil {
		return err
	}
	if cur := l.mu.cur; cur != nil {
		l.writebackLocked(cur, l.mu.bufOff)
	}
	return nil
}
