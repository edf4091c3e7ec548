package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// event is one line of `perf script -F comm,tid,cpu,time,event,trace`:
//
//	iou-wrk-4954  4962 [001]   365.067479: ext4:ext4_sync_file_enter: dev 254,0 ino 9977864 parent 9978088 datasync 1
type event struct {
	comm string
	tid  int
	ts   float64 // seconds
	name string  // e.g. "ext4:ext4_sync_file_enter"
	args string
}

// parseLine parses one event line; ok is false for anything else (headers,
// blank lines, perf's own messages).
func parseLine(line string) (ev event, ok bool) {
	// The cpu field "[NNN]" anchors the line: the comm before it may hold
	// spaces, the tid is the last word before it.
	lb := strings.Index(line, " [")
	if lb < 0 {
		return event{}, false
	}
	rb := strings.Index(line[lb:], "]")
	if rb < 0 {
		return event{}, false
	}
	head := strings.Fields(line[:lb])
	if len(head) < 2 {
		return event{}, false
	}
	tid, err := strconv.Atoi(head[len(head)-1])
	if err != nil {
		return event{}, false
	}
	rest := strings.TrimSpace(line[lb+rb+1:])
	// "365.067479: ext4:ext4_sync_file_enter: args"
	c1 := strings.Index(rest, ": ")
	if c1 < 0 {
		return event{}, false
	}
	ts, err := strconv.ParseFloat(rest[:c1], 64)
	if err != nil {
		return event{}, false
	}
	rest = strings.TrimSpace(rest[c1+2:])
	c2 := strings.Index(rest, ":")
	if c2 < 0 {
		return event{}, false
	}
	// The event name holds one colon (subsystem:name); the args follow
	// the next ": " or end the line.
	c3 := strings.Index(rest[c2+1:], ":")
	name, args := rest, ""
	if c3 >= 0 {
		name, args = rest[:c2+1+c3], strings.TrimSpace(rest[c2+1+c3+1:])
	}
	return event{
		comm: strings.Join(head[:len(head)-1], " "),
		tid:  tid,
		ts:   ts,
		name: name,
		args: args,
	}, true
}

// readEvents parses every event line of r, in order.
func readEvents(r io.Reader) ([]event, error) {
	var evs []event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if ev, ok := parseLine(sc.Text()); ok {
			evs = append(evs, ev)
		}
	}
	return evs, sc.Err()
}

// kv returns the value of key=value in args ("" when absent).
func kv(args, key string) string {
	for _, f := range strings.Fields(args) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return strings.TrimSuffix(v, ",")
		}
	}
	return ""
}

// word returns the word after key in args ("ino 123" -> "123").
func word(args, key string) string {
	f := strings.Fields(args)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == key {
			return strings.TrimSuffix(f[i+1], ",")
		}
	}
	return ""
}

// blockReq is a block_rq_issue or block_rq_complete's fields:
//
//	254,0 WS 282624 () 355555360 + 552 0x2,0,4 [iou-wrk-4954]   (issue)
//	254,0 WS () 355555360 + 552 0x2,0,4 [0]                     (complete)
type blockReq struct {
	dev    string
	rwbs   string
	bytes  int64 // issue only
	sector string
	nr     string
}

func parseBlock(args string, issue bool) (blockReq, error) {
	f := strings.Fields(args)
	if len(f) < 3 {
		return blockReq{}, fmt.Errorf("short block event %q", args)
	}
	b := blockReq{dev: f[0], rwbs: f[1]}
	i := 2
	if issue {
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return blockReq{}, fmt.Errorf("block issue bytes in %q: %w", args, err)
		}
		b.bytes = n
		i = 3
	}
	// "()" is the command; then "sector + nr".
	for ; i < len(f) && f[i] != "()"; i++ {
	}
	if i+3 < len(f) && f[i+2] == "+" {
		b.sector, b.nr = f[i+1], f[i+3]
	}
	return b, nil
}
