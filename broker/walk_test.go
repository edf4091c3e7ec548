package broker

import (
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// TestWalkCount: wait returns at once with no walk in flight, waits for
// every walk in flight (nested ones and ones begun meanwhile included),
// and gives up after its limit or when stopped.
func TestWalkCount(t *testing.T) {
	var w walkCount
	if !w.wait(time.Hour, nil) {
		t.Fatal("wait with no walk ever begun")
	}
	end1 := w.begin()
	end2 := w.begin() // a walk inside a walk
	if w.wait(time.Millisecond, nil) {
		t.Fatal("wait returned true with two walks in flight")
	}
	stop := make(chan struct{})
	close(stop)
	if w.wait(time.Hour, stop) {
		t.Fatal("wait returned true when stopped with walks in flight")
	}

	waiting := make(chan int, 4)
	testHookWalkWait = func(n int) { waiting <- n }
	defer func() { testHookWalkWait = nil }()
	done := make(chan bool)
	go func() { done <- w.wait(time.Hour, nil) }()
	if n := <-waiting; n != 2 {
		t.Fatalf("wait found %d walks, want 2", n)
	}
	end1()
	end3 := w.begin() // begun while it waits, before the last one ends
	end2()
	select {
	case <-done:
		t.Fatal("wait returned with a walk in flight")
	default:
	}
	end3()
	if !<-done {
		t.Fatal("wait returned false once every walk ended")
	}
	// And again from idle: the channel is made anew.
	end4 := w.begin()
	go func() { done <- w.wait(time.Hour, nil) }()
	if n := <-waiting; n != 1 {
		t.Fatalf("wait found %d walks, want 1", n)
	}
	end4()
	if !<-done {
		t.Fatal("second wait returned false")
	}
}

// TestReleaseWaitsForWalk: the idle sweep's release starts only once the
// walk in flight over the loaded topics has ended, and a walk yields
// each loaded topic once.
func TestReleaseWaitsForWalk(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	for _, topic := range []string{"walk-a", "walk-b"} {
		p := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic})
		p.Close()
	}
	seen := map[string]int{}
	for tp := range tb.everyLoaded("") {
		seen[tp.full]++
	}
	if seen["persistent://public/default/walk-a"] != 1 || seen["persistent://public/default/walk-b"] != 1 || len(seen) != 2 {
		t.Fatalf("walk yielded %v", seen)
	}

	waiting := make(chan int, 1)
	testHookWalkWait = func(n int) { waiting <- n }
	defer func() { testHookWalkWait = nil }()
	endWalk := tb.walks.begin()
	released := make(chan struct{})
	go func() {
		tb.ReleaseUnloaded(ReleaseAfterUnload)
		close(released)
	}()
	if n := <-waiting; n != 1 {
		t.Fatalf("release found %d walks, want 1", n)
	}
	select {
	case <-released:
		t.Fatal("released while a walk was in flight")
	default:
	}
	endWalk()
	<-released
}
