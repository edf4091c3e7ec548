package inflight

import (
	"testing"
	"time"
)

// TestCounter: Wait returns at once with nothing in flight, waits for
// every operation in flight (nested ones and ones begun meanwhile
// included), and gives up after its limit or when stopped.
func TestCounter(t *testing.T) {
	var w Counter
	if !w.Wait(time.Hour, nil) {
		t.Fatal("wait with no walk ever begun")
	}
	end1 := w.Begin()
	end2 := w.Begin() // a walk inside a walk
	if w.Wait(time.Millisecond, nil) {
		t.Fatal("wait returned true with two walks in flight")
	}
	stop := make(chan struct{})
	close(stop)
	if w.Wait(time.Hour, stop) {
		t.Fatal("wait returned true when stopped with walks in flight")
	}

	waiting := make(chan int, 4)
	w.SetWaitHook(func(n int) { waiting <- n })
	done := make(chan bool)
	go func() { done <- w.Wait(time.Hour, nil) }()
	if n := <-waiting; n != 2 {
		t.Fatalf("wait found %d walks, want 2", n)
	}
	end1()
	end3 := w.Begin() // begun while it waits, before the last one ends
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
	end4 := w.Begin()
	go func() { done <- w.Wait(time.Hour, nil) }()
	if n := <-waiting; n != 1 {
		t.Fatalf("wait found %d walks, want 1", n)
	}
	end4()
	if !<-done {
		t.Fatal("second wait returned false")
	}
}
