package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"
)

// events are the tracepoints recorded.
var events = []string{
	"sched:sched_switch", "sched:sched_wakeup",
	"ext4:ext4_sync_file_enter", "ext4:ext4_sync_file_exit",
	"block:block_rq_issue", "block:block_rq_complete",
	"io_uring:io_uring_submit_req", "io_uring:io_uring_complete",
}

func main() {
	out := flag.String("out", "", "keep perf.data and the script output in this directory (default: a temp dir, removed)")
	script := flag.String("script", "", "analyse this `perf script` output instead of running a command")
	inode := flag.String("inode", "", "decompose the fdatasyncs of this inode (default: the one with the most)")
	slow := flag.Duration("slow", time.Millisecond, "a sync this long or longer is slow")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: synctrace [flags] -- CMD [ARGS...]\n       synctrace -script FILE\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(*out, *script, *inode, *slow, flag.Args(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "synctrace:", err)
		os.Exit(1)
	}
}

func run(out, script, inode string, slow time.Duration, cmd []string, w io.Writer) error {
	if script == "" {
		if len(cmd) == 0 {
			return errors.New("no command to trace (synctrace -- CMD ARGS)")
		}
		dir := out
		if dir == "" {
			d, err := os.MkdirTemp("", "synctrace")
			if err != nil {
				return err
			}
			defer os.RemoveAll(d)
			dir = d
		} else if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		var err error
		if script, err = record(dir, cmd); err != nil {
			return err
		}
	}
	f, err := os.Open(script)
	if err != nil {
		return err
	}
	defer f.Close()
	evs, err := readEvents(f)
	if err != nil {
		return fmt.Errorf("%s: %w", script, err)
	}
	if len(evs) == 0 {
		return fmt.Errorf("%s: no events", script)
	}
	report(w, analyze(evs, inode), slow.Seconds())
	return nil
}

// record runs cmd under perf record and writes perf script's output next
// to perf.data; it returns the script's path.
func record(dir string, cmd []string) (string, error) {
	data := filepath.Join(dir, "perf.data")
	args := []string{"record", "-a", "-o", data}
	for _, e := range events {
		args = append(args, "-e", e)
	}
	args = append(args, "--")
	args = append(args, cmd...)
	rec := exec.Command("perf", args...)
	rec.Stdout, rec.Stderr = os.Stderr, os.Stderr
	if err := rec.Run(); err != nil {
		return "", fmt.Errorf("perf record: %w", err)
	}
	path := filepath.Join(dir, "perf.script")
	sf, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer sf.Close()
	sc := exec.Command("perf", "script", "-i", data, "-F", "comm,tid,cpu,time,event,trace")
	sc.Stdout = sf
	sc.Stderr = io.Discard
	if err := sc.Run(); err != nil {
		return "", fmt.Errorf("perf script: %w", err)
	}
	return path, sf.Close()
}

func ms(s float64) string { return fmt.Sprintf("%.3f", s*1e3) }

// report prints the four tables.
func report(w io.Writer, r *result, slow float64) {
	fmt.Fprintf(w, "block requests (issue to complete, ms)\n")
	fmt.Fprintf(w, "  %-5s %8s %8s %8s %8s %8s %10s\n", "rwbs", "n", "p50", "p90", "p99", "max", "bytes p50")
	for _, k := range sortedKeys(r.blocks) {
		d, b := newDist(r.blocks[k]), newDist(r.blockBytes[k])
		fmt.Fprintf(w, "  %-5s %8d %8s %8s %8s %8s %10.0f\n", k, len(d), ms(d.q(.5)), ms(d.q(.9)), ms(d.q(.99)), ms(d.q(1)), b.q(.5))
	}

	fmt.Fprintf(w, "\nfdatasyncs of inode %s: %d (datasyncs per inode: %v)\n", r.inode, len(r.syncs), r.inodes)
	if len(r.syncs) > 0 {
		fmt.Fprintf(w, "  %-10s %8s %8s %8s %8s %8s %12s\n", "ms", "mean", "p50", "p90", "p99", "max", "mean if slow")
		var slowN int
		var slowIn [nStates]float64
		var slowTotal float64
		tot := make([]float64, len(r.syncs))
		var parts [nStates][]float64
		for i, s := range r.syncs {
			tot[i] = s.total
			for k := range nStates {
				parts[k] = append(parts[k], s.in[k])
			}
			if s.total >= slow {
				slowN++
				slowTotal += s.total
				for k := range nStates {
					slowIn[k] += s.in[k]
				}
			}
		}
		div := float64(max(slowN, 1))
		row := func(name string, v []float64, slowSum float64) {
			d := newDist(v)
			fmt.Fprintf(w, "  %-10s %8s %8s %8s %8s %8s %12s\n", name, ms(d.mean()), ms(d.q(.5)), ms(d.q(.9)), ms(d.q(.99)), ms(d.q(1)), ms(slowSum/div))
		}
		row("total", tot, slowTotal)
		for k := range nStates {
			row(stateNames[k], parts[k], slowIn[k])
		}
		fmt.Fprintf(w, "  slow (>= %s ms): %d of %d\n", ms(slow), slowN, len(r.syncs))
	}

	if len(r.chains) > 0 {
		fmt.Fprintf(w, "\nio_uring write+fsync chains: %d (ms)\n", len(r.chains))
		fmt.Fprintf(w, "  %-26s %8s %8s %8s %8s %8s\n", "", "mean", "p50", "p90", "p99", "max")
		var all, before, sync, after []float64
		for _, c := range r.chains {
			all = append(all, c.complete-c.submit)
			if c.syncEnter > 0 && c.syncExit > 0 {
				before = append(before, c.syncEnter-c.submit)
				sync = append(sync, c.syncExit-c.syncEnter)
				after = append(after, c.complete-c.syncExit)
			}
		}
		row := func(name string, v []float64) {
			d := newDist(v)
			fmt.Fprintf(w, "  %-26s %8s %8s %8s %8s %8s\n", name, ms(d.mean()), ms(d.q(.5)), ms(d.q(.9)), ms(d.q(.99)), ms(d.q(1)))
		}
		row("submit to completion", all)
		row("submit to fsync start", before)
		row("fsync", sync)
		row("fsync end to completion", after)
	}

	fmt.Fprintf(w, "\nscheduling delay, wake-up to running (ms)\n")
	fmt.Fprintf(w, "  %-34s %8s %8s %8s %8s %8s\n", "threads", "n", "p50", "p90", "p99", "max")
	for _, k := range sortedKeys(r.sched) {
		d := newDist(r.sched[k])
		if len(d) < 10 {
			continue
		}
		fmt.Fprintf(w, "  %-34s %8d %8s %8s %8s %8s\n", k, len(d), ms(d.q(.5)), ms(d.q(.9)), ms(d.q(.99)), ms(d.q(1)))
	}
}

func sortedKeys(m map[string][]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
