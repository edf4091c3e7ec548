// Command hostcost measures two costs of the machine that every
// per-message figure in BENCHMARKS.md pays and that differ most from bare
// metal on a virtual machine: the first write to a page of freshly
// allocated memory (the guest's page fault, plus the host's when the host
// backs guest memory on demand) against a write to a page already
// touched; and how long a time.Sleep of less than a millisecond really
// takes (the Go runtime's timers, when no processor is busy, wait in
// epoll with a millisecond timeout).
//
// Usage:
//
//	go run ./bench/hostcost [-mib 256] [-rounds 2] [-sleeps 300]
//
// It prints µs per 4 KiB page, first and second touch, per round, and the
// p50/p99 of each sleep duration.
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
}
