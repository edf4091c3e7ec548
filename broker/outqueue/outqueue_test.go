package outqueue

import (
	"bytes"
	"errors"
	"net"
	"sync"
	"testing"
)

// gateWriter blocks each Write until released, recording what it got.
type gateWriter struct {
	mu     sync.Mutex
	writes [][]byte
	gate   chan struct{}
	first  chan struct{}
	once   sync.Once
}

func (w *gateWriter) Write(b []byte) (int, error) {
	w.once.Do(func() { close(w.first) })
	<-w.gate
	w.mu.Lock()
	w.writes = append(w.writes, bytes.Clone(b))
	w.mu.Unlock()
	return len(b), nil
}

func appendByte(c byte) func([]byte) []byte {
	return func(b []byte) []byte { return append(b, c) }
}

func TestCoalescesWhileWriting(t *testing.T) {
	q := New(1<<20, nil)
	w := &gateWriter{gate: make(chan struct{}), first: make(chan struct{})}
	done := make(chan error)
	go func() { done <- q.Run(w) }()
	q.Push(appendByte('a'))
	<-w.first // the writer is inside Write("a")
	for _, c := range []byte("bcd") {
		q.Push(appendByte(c))
	}
	close(w.gate)
	q.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(w.writes) != 2 || string(w.writes[0]) != "a" || string(w.writes[1]) != "bcd" {
		t.Fatalf("writes %q, want [a bcd]", w.writes)
	}
}

// vecWriter exposes WriteBuffers, as the broker's socket writer does.
type vecWriter struct {
	calls int
	segs  []int
	out   bytes.Buffer
}

func (w *vecWriter) Write(b []byte) (int, error) { panic("Write called on a vectored writer") }

func (w *vecWriter) WriteBuffers(nb *net.Buffers) error {
	w.calls++
	for _, b := range *nb {
		w.segs = append(w.segs, len(b))
		w.out.Write(b)
	}
	*nb = nil
	return nil
}

// TestOneWritevPerBatch: a batch with referenced segments goes out in one
// WriteBuffers call, the referenced data as segments of its own.
func TestOneWritevPerBatch(t *testing.T) {
	q := New(1<<20, nil)
	big := bytes.Repeat([]byte("R"), RefThreshold)
	buf, _ := q.Begin()
	buf = append(buf, "head"...)
	buf = q.AppendRef(buf, big)
	buf = append(buf, "tail"...)
	q.End(buf)
	q.Close()
	w := &vecWriter{}
	if err := q.Run(w); err != nil {
		t.Fatal(err)
	}
	if w.calls != 1 || w.out.String() != "head"+string(big)+"tail" {
		t.Fatalf("%d WriteBuffers calls, wrote %d bytes", w.calls, w.out.Len())
	}
	if len(w.segs) != 3 || w.segs[1] != len(big) {
		t.Fatalf("segments %v, want [4 %d 4]", w.segs, len(big))
	}
}

func TestBoundAndBackpressure(t *testing.T) {
	q := New(100, nil)
	if !q.Writable() {
		t.Fatal("empty queue not writable")
	}
	q.Push(func(b []byte) []byte { return append(b, make([]byte, 60)...) })
	if q.Writable() {
		t.Fatal("queue above the soft limit (50) still writable")
	}
	if q.Push(func(b []byte) []byte { return append(b, make([]byte, 60)...) }) {
		t.Fatal("push beyond the hard bound succeeded")
	}
	if q.Push(func(b []byte) []byte { return b }) {
		t.Fatal("push after overflow succeeded")
	}
	var out bytes.Buffer
	if err := q.Run(&out); !errors.Is(err, ErrOverflow) {
		t.Fatalf("Run after overflow = %v, want ErrOverflow", err)
	}
	if out.Len() != 0 {
		t.Fatalf("wrote %d bytes of an overflowed queue", out.Len())
	}
}

// TestReferencedBytesCountTowardsBound: data queued by reference counts
// against the bound like copied bytes.
func TestReferencedBytesCountTowardsBound(t *testing.T) {
	q := New(100, nil)
	buf, _ := q.Begin()
	buf = q.AppendRef(buf, make([]byte, 80))
	if !q.End(buf) {
		t.Fatal("80 referenced bytes overflowed a 100-byte queue")
	}
	buf, _ = q.Begin()
	buf = q.AppendRef(append(buf, make([]byte, 10)...), make([]byte, 20))
	if q.End(buf) {
		t.Fatal("110 bytes (80+20 referenced, 10 copied) fit a 100-byte queue")
	}
}

func TestDrainedCallback(t *testing.T) {
	var drained int
	q := New(100, func() { drained++ })
	var out bytes.Buffer
	done := make(chan error)
	q.Push(func(b []byte) []byte { return append(b, make([]byte, 70)...) })
	go func() { done <- q.Run(&out) }()
	q.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if out.Len() != 70 || drained == 0 || !q.Writable() {
		t.Fatalf("wrote %d, drained %d times, writable %v", out.Len(), drained, q.Writable())
	}
}

func TestReferencedSegmentsKeepOrder(t *testing.T) {
	q := New(1<<20, nil)
	big1 := bytes.Repeat([]byte("X"), RefThreshold)
	big2 := bytes.Repeat([]byte("Y"), RefThreshold+1)
	buf, _ := q.Begin()
	buf = append(buf, "h1"...)
	buf = q.AppendRef(buf, big1)
	buf = append(buf, "h2"...)
	buf = q.AppendRef(buf, big2)
	buf = append(buf, "tail"...)
	q.End(buf)
	if got, want := int(q.queued.Load()), 2+len(big1)+2+len(big2)+4; got != want {
		t.Fatalf("queued %d, want %d", got, want)
	}
	var out bytes.Buffer
	done := make(chan error)
	go func() { done <- q.Run(&out) }()
	q.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := "h1" + string(big1) + "h2" + string(big2) + "tail"
	if out.String() != want {
		t.Fatalf("wrote %d bytes in the wrong order", out.Len())
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

// TestWriteErrorClosesQueue: Run returns the writer's error and the queue
// refuses appends afterwards.
func TestWriteErrorClosesQueue(t *testing.T) {
	q := New(1<<20, nil)
	boom := errors.New("boom")
	q.Push(appendByte('a'))
	if err := q.Run(failWriter{boom}); !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want %v", err, boom)
	}
	if q.Push(appendByte('b')) {
		t.Fatal("push after a failed write succeeded")
	}
}

// TestClosedRefusesAppends: after Close, Begin and Push fail, and Run
// still writes what was queued before.
func TestClosedRefusesAppends(t *testing.T) {
	q := New(1<<20, nil)
	q.Push(appendByte('a'))
	q.Close()
	if _, ok := q.Begin(); ok {
		t.Fatal("Begin succeeded on a closed queue")
	}
	if q.Push(appendByte('b')) {
		t.Fatal("Push succeeded on a closed queue")
	}
	var out bytes.Buffer
	if err := q.Run(&out); err != nil || out.String() != "a" {
		t.Fatalf("Run = %v, wrote %q, want nil and %q", err, out.String(), "a")
	}
}
