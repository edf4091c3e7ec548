package server

import (
	"log/slog"
	"testing"

	"github.com/magnetar-mq/magnetar/protocol/bkproto"
)

// TestHighPriorityNeverBehindReads: with the normal read queue full, a
// normal read is refused with ETOOMANYREQUESTS while fence and recovery
// requests still go to their own queue.
func TestHighPriorityNeverBehindReads(t *testing.T) {
	s := &Server{opts: Options{Logger: slog.New(slog.DiscardHandler), Auth: AllowAll{}},
		readQ: make(chan task, 1), hpQ: make(chan task, 2)}
	c := &conn{s: s, signal: make(chan struct{}, 1), authed: true}
	s.readQ <- task{} // the read pool is busy and its queue full

	c.dispatch(&bkproto.Request{Op: bkproto.OpRead, ReqID: 1, Ledger: 1, Entry: 0})
	c.dispatch(&bkproto.Request{Op: bkproto.OpRead, Flags: bkproto.FlagFence, ReqID: 2, Ledger: 1, Entry: -1, MasterKey: []byte("k")})
	c.dispatch(&bkproto.Request{Op: bkproto.OpRead, Flags: bkproto.FlagHighPriority, ReqID: 3, Ledger: 1, Entry: 5})

	if len(s.hpQ) != 2 {
		t.Fatalf("high-priority queue holds %d requests, want 2", len(s.hpQ))
	}
	for _, want := range []uint64{2, 3} {
		if got := (<-s.hpQ).req.ReqID; got != want {
			t.Fatalf("high-priority queue: request %d, want %d", got, want)
		}
	}
	_, resp, err := bkproto.DecodeResponse(c.out)
	if err != nil || resp.ReqID != 1 || resp.Status != bkproto.ETOOMANYREQUESTS {
		t.Fatalf("normal read with a full queue answered %+v, %v; want ETOOMANYREQUESTS", resp, err)
	}
}
