package main

import (
	"sort"
	"strconv"
	"strings"
)

// Thread states a sync's time is charged to.
const (
	stRun       = iota // on a CPU
	stSleep            // asleep: waiting for the device or another thread
	stRunnable         // woken, waiting for a CPU
	stPreempted        // switched out while runnable
	nStates
)

var stateNames = [nStates]string{"on CPU", "asleep", "runnable", "preempted"}

// syncRec is one fdatasync of the traced inode.
type syncRec struct {
	start float64
	total float64
	in    [nStates]float64
}

// chain is one io_uring write(s)+fsync chain: from the first linked
// write's submission to the fsync's completion.
type chain struct {
	submit    float64
	syncEnter float64 // the fsync began on the io-wq worker (0: not seen)
	syncExit  float64
	complete  float64
	fsyncReq  string // the fsync's request address, to match its completion
}

// result is everything the tables print.
type result struct {
	blocks     map[string][]float64 // rwbs -> issue-to-complete seconds
	blockBytes map[string][]float64 // rwbs -> issued bytes
	inode      string               // the inode whose syncs are analysed
	inodes     map[string]int       // datasync count per inode
	syncs      []syncRec
	chains     []chain
	sched      map[string][]float64 // thread kind -> wake-up to running, seconds
}

// threadKind groups threads for the scheduling table: io-wq workers and
// kernel workers by kind, other threads by name.
func threadKind(comm string) string {
	switch {
	case strings.HasPrefix(comm, "iou-wrk"):
		return "iou-wrk (io_uring workers)"
	case strings.HasPrefix(comm, "kworker/") && strings.Contains(comm, "H"):
		return "kworker, high priority (kblockd)"
	case strings.HasPrefix(comm, "kworker/"):
		return "kworker"
	case strings.HasPrefix(comm, "swapper"):
		return ""
	}
	// Other kernel threads carry a "/N" or ":N" suffix (ksoftirqd/0).
	if i := strings.IndexAny(comm, "/:"); i > 0 {
		comm = comm[:i]
	}
	return comm
}

