package uring

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// benchRegion is the preallocated, pre-written part of the file that the
// benchmarks overwrite in a cycle, so that every fdatasync flushes data only
// (no size or extent changes).
const benchRegion = 16 << 20

var benchShapes = []struct {
	name  string
	count int
	size  int
}{
	{"16x4KiB", 16, 4 << 10},
	{"1x64KiB", 1, 64 << 10},
}

// benchFile creates a file in dir (b.TempDir when empty), preallocates and zero-fills
// benchRegion bytes and syncs it.
func benchFile(b *testing.B, dir string) vfs.File {
	if dir == "" {
		dir = b.TempDir()
	} else {
		d, err := os.MkdirTemp(dir, "uring-bench")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(d) })
		dir = d
	}
	f, err := vfs.Default.Create(filepath.Join(dir, "journal"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	if err := f.Preallocate(0, benchRegion); err != nil {
		b.Fatal(err)
	}
	zero := make([]byte, 1<<20)
	for off := int64(0); off < benchRegion; off += int64(len(zero)) {
		if _, err := f.WriteAt(zero, off); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	return f
}

func benchBufs(count, size int) ([][]byte, int64) {
	bufs := make([][]byte, count)
	for i := range bufs {
		bufs[i] = pattern(uint64(i), size)
	}
	return bufs, int64(count * size)
}

// benchDirs are where the file lives: the test temp dir (a real disk, so
// fdatasync reaches the device) and, when present, /dev/shm (tmpfs, where
// fdatasync is nearly free, which isolates the per-group CPU and syscall
// cost of each path).
func benchDirs(b *testing.B) []struct{ name, dir string } {
	dirs := []struct{ name, dir string }{{"disk", ""}}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		dirs = append(dirs, struct{ name, dir string }{"shm", "/dev/shm"})
	}
	return dirs
}

// BenchmarkGroupCommit writes one group and fdatasyncs it per iteration:
//
//   - raw: pwrite(2)/pwritev(2) + fdatasync(2) on the descriptor, no Writer.
//   - pwrite: the pwrite Writer.
//   - uring: the io_uring Writer (linked WRITE(V) + FSYNC(DATASYNC)).
//   - uring-fixed: the same with the descriptor registered as a fixed file.
//   - uring-nopin: the same without runtime.Pinner.
//
// Besides wall time per group it reports cpu-ns/op, the process CPU time
// (user+system, all threads) per group, and for the Writers submit-ns/op,
// the part of the wall time spent inside Submit: the time the caller cannot
// use to prepare the next group.
func BenchmarkGroupCommit(b *testing.B) {
	if !Available() {
		b.Fatalf("io_uring unavailable: %v", unavailableReason())
	}
	for _, d := range benchDirs(b) {
		for _, shape := range benchShapes {
			impls := []string{"raw", "pwrite", "uring", "uring-fixed", "uring-nopin"}
			if os.Getenv("URING_BENCH_REVERSE") != "" { // to check for order effects
				slices.Reverse(impls)
			}
			for _, impl := range impls {
				b.Run(d.name+"/"+shape.name+"/"+impl, func(b *testing.B) {
					f := benchFile(b, d.dir)
					bufs, n := benchBufs(shape.count, shape.size)
					fd := int(f.(vfs.Fder).Fd())
					var w Writer
					switch impl {
					case "pwrite":
						w = newPwriteWriter(f)
					case "uring", "uring-fixed", "uring-nopin":
						uw, err := newUringWriter(f, fd, uringOptions{fixedFile: impl == "uring-fixed", noPin: impl == "uring-nopin"})
						if err != nil {
							b.Fatal(err)
						}
						w = uw
					}
					if w != nil {
						defer w.Close()
					}
					b.SetBytes(n)
					b.ReportAllocs()
					cpu0 := cpuTime()
					var inSubmit time.Duration
					b.ResetTimer()
					off := int64(0)
					for range b.N {
						if off+n > benchRegion {
							off = 0
						}
						if w == nil {
							if err := rawGroup(fd, bufs, off); err != nil {
								b.Fatal(err)
							}
						} else {
							t0 := time.Now()
							if err := w.Submit(off, bufs, true); err != nil {
								b.Fatal(err)
							}
							inSubmit += time.Since(t0)
							if err := w.Wait(); err != nil {
								b.Fatal(err)
							}
						}
						off += n
					}
					b.StopTimer()
					b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
					if w != nil {
						b.ReportMetric(float64(inSubmit)/float64(b.N), "submit-ns/op")
					}
				})
			}
		}
	}
}

func rawGroup(fd int, bufs [][]byte, off int64) error {
	var err error
	if len(bufs) == 1 {
		_, err = unix.Pwrite(fd, bufs[0], off)
	} else {
		_, err = unix.Pwritev(fd, bufs, off)
	}
	if err != nil {
		return err
	}
	return unix.Fdatasync(fd)
}

// cpuTime returns the user+system CPU time of the process (all threads,
// including io_uring's io-wq workers) in nanoseconds. Per op it is a steadier
// measure of a path's cost than wall time on a shared machine.
func cpuTime() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
