package broker

import (
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
)

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
		seen[tp.name.String()]++
	}
	if seen["persistent://public/default/walk-a"] != 1 || seen["persistent://public/default/walk-b"] != 1 || len(seen) != 2 {
		t.Fatalf("walk yielded %v", seen)
	}

	waiting := make(chan int, 1)
	tb.walks.SetWaitHook(func(n int) { waiting <- n })
	defer tb.walks.SetWaitHook(nil)
	endWalk := tb.walks.Begin()
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
