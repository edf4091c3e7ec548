// Command fsync measures the latency of one 4 KiB write + fdatasync into a
// file prepared five ways, as the journal's choices prepare it: appending
// inside fallocate(KEEP_SIZE) (the default), inside a fallocated size,
// into zeros written and synced beforehand (--journal-zero-fill), and the
// last two through O_DIRECT. With BG=1 another file gets a 4 MiB write +
// fsync every 200 ms beside it (BG_BYTES, BG_EVERY_MS), standing in for a
// bookie checkpoint; it runs beside -streams and -floor too.
//
//	go run ./bench/fsync [-dir DIR] [-n 3000] [-rounds 2]
//
// Prints p50/p90/p99/p999 per way and round. DIR must be on the device
// under test (default: the current directory).
//
// With -streams K1,K2,... it measures instead K concurrent loops of 4 KiB
// write + fdatasync, each into its own prezeroed file (K bookie journals
// sharing one disk, as the replicated-ledger benchmark runs them): total
// and per-stream syncs/s and the latency over all streams, per K and round.
//
// With -floor RATE it measures the floor a durable broker on this disk
// cannot go below at RATE arrivals per second (floor.go): the journal's
// group commit alone, arrivals paced as a batching client sends them, for
// -duration, with latency percentiles per -window, the group syncs that
// took over 2 ms, how strongly those recur with a 100 ms period, and the
// process CPU per group (the guest's cost of one write + fdatasync).
//
//	go run ./bench/fsync -floor 870 -duration 30s -rounds 3
//
// With -delete-mib N it also writes and syncs a file of N MiB before each
// -floor run and deletes it -delete-at into the run: through vfs.Remover
// at -delete-rate bytes per second, as a bookie deletes entry logs and old
// journal files, or with os.Remove at once (-delete-rate -1). On a file
// system mounted with online discard the plain delete holds the floor's
// fdatasyncs behind the discards of the whole file.
//
//	go run ./bench/fsync -floor 870 -duration 20s -delete-mib 1024 -delete-rate -1
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const sz = 4096

func aligned(size int) []byte {
	b := make([]byte, size+4096)
	off := 4096 - int(uintptr(unsafe.Pointer(&b[0]))&4095)
	return b[off : off+size]
}

func run(name string, direct, prezero, keepSize bool) {
	path := filepath.Join(*dir, "fsync-bench.dat")
	os.Remove(path)
	n := *count
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	total := int64(n * sz)
	if prezero {
		writeZeros(f, total)
	} else if keepSize {
		unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, total)
		f.Sync()
	} else {
		unix.Fallocate(int(f.Fd()), 0, 0, total)
		f.Sync()
	}
	wf := f
	if direct {
		if wf, err = os.OpenFile(path, os.O_RDWR|syscall.O_DIRECT, 0); err != nil {
			panic(err)
		}
		defer wf.Close()
	}
	buf := aligned(sz)
	for i := range buf {
		buf[i] = byte(i)
	}
	lat := make([]time.Duration, n)
	for i := 0; i < n; i++ {
		t := time.Now()
		if _, err := wf.WriteAt(buf, int64(i*sz)); err != nil {
			panic(err)
		}
		unix.Fdatasync(int(wf.Fd()))
		lat[i] = time.Since(t)
	}
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	fmt.Printf("%-28s p50 %6.3f p90 %6.3f p99 %6.3f p999 %6.3f ms\n", name, q(lat, 50), q(lat, 90), q(lat, 99), q(lat, 99.9))
	os.Remove(path)
}

// writeZeros writes and syncs zeros over [0, total) of f.
func writeZeros(f *os.File, total int64) {
	z := make([]byte, 1<<20)
	for off := int64(0); off < total; off += int64(len(z)) {
		f.WriteAt(z, off)
	}
	f.Sync()
}

// q is the p-th percentile of sorted, in milliseconds.
func q(sorted []time.Duration, p float64) float64 {
	return float64(sorted[int(float64(len(sorted))*p/100)]) / 1e6
}

var (
	bg      = os.Getenv("BG") != ""
	dir     = flag.String("dir", ".", "directory on the device under test")
	count   = flag.Int("n", 3000, "writes per way and round")
	round   = flag.Int("rounds", 2, "rounds")
	streams = flag.String("streams", "", "comma-separated stream counts: concurrent write+fdatasync loops on separate files")
	floor   = flag.Float64("floor", 0, "arrivals per second: measure the group-commit floor at this rate instead")
	floorD  = flag.Duration("duration", 30*time.Second, "-floor: how long")
	floorW  = flag.Duration("window", 10*time.Second, "-floor: latency window")
)

// runStreams runs k concurrent loops of count writes + fdatasync, each on
// its own prezeroed file.
func runStreams(k int) {
	n := *count
	lat := make([][]time.Duration, k)
	files := make([]*os.File, k)
	buf := aligned(sz)
	for s := range k {
		f, err := os.OpenFile(filepath.Join(*dir, fmt.Sprintf("fsync-bench.%d", s)), os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
		if err != nil {
			panic(err)
		}
		defer os.Remove(f.Name())
		defer f.Close()
		writeZeros(f, int64(n*sz))
		files[s] = f
	}
	var wg sync.WaitGroup
	start := time.Now()
	for s, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				t := time.Now()
				if _, err := f.WriteAt(buf, int64(i*sz)); err != nil {
					panic(err)
				}
				unix.Fdatasync(int(f.Fd()))
				lat[s] = append(lat[s], time.Since(t))
			}
		}()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(a, b int) bool { return all[a] < all[b] })
	fmt.Printf("streams=%d  syncs/s total %6.0f  per stream %6.0f  p50 %6.3f p99 %6.3f ms\n",
		k, float64(len(all))/el, float64(n)/el, q(all, 50), q(all, 99))
}

func background(stop chan struct{}) {
	bgPath := filepath.Join(*dir, "fsync-bench.bg")
	f, err := os.OpenFile(bgPath, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		panic(err)
	}
	defer os.Remove(bgPath)
	b := make([]byte, envInt("BG_BYTES", 4<<20))
	var off int64
	t := time.NewTicker(time.Duration(envInt("BG_EVERY_MS", 200)) * time.Millisecond)
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		f.WriteAt(b, off)
		off += int64(len(b))
		f.Sync()
	}
}

// envInt is the integer in environment variable k, or def.
func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
		return v
	}
	return def
}

func main() {
	flag.Parse()
	if bg {
		stop := make(chan struct{})
		go background(stop)
		defer close(stop)
	}
	if *floor > 0 {
		for r := 0; r < *round; r++ {
			printFloor(*floor, runFloor(*floor, *floorD, *floorW))
		}
		return
	}
	if *streams != "" {
		for r := 0; r < *round; r++ {
			for _, f := range strings.Split(*streams, ",") {
				k, err := strconv.Atoi(f)
				if err != nil || k < 1 {
					panic("bad -streams value " + f)
				}
				runStreams(k)
			}
		}
		return
	}
	for r := 0; r < *round; r++ {
		run("buffered keep_size (now)", false, false, true)
		run("buffered fallocated size", false, false, false)
		run("buffered prezeroed", false, true, false)
		run("direct fallocated size", true, false, false)
		run("direct prezeroed", true, true, false)
	}
}
