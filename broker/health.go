package broker

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
)

// unloadWait bounds how long an unload waits for a topic's writes in
// flight.
func (cfg *Config) unloadWait() time.Duration {
	if c := cfg.Cluster; c != nil && c.UnloadTimeout > 0 {
		return c.UnloadTimeout
	}
	return 30 * time.Second
}

// healthState is the broker's health-check topic: a managed ledger of its
// own (one per broker id, so no other broker opens it), opened on first
// use and closed with the broker.
type healthState struct {
	mu sync.Mutex
	ml ManagedLedger
}

// HealthCheck is a real check, as Pulsar's /admin/v2/brokers/health: the
// metadata store answers (and, in a cluster, the broker's session lease
// holds), and a message written through a managed ledger to the bookies
// reads back equal. The error names the failing step.
func (b *Broker) HealthCheck(ctx context.Context) error {
	if _, err := b.deps.Metadata.Exists(ctx, "/"); err != nil {
		return fmt.Errorf("metadata store: %w", err)
	}
	if o := b.cluster.own; o != nil && !o.SessionAlive() {
		return errors.New("metadata session lease lost")
	}
	b.health.mu.Lock()
	defer b.health.mu.Unlock()
	if b.health.ml == nil {
		name := "persistent://pulsar/system/healthcheck-" + strings.NewReplacer(":", "_", "/", "_").Replace(b.net.brokerID())
		ml, err := b.deps.OpenLedger(ctx, name)
		if err != nil {
			return fmt.Errorf("open health-check ledger: %w", err)
		}
		b.health.ml = ml
	}
	msg := make([]byte, mledger.EntryHeadroom+16)
	_, _ = rand.Read(msg[mledger.EntryHeadroom:])
	want := bytes.Clone(msg[mledger.EntryHeadroom:])
	type added struct {
		pos position
		err error
	}
	ch := make(chan added, 1)
	b.health.ml.AddEntry(msg, mledger.EntryHeadroom, 1, func(pos position, err error) { ch <- added{pos, err} })
	var a added
	select {
	case a = <-ch:
	case <-ctx.Done():
		return fmt.Errorf("bookie write: %w", ctx.Err())
	}
	if a.err != nil {
		b.health.ml.Close()
		b.health.ml = nil
		return fmt.Errorf("bookie write: %w", a.err)
	}
	got, err := b.health.ml.ReadEntry(a.pos)
	if err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	if !bytes.Equal(got, want) {
		return errors.New("read back a different message")
	}
	return nil
}

// close closes the health-check ledger.
func (h *healthState) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ml != nil {
		h.ml.Close()
		h.ml = nil
	}
}

// Ready reports whether the broker is started and not closing.
func (b *Broker) Ready() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.started && !b.mu.closing && !b.mu.closed
}
