package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
)

type recProducerSink struct {
	mu  sync.Mutex
	out []string
}

func (r *recProducerSink) add(s string) {
	r.mu.Lock()
	r.out = append(r.out, s)
	r.mu.Unlock()
}
func (r *recProducerSink) sendReceipt(_, seq, _ uint64, pos position) {
	r.add(fmt.Sprintf("receipt %d %v", seq, pos))
}
func (r *recProducerSink) sendSendError(_, seq uint64, _ int32, _ string) {
	r.add(fmt.Sprintf("error %d", seq))
}
func (r *recProducerSink) sendDropped(_, seq uint64) {
	r.add(fmt.Sprintf("dropped %d", seq))
}
func (r *recProducerSink) producerReady(*producer) {}
func (r *recProducerSink) closeProducer(*producer) {}

func TestDuplicateReceiptWaitsForInflightAdds(t *testing.T) {
	sink := &recProducerSink{}
	p := &producer{sink: sink}
	p.mu.inflight = 1
	p.duplicate(5) // must wait for the in-flight add
	if len(sink.out) != 0 {
		t.Fatalf("duplicate answered before the in-flight add: %v", sink.out)
	}
	p.persisted(4, 4, position{LedgerID: 1, EntryID: 0})
	p.duplicate(6) // nothing in flight: answered at once
	want := []string{"receipt 4 1:0", "receipt 5 -1:-1", "receipt 6 -1:-1"}
	if !slices.Equal(sink.out, want) {
		t.Fatalf("answers %v, want %v", sink.out, want)
	}
	// A failed add also releases waiting duplicates, after its error.
	sink.out = nil
	p.mu.inflight = 1
	p.duplicate(8)
	tp := &topic{b: &Broker{}, log: slog.New(slog.DiscardHandler)}
	tp.publishFailed(p, 7, errors.New("boom"))
	if want := []string{"error 7", "receipt 8 -1:-1"}; !slices.Equal(sink.out, want) {
		t.Fatalf("answers %v, want %v", sink.out, want)
	}
}