// analyze follows every thread's state through the events and collects
// the tables. inode selects the syncs to decompose ("" = the inode with
// the most fdatasyncs).
func analyze(evs []event, inode string) *result {
	r := &result{
		blocks:     map[string][]float64{},
		blockBytes: map[string][]float64{},
		inodes:     map[string]int{},
		sched:      map[string][]float64{},
	}
	if inode == "" {
		for _, ev := range evs {
			if ev.name == "ext4:ext4_sync_file_enter" && word(ev.args, "datasync") == "1" {
				r.inodes[word(ev.args, "ino")]++
			}
		}
		best := 0
		for ino, n := range r.inodes {
			if n > best || n == best && ino < r.inode {
				r.inode, best = ino, n
			}
		}
	} else {
		r.inode = inode
	}

	type tstate struct {
		st    int
		since float64
	}
	threads := map[int]*tstate{}
	comms := map[int]string{}
	open := map[int]*syncRec{}
	charge := func(tid int, ts float64) {
		t := threads[tid]
		if t == nil {
			return
		}
		if s := open[tid]; s != nil {
			from := t.since
			if from < s.start {
				from = s.start
			}
			if ts > from {
				s.in[t.st] += ts - from
			}
		}
	}
	set := func(tid int, st int, ts float64) {
		charge(tid, ts)
		t := threads[tid]
		if t == nil {
			t = &tstate{}
			threads[tid] = t
		}
		t.st, t.since = st, ts
	}
	woken := map[int]float64{}

	type pending struct {
		ts    float64
		bytes int64
	}
	issued := map[string]pending{} // dev/sector/nr -> issue
	lastFlush := -1.0              // when the latest unmatched flush was issued
	chains := map[string]*chain{}  // ring -> chain being submitted or in flight

	for _, ev := range evs {
		switch ev.name {
		case "sched:sched_switch":
			prev, _ := strconv.Atoi(kv(ev.args, "prev_pid"))
			next, _ := strconv.Atoi(kv(ev.args, "next_pid"))
			if prev != 0 {
				if strings.HasPrefix(kv(ev.args, "prev_state"), "R") {
					set(prev, stPreempted, ev.ts)
				} else {
					set(prev, stSleep, ev.ts)
				}
			}
			if next != 0 {
				if t0, ok := woken[next]; ok {
					if k := threadKind(commOr(comms, next, kv(ev.args, "next_comm"))); k != "" {
						r.sched[k] = append(r.sched[k], ev.ts-t0)
					}
					delete(woken, next)
				}
				set(next, stRun, ev.ts)
			}
		case "sched:sched_wakeup":
			tid, _ := strconv.Atoi(kv(ev.args, "pid"))
			if tid != 0 {
				comms[tid] = kv(ev.args, "comm")
				set(tid, stRunnable, ev.ts)
				woken[tid] = ev.ts
			}
		case "ext4:ext4_sync_file_enter":
			comms[ev.tid] = ev.comm
			if word(ev.args, "datasync") != "1" || word(ev.args, "ino") != r.inode {
				break
			}
			open[ev.tid] = &syncRec{start: ev.ts}
			// The thread runs: it emitted the event. (set charges
			// nothing to the new sync: its time starts now.)
			set(ev.tid, stRun, ev.ts)
			for _, c := range chains {
				if c.submit > 0 && c.syncEnter == 0 && strings.HasPrefix(ev.comm, "iou-wrk") {
					c.syncEnter = ev.ts
				}
			}
		case "ext4:ext4_sync_file_exit":
			s := open[ev.tid]
			if s == nil || word(ev.args, "ino") != r.inode {
				break
			}
			set(ev.tid, stRun, ev.ts)
			s.total = ev.ts - s.start
			r.syncs = append(r.syncs, *s)
			delete(open, ev.tid)
			for _, c := range chains {
				if c.syncEnter > 0 && c.syncExit == 0 {
					c.syncExit = ev.ts
				}
			}
		case "block:block_rq_issue":
			b, err := parseBlock(ev.args, true)
			if err != nil {
				break
			}
			if strings.HasPrefix(b.rwbs, "FF") || b.nr == "0" || b.nr == "" {
				lastFlush = ev.ts
				break
			}
			issued[b.dev+"/"+b.sector+"/"+b.nr] = pending{ev.ts, b.bytes}
		case "block:block_rq_complete":
			b, err := parseBlock(ev.args, false)
			if err != nil {
				break
			}
			if strings.HasPrefix(b.rwbs, "FF") {
				if lastFlush >= 0 {
					r.blocks["FF"] = append(r.blocks["FF"], ev.ts-lastFlush)
					lastFlush = -1
				}
				break
			}
			key := b.dev + "/" + b.sector + "/" + b.nr
			if p, ok := issued[key]; ok {
				delete(issued, key)
				r.blocks[b.rwbs] = append(r.blocks[b.rwbs], ev.ts-p.ts)
				r.blockBytes[b.rwbs] = append(r.blockBytes[b.rwbs], float64(p.bytes))
			}
		case "io_uring:io_uring_submit_req":
			ring := ringOf(ev.args)
			op := word(ev.args, "opcode")
			c := chains[ring]
			switch {
			case (op == "WRITE" || op == "WRITEV") && c == nil:
				chains[ring] = &chain{submit: ev.ts}
			case op == "FSYNC":
				if c == nil {
					c = &chain{submit: ev.ts}
					chains[ring] = c
				}
				c.fsyncReq = word(ev.args, "req")
			}
		case "io_uring:io_uring_complete":
			ring := ringOf(ev.args)
			c := chains[ring]
			if c == nil || c.fsyncReq == "" || word(ev.args, "req") != c.fsyncReq {
				break
			}
			c.complete = ev.ts
			r.chains = append(r.chains, *c)
			delete(chains, ring)
		}
	}
	return r
}

func commOr(comms map[int]string, tid int, fallback string) string {
	if c := comms[tid]; c != "" {
		return c
	}
	return fallback
}

// ringOf returns the ring address of an io_uring event ("ring 0xffff…,").
func ringOf(args string) string { return word(args, "ring") }

// dist is a sorted sample with percentiles.
type dist []float64

func newDist(v []float64) dist {
	d := append(dist(nil), v...)
	sort.Float64s(d)
	return d
}

func (d dist) q(p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	return d[int(p*float64(len(d)-1)+0.5)]
}

func (d dist) mean() float64 {
	if len(d) == 0 {
		return 0
	}
	s := 0.0
	for _, v := range d {
		s += v
	}
	return s / float64(len(d))
}
