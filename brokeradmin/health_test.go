package brokeradmin_test

import (
	"errors"
	"testing"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/brokeradmin"
)

// TestHealthCheck: enabled before Start (twice registers it once), the
// check writes and reads back through the bookies, again and again on
// the same ledger; a broker without it answers that it is not enabled,
// and it cannot be enabled once the broker runs.
func TestHealthCheck(t *testing.T) {
	tb := brokertest.Start(t, brokertest.Options{Wire: func(b *brokertest.Broker) (func(), error) {
		if err := brokeradmin.EnableHealth(b.Broker); err != nil {
			return nil, err
		}
		return nil, brokeradmin.EnableHealth(b.Broker)
	}})
	n := 0
	for _, f := range tb.Features() {
		if _, ok := f.(*brokeradmin.Health); ok {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d health features registered, want 1", n)
	}
	ctx := brokertest.Ctx(t)
	for i := range 3 {
		if err := tb.Admin().Ownership.HealthCheck(ctx); err != nil {
			t.Fatalf("check %d: %v", i, err)
		}
	}

	plain := brokertest.Start(t, brokertest.Options{})
	if err := plain.Admin().Ownership.HealthCheck(ctx); err == nil {
		t.Fatal("a broker without the health check passed it")
	}
	if err := brokeradmin.EnableHealth(plain.Broker); !errors.Is(err, broker.ErrStarted) {
		t.Fatalf("enabled after Start: %v", err)
	}
}
