package main

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

// fixture is perf script output of one journal fdatasync on an io-wq
// worker (tid 100) that sleeps on its data write and then waits 1 ms for a
// CPU after the wake-up, inside an io_uring write+fsync chain; plus a
// flush issued without a completion event (merged by the block layer)
// before the sync's own flush, and another inode's sync that must be left
// out.
const fixture = `
        magnetar   200 [000]     0.999900:       io_uring:io_uring_submit_req: ring 0xa, req 0xb1, user_data 0x0, opcode WRITE, flags 0x400004, sq_thread 0
        magnetar   200 [000]     0.999901:       io_uring:io_uring_submit_req: ring 0xa, req 0xb2, user_data 0x1, opcode FSYNC, flags 0x10, sq_thread 0
 kworker/0:0H-kb    10 [000]     0.999950:            block:block_rq_issue: 254,0 FF 0 () 0 + 0 0x0,0,0 [kworker/0:0H]
    iou-wrk-200   100 [001]     1.000000:      ext4:ext4_sync_file_enter: dev 254,0 ino 42 parent 41 datasync 1
    iou-wrk-200   100 [001]     1.000005:            block:block_rq_issue: 254,0 WS 8192 () 5000 + 16 0x2,0,4 [iou-wrk-200]
    iou-wrk-200   100 [001]     1.000010:              sched:sched_switch: prev_comm=iou-wrk-200 prev_pid=100 prev_prio=120 prev_state=D ==> next_comm=magnetar next_pid=200 next_prio=120
         swapper     0 [000]     1.000200:         block:block_rq_complete: 254,0 WS () 5000 + 16 0x2,0,4 [0]
         swapper     0 [000]     1.000201:              sched:sched_wakeup: comm=iou-wrk-200 pid=100 prio=120 target_cpu=001
        magnetar   200 [001]     1.001201:              sched:sched_switch: prev_comm=magnetar prev_pid=200 prev_prio=120 prev_state=R ==> next_comm=iou-wrk-200 next_pid=100 next_prio=120
 kworker/1:1H-kb    47 [001]     1.001210:            block:block_rq_issue: 254,0 FF 0 () 0 + 0 0x0,0,0 [kworker/1:1H]
         swapper     0 [000]     1.001240:         block:block_rq_complete: 254,0 FF () 18446744073709551615 + 0 0x0,0,0 [0]
    iou-wrk-200   100 [001]     1.001300:       ext4:ext4_sync_file_exit: dev 254,0 ino 42 ret 0
    iou-wrk-200   100 [001]     1.001310:         io_uring:io_uring_complete: ring 0xa, req 0xb2, user_data 0x1, result 0, cflags 0x0 extra1 0 extra2 0
     other proc   300 [000]     1.002000:      ext4:ext4_sync_file_enter: dev 254,0 ino 7 parent 2 datasync 1
     other proc   300 [000]     1.009000:       ext4:ext4_sync_file_exit: dev 254,0 ino 7 ret 0
    iou-wrk-200   100 [001]     1.003000:      ext4:ext4_sync_file_enter: dev 254,0 ino 42 parent 41 datasync 1
    iou-wrk-200   100 [001]     1.003100:       ext4:ext4_sync_file_exit: dev 254,0 ino 42 ret 0
perf: some message
`

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-7 {
		t.Errorf("%s = %.6f ms, want %.6f ms", what, got*1e3, want*1e3)
	}
}

func TestDecomposeSync(t *testing.T) {
	evs, err := readEvents(strings.NewReader(fixture))
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 17 {
		t.Fatalf("parsed %d events, want 17", len(evs))
	}
	if evs[13].comm != "other proc" || evs[13].tid != 300 {
		t.Errorf("comm with a space: got %q tid %d", evs[13].comm, evs[13].tid)
	}
	r := analyze(evs, "")
	if r.inode != "42" {
		t.Fatalf("inode %q, want 42 (the most datasyncs)", r.inode)
	}
	if len(r.syncs) != 2 {
		t.Fatalf("%d syncs of inode 42, want 2", len(r.syncs))
	}
	s := r.syncs[0]
	near(t, "total", s.total, 0.0013)
	near(t, "runnable", s.in[stRunnable], 0.001)
	near(t, "asleep", s.in[stSleep], 0.000191)
	near(t, "on CPU", s.in[stRun], 0.000109)
	near(t, "preempted", s.in[stPreempted], 0)
	sum := 0.0
	for _, v := range s.in {
		sum += v
	}
	near(t, "states add up to the total", sum, s.total)

	if got := r.blocks["WS"]; len(got) != 1 {
		t.Fatalf("WS requests %v, want one", got)
	} else {
		near(t, "WS device time", got[0], 0.000195)
	}
	// The flush without a completion must not shift the match: the
	// completion belongs to the flush issued at 1.001210.
	if got := r.blocks["FF"]; len(got) != 1 {
		t.Fatalf("FF requests %v, want one", got)
	} else {
		near(t, "FF device time", got[0], 0.00003)
	}

	if len(r.chains) != 1 {
		t.Fatalf("%d chains, want 1", len(r.chains))
	}
	c := r.chains[0]
	near(t, "chain", c.complete-c.submit, 0.00141)
	near(t, "submit to fsync start", c.syncEnter-c.submit, 0.0001)

	d := r.sched["iou-wrk (io_uring workers)"]
	if len(d) != 1 {
		t.Fatalf("io-wq scheduling delays %v, want one", d)
	}
	near(t, "io-wq wake-up to running", d[0], 0.001)
}

func TestReportPrintsTables(t *testing.T) {
	evs, err := readEvents(strings.NewReader(fixture))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	report(&b, analyze(evs, ""), time.Millisecond.Seconds())
	out := b.String()
	for _, want := range []string{
		"fdatasyncs of inode 42: 2",
		"runnable",
		"slow (>= 1.000 ms): 1 of 2",
		"io_uring write+fsync chains: 1",
		"WS ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestRunNeedsCommandOrScript(t *testing.T) {
	if err := run("", "", "", time.Millisecond, nil, &bytes.Buffer{}); err == nil {
		t.Fatal("run with neither a command nor a script succeeded")
	}
}
