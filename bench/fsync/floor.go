package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// floorResult is what one -floor run measured.
type floorResult struct {
	arrivals   int
	groups     int
	elapsed    time.Duration
	lat        []time.Duration // per arrival: enqueue -> its group's fdatasync returned
	windowP99  []time.Duration // p99 of lat per window
	windowP999 []time.Duration
	syncs      []time.Duration // per group: write + fdatasync
	slowAt     []time.Duration // start of each group slower than slowSync, from the run's start
	cpuPerSync time.Duration   // process CPU (user + system) per group
}

const slowSync = 2 * time.Millisecond

// runFloor is the journal's group commit with nothing else around it: a
// pacer enqueues arrivals at rate per second (waking as the Go runtime's
// timers allow, ~1.1 ms apart here, so arrivals come in bursts as a
// batching client's do), and a committer takes everything queued, writes
// one 4 KiB block into a prezeroed file and fdatasyncs it, and starts the
// next group as soon as that returns (journalMaxGroupWait 0). The latency
// of an arrival is enqueue -> its group durable: what a durable broker on
// this disk cannot go below at this rate, before any network, CPU or
// client cost.
func runFloor(rate float64, d, window time.Duration) floorResult {
	path := filepath.Join(*dir, "fsync-floor.dat")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		panic(err)
	}
	defer os.Remove(path)
	defer f.Close()
	// Room for one block per arrival (groups are fewer), at most 256 MiB,
	// reused from the start when full: zeroing more than a run needs
	// would keep the disk busy just before the drivers start a broker.
	fileSize := min(max(int64(rate*d.Seconds())*sz, 16<<20), 256<<20)
	writeZeros(f, fileSize)
	buf := aligned(sz)

	// Everything the loops append to is allocated up front: growing a
	// slice of millions of entries mid-run (a copy into fresh memory, ~12 µs
	// per 4 KiB page here) would stall the committer and show up as latency.
	n := int(rate*d.Seconds()) + 1
	var (
		mu      sync.Mutex
		queue   = make([]time.Time, 0, n)
		spare   = make([]time.Time, 0, n)
		wake    = make(chan struct{}, 1)
		stopped bool
	)
	victim := prepareDelete()
	start := time.Now()
	if victim != nil {
		victim.start()
		defer victim.report()
	}
	go func() { // pacer
		sent := 0
		for {
			el := time.Since(start)
			if el >= d {
				break
			}
			due := int(el.Seconds()*rate) + 1
			mu.Lock()
			for ; sent < due; sent++ {
				queue = append(queue, time.Now())
			}
			mu.Unlock()
			select {
			case wake <- struct{}{}:
			default:
			}
			next := start.Add(time.Duration(float64(sent) / rate * float64(time.Second)))
			time.Sleep(time.Until(next))
		}
		mu.Lock()
		stopped = true
		mu.Unlock()
		select {
		case wake <- struct{}{}:
		default:
		}
	}()

	r := floorResult{lat: make([]time.Duration, 0, n), syncs: make([]time.Duration, 0, n)}
	arrivedAt := make([]time.Duration, 0, n) // from start, per arrival, in lat's order
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	var off int64
	for {
		mu.Lock()
		group, done := queue, stopped
		queue, spare = spare[:0], group
		mu.Unlock()
		if len(group) == 0 {
			if done {
				break
			}
			<-wake
			continue
		}
		t := time.Now()
		if _, err := f.WriteAt(buf, off); err != nil {
			panic(err)
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			panic(err)
		}
		now := time.Now()
		if off += sz; off >= fileSize {
			off = 0
		}
		r.groups++
		r.syncs = append(r.syncs, now.Sub(t))
		if now.Sub(t) > slowSync {
			r.slowAt = append(r.slowAt, t.Sub(start))
		}
		for _, at := range group {
			r.lat = append(r.lat, now.Sub(at))
			arrivedAt = append(arrivedAt, at.Sub(start))
		}
	}
	r.elapsed = time.Since(start)
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano() - ru0.Utime.Nano() + ru1.Stime.Nano() - ru0.Stime.Nano())
	r.cpuPerSync = cpu / time.Duration(max(r.groups, 1))
	r.arrivals = len(r.lat)
	var windowLat [][]time.Duration
	for i, at := range arrivedAt {
		w := int(at / window)
		for len(windowLat) <= w {
			windowLat = append(windowLat, nil)
		}
		windowLat[w] = append(windowLat[w], r.lat[i])
	}
	for _, l := range windowLat {
		if len(l) < 1000 { // a last, partial window
			continue
		}
		sortDur(l)
		r.windowP99 = append(r.windowP99, pct(l, 99))
		r.windowP999 = append(r.windowP999, pct(l, 99.9))
	}
	sortDur(r.lat)
	sortDur(r.syncs)
	return r
}

func sortDur(s []time.Duration) { sort.Slice(s, func(a, b int) bool { return s[a] < s[b] }) }

func pct(sorted []time.Duration, p float64) time.Duration {
	return sorted[min(int(float64(len(sorted))*p/100), len(sorted)-1)]
}

// phaseShare is the largest share of slow groups whose start, modulo
// period, falls into one of ten equal bins: 0.1 for slow groups spread
// evenly over the period, near 1 for stalls that recur with it.
func phaseShare(at []time.Duration, period time.Duration) float64 {
	if len(at) == 0 {
		return 0
	}
	var bins [10]int
	for _, t := range at {
		bins[int((t%period)*10/period)]++
	}
	best := 0
	for _, n := range bins {
		best = max(best, n)
	}
	return float64(best) / float64(len(at))
}

func printFloor(rate float64, r floorResult) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/1e6) }
	fmt.Printf("floor rate=%.0f/s  arrivals %d  groups/s %.0f  cpu per group %.0f µs\n",
		rate, r.arrivals, float64(r.groups)/r.elapsed.Seconds(), float64(r.cpuPerSync)/1e3)
	fmt.Printf("  latency p50 %s p99 %s p999 %s max %s ms\n", ms(pct(r.lat, 50)), ms(pct(r.lat, 99)), ms(pct(r.lat, 99.9)), ms(r.lat[len(r.lat)-1]))
	fmt.Print("  per window p99 / p999 ms:")
	for i := range r.windowP99 {
		fmt.Printf(" %s/%s", ms(r.windowP99[i]), ms(r.windowP999[i]))
	}
	fmt.Println()
	fmt.Printf("  group write+fdatasync p50 %s p99 %s ms; %d groups over %v (%.1f/s), share in the busiest tenth of a 100 ms period %.2f\n",
		ms(pct(r.syncs, 50)), ms(pct(r.syncs, 99)), len(r.slowAt), slowSync, float64(len(r.slowAt))/r.elapsed.Seconds(), phaseShare(r.slowAt, 100*time.Millisecond))
}
