package brokeradmin

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/mledger"
)

// Health is the broker's health check, as Pulsar's
// /admin/v2/brokers/health: a broker feature (registered with
// EnableHealth before Start) holding the health-check ledger, a managed
// ledger of its own (one per broker id, so no other broker opens it),
// opened on the first check and closed with the broker.
type Health struct {
	b  *broker.Broker
	mu sync.Mutex
	ml storage.ManagedLedger
}

// EnableHealth registers b's health check (once: a second call finds
// the first's). It must run before b.Start (broker.ErrStarted).
func EnableHealth(b *broker.Broker) error {
	if healthOf(b) != nil {
		return nil
	}
	return b.Use(&Health{b: b})
}

// healthOf returns b's health check (nil: not enabled).
func healthOf(b *broker.Broker) *Health {
	for _, f := range b.Features() {
		if h, ok := f.(*Health); ok {
			return h
		}
	}
	return nil
}

// Name implements broker.Feature.
func (h *Health) Name() string { return "health check" }

// Start implements broker.Lifecycle: the ledger opens on the first check.
func (h *Health) Start(context.Context) error { return nil }

// Close implements broker.Lifecycle: it closes the health-check ledger.
func (h *Health) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ml != nil {
		h.ml.Close()
		h.ml = nil
	}
}

// Check is a real check: the metadata store answers (and, in a cluster,
// the broker's session lease holds), and a message written through the
// health-check ledger to the bookies reads back equal. The error names
// the failing step.
func (h *Health) Check(ctx context.Context) error {
	b := h.b
	if _, err := b.Metadata().Exists(ctx, "/"); err != nil {
		return fmt.Errorf("metadata store: %w", err)
	}
	if o := b.Ownership(); o != nil && !o.SessionAlive() {
		return errors.New("metadata session lease lost")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ml == nil {
		name := "persistent://pulsar/system/healthcheck-" + strings.NewReplacer(":", "_", "/", "_").Replace(b.URLs().BrokerID)
		ml, err := b.OpenLedger(ctx, name)
		if err != nil {
			return fmt.Errorf("open health-check ledger: %w", err)
		}
		h.ml = ml
	}
	msg := make([]byte, mledger.EntryHeadroom+16)
	_, _ = rand.Read(msg[mledger.EntryHeadroom:])
	want := bytes.Clone(msg[mledger.EntryHeadroom:])
	type added struct {
		pos storage.Position
		err error
	}
	ch := make(chan added, 1)
	h.ml.AddEntry(msg, mledger.EntryHeadroom, 1, func(pos storage.Position, err error) { ch <- added{pos, err} })
	var a added
	select {
	case a = <-ch:
	case <-ctx.Done():
		return fmt.Errorf("bookie write: %w", ctx.Err())
	}
	if a.err != nil {
		h.ml.Close()
		h.ml = nil
		return fmt.Errorf("bookie write: %w", a.err)
	}
	got, err := h.ml.ReadEntry(a.pos)
	if err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	if !bytes.Equal(got, want) {
		return errors.New("read back a different message")
	}
	return nil
}
