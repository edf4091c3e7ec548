// Command hostcost measures two costs of the machine that every
// per-message figure in BENCHMARKS.md pays and that differ most from bare
// metal on a virtual machine: the first write to a page of freshly
// allocated memory (the guest's page fault, plus the host's when the host
// backs guest memory on demand) against a write to a page already
// touched; and how long a time.Sleep of less than a millisecond really
// takes (the Go runtime's timers, when no processor is busy, wait in
// epoll with a millisecond timeout); and how long a goroutine woken over a
// channel waits to run, when the waker keeps running (the woken one needs
// the other processor, whose idle thread must be woken: a cross-CPU
// wake-up) and when the waker blocks at once (a hand-off on one
// processor).
//
// Usage:
//
//	go run ./bench/hostcost [-mib 256] [-rounds 2] [-sleeps 300] [-wakes 2000]
//
// It prints µs per 4 KiB page, first and second touch, per round, the
// p50/p99 of each sleep duration, and the p50/p90/p99/max of the wake-up
// delays.
package main

import (
	"flag"
	"fmt"
	"slices"
	"time"
)

func main() {
	mib := flag.Int("mib", 256, "MiB of fresh memory to touch per round")
	rounds := flag.Int("rounds", 2, "rounds of the page-touch test")
	sleeps := flag.Int("sleeps", 300, "sleeps per duration")
	wakes := flag.Int("wakes", 2000, "wake-ups per wake-up test")
	flag.Parse()
	const page = 4096
	for r := range *rounds {
		b := make([]byte, *mib<<20)
		for pass, label := range []string{"first touch", "second touch"} {
			start := time.Now()
			for i := 0; i < len(b); i += page {
				b[i] = byte(pass + 1)
			}
			d := time.Since(start)
			fmt.Printf("round %d %-12s %6d pages in %-12v %.3f µs/page\n", r, label, len(b)/page, d.Round(time.Microsecond), float64(d.Nanoseconds())/1e3/float64(len(b)/page))
		}
	}
	for _, want := range []time.Duration{time.Microsecond, 20 * time.Microsecond, 100 * time.Microsecond, 500 * time.Microsecond, time.Millisecond, 2 * time.Millisecond} {
		got := make([]time.Duration, 0, *sleeps)
		for range *sleeps {
			start := time.Now()
			time.Sleep(want)
			got = append(got, time.Since(start))
		}
		slices.Sort(got)
		fmt.Printf("time.Sleep(%v): p50 %v, p99 %v\n", want, got[len(got)/2].Round(time.Microsecond), got[len(got)*99/100].Round(time.Microsecond))
	}
	for _, busy := range []time.Duration{500 * time.Microsecond, 0} {
		d := wakeDelays(*wakes, busy, 2*time.Millisecond)
		q := func(p float64) time.Duration { return d[int(p*float64(len(d)-1))].Round(time.Microsecond) }
		fmt.Printf("wake-up, waker busy %v after: p50 %v, p90 %v, p99 %v, max %v\n", busy, q(.5), q(.9), q(.99), q(1))
	}
}

// wakeDelays wakes a parked goroutine n times over an unbuffered channel,
// busy-looping for busy after each send and then sleeping gap (so the
// machine idles between wake-ups, as at a low message rate), and returns
// the sorted delays from the send to the woken goroutine running.
func wakeDelays(n int, busy, gap time.Duration) []time.Duration {
	ch := make(chan time.Time)
	res := make(chan []time.Duration)
	go func() {
		d := make([]time.Duration, 0, n)
		for t := range ch {
			d = append(d, time.Since(t))
		}
		res <- d
	}()
	for range n {
		ch <- time.Now()
		for end := time.Now().Add(busy); time.Now().Before(end); {
		}
		time.Sleep(gap)
	}
	close(ch)
	d := <-res
	slices.Sort(d)
	return d
}
