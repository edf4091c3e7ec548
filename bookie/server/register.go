package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/metadata"
)

// Registration paths (same values as ledger.AvailablePath/ReadOnlyPath,
// which this package cannot import).
const (
	AvailablePath = "/ledgers/available"
	ReadOnlyPath  = "/ledgers/available/readonly"
)

// RegisterOptions configures Register.
type RegisterOptions struct {
	// CheckInterval is how often the bookie's read-only state is checked
	// (default 1 s).
	CheckInterval time.Duration
	// Logger (default: discard).
	Logger *slog.Logger
}

// Registration keeps a bookie's ephemeral node in the metadata store:
// /ledgers/available/<id> while writable, /ledgers/available/readonly/<id>
// while read-only, switching as the state changes. The node goes away
// with the store's session (Close of the store, process death, session
// expiry; a ZooKeeper store re-creates it on its new session).
type Registration struct {
	store metadata.Store
	eph   metadata.Ephemeraler
	id    string
	b     *bookie.Bookie
	opts  RegisterOptions

	mu       sync.Mutex
	readOnly bool
	cur      string // path currently registered

	stop chan struct{}
	wg   sync.WaitGroup
}

// Register registers bookie b under id (its address) and keeps the
// registration in step with its read-only state until Close. The store
// must implement metadata.Ephemeraler.
func Register(ctx context.Context, store metadata.Store, id string, b *bookie.Bookie, opts RegisterOptions) (*Registration, error) {
	eph, ok := store.(metadata.Ephemeraler)
	if !ok {
		return nil, fmt.Errorf("server: metadata store %T has no ephemeral nodes", store)
	}
	if opts.CheckInterval == 0 {
		opts.CheckInterval = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Registration{store: store, eph: eph, id: id, b: b, opts: opts, stop: make(chan struct{})}
	if err := r.sync(ctx); err != nil {
		return nil, err
	}
	r.wg.Add(1)
	go r.loop()
	return r, nil
}

// Path returns the node currently registered.
func (r *Registration) Path() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
}

// Sync re-checks the bookie's state now and moves the node if it changed.
func (r *Registration) Sync(ctx context.Context) error { return r.sync(ctx) }

func (r *Registration) sync(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ro := r.b.IsReadOnly()
	want := AvailablePath + "/" + r.id
	if ro {
		want = ReadOnlyPath + "/" + r.id
	}
	if want == r.cur {
		return nil
	}
	val, _ := json.Marshal(map[string]any{"address": r.id, "readOnly": ro})
	if err := r.eph.PutEphemeral(ctx, want, val); err != nil {
		return fmt.Errorf("server: registering %s: %w", want, err)
	}
	if r.cur != "" {
		if err := r.store.Delete(ctx, r.cur, metadata.AnyVersion); err != nil && !errors.Is(err, metadata.ErrNotFound) {
			r.opts.Logger.Warn("server: removing old registration", "path", r.cur, "err", err)
		}
	}
	r.opts.Logger.Info("server: registered", "path", want)
	r.cur, r.readOnly = want, ro
	return nil
}

func (r *Registration) loop() {
	defer r.wg.Done()
	t := time.NewTicker(r.opts.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := r.sync(ctx); err != nil {
				r.opts.Logger.Warn("server: registration", "err", err)
			}
			cancel()
		}
	}
}

// Close stops tracking and removes the node.
func (r *Registration) Close() error {
	close(r.stop)
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := r.store.Delete(ctx, r.cur, metadata.AnyVersion)
	r.cur = ""
	if errors.Is(err, metadata.ErrNotFound) || errors.Is(err, metadata.ErrClosed) {
		err = nil
	}
	return err
}
