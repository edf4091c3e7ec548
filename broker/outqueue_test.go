package broker

import (
	"bytes"
	"errors"
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

func TestOutQueueCoalescesWhileWriting(t *testing.T) {
	q := newOutQueue(1 << 20)
	w := &gateWriter{gate: make(chan struct{}), first: make(chan struct{})}
	done := make(chan error)
	go func() { done <- q.run(w) }()
	q.push(func(b []byte) []byte { return append(b, 'a') })
	<-w.first // the writer is inside Write("a")
	for _, c := range []byte("bcd") {
		q.push(func(b []byte) []byte { return append(b, c) })
	}
	close(w.gate)
	q.close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(w.writes) != 2 || string(w.writes[0]) != "a" || string(w.writes[1]) != "bcd" {
		t.Fatalf("writes %q, want [a bcd]", w.writes)
	}
}

func TestOutQueueBoundAndBackpressure(t *testing.T) {
	q := newOutQueue(100)
	if !q.writable() {
		t.Fatal("empty queue not writable")
	}
	q.push(func(b []byte) []byte { return append(b, make([]byte, 60)...) })
	if q.writable() {
		t.Fatal("queue above the soft limit (50) still writable")
	}
	if q.push(func(b []byte) []byte { return append(b, make([]byte, 60)...) }) {
		t.Fatal("push beyond the hard bound succeeded")
	}
	if q.push(func(b []byte) []byte { return b }) {
		t.Fatal("push after overflow succeeded")
	}
	if err := q.run(&bytes.Buffer{}); !errors.Is(err, ErrSlowConsumer) {
		t.Fatalf("run after overflow = %v, want ErrSlowConsumer", err)
	}
}

func TestOutQueueDrainedCallback(t *testing.T) {
	q := newOutQueue(100)
	var drained int
	q.drained = func() { drained++ }
	var out bytes.Buffer
	done := make(chan error)
	q.push(func(b []byte) []byte { return append(b, make([]byte, 70)...) })
	go func() { done <- q.run(&out) }()
	q.close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if out.Len() != 70 || drained == 0 || !q.writable() {
		t.Fatalf("wrote %d, drained %d times, writable %v", out.Len(), drained, q.writable())
	}
}

func TestOutQueueReferencedSegmentsKeepOrder(t *testing.T) {
	q := newOutQueue(1 << 20)
	big1 := bytes.Repeat([]byte("X"), refThreshold)
	big2 := bytes.Repeat([]byte("Y"), refThreshold+1)
	buf, _ := q.begin()
	buf = append(buf, "h1"...)
	buf = q.appendRefLocked(buf, big1)
	buf = append(buf, "h2"...)
	buf = q.appendRefLocked(buf, big2)
	buf = append(buf, "tail"...)
	q.end(buf)
	if got, want := q.pending(), 2+len(big1)+2+len(big2)+4; got != want {
		t.Fatalf("pending %d, want %d", got, want)
	}
	var out bytes.Buffer
	done := make(chan error)
	go func() { done <- q.run(&out) }()
	q.close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := "h1" + string(big1) + "h2" + string(big2) + "tail"
	if out.String() != want {
		t.Fatalf("wrote %d bytes in the wrong order", out.Len())
	}
}
