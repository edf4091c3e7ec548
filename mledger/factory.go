package mledger

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/internal/shrink"
)

// Factory opens managed ledgers over shared stores and a broker-wide entry
// cache, and runs the background loop (cursor flushes, time-based rollover,
// trimming, cache eviction) for all of them.
//
// Safe for concurrent use.
type Factory struct {
	opts  Options
	cache *Cache
	log   *slog.Logger

	mu      sync.Mutex
	mls     map[string]*ManagedLedger
	shrink  shrink.Tracker           // deletes from mls (internal/shrink)
	opening map[string]chan struct{} // closed when that Open finishes
	configs map[Config]*Config       // the managed ledgers' configs, shared (config)
	closed  bool

	stop chan struct{}
	wg   sync.WaitGroup
}

// NewFactory validates opts and starts the background loop (unless
// TickInterval is negative).
func NewFactory(opts Options) (*Factory, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	f := &Factory{
		opts:    opts,
		cache:   newCache(opts.CacheSize, opts.CacheEvictionWatermark),
		log:     opts.Logger,
		mls:     map[string]*ManagedLedger{},
		opening: map[string]chan struct{}{},
		configs: map[Config]*Config{},
		stop:    make(chan struct{}),
	}
	if opts.TickInterval > 0 {
		f.wg.Add(1)
		go f.loop()
	}
	return f, nil
}

// Cache returns the shared entry cache.
func (f *Factory) Cache() *Cache { return f.cache }

func (f *Factory) loop() {
	defer f.wg.Done()
	t := time.NewTicker(f.opts.TickInterval)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			f.Tick(ctx)
			cancel()
		}
	}
}

// Tick runs the periodic work once for every open managed ledger.
func (f *Factory) Tick(ctx context.Context) {
	f.mu.Lock()
	mls := make([]*ManagedLedger, 0, len(f.mls))
	for _, ml := range f.mls {
		mls = append(mls, ml)
	}
	f.mu.Unlock()
	now := f.opts.Now()
	for _, ml := range mls {
		ml.tick(ctx, now)
	}
	f.cache.EvictOlderThan(now, f.opts.CacheEvictionAge)
}

// Open opens (recovering or creating) the managed ledger name, or returns
// the instance already open in this factory.
func (f *Factory) Open(ctx context.Context, name string, cfg Config) (*ManagedLedger, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	for {
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			return nil, ErrClosed
		}
		if ml := f.mls[name]; ml != nil {
			f.mu.Unlock()
			return ml, nil
		}
		wait, busy := f.opening[name]
		if !busy {
			break
		}
		f.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	done := make(chan struct{})
	f.opening[name] = done
	f.mu.Unlock()
	ml, err := openManagedLedger(ctx, f, name, cfg)
	f.mu.Lock()
	delete(f.opening, name)
	close(done)
	if err == nil && f.closed {
		f.mu.Unlock()
		return nil, errors.Join(ErrClosed, ml.Close(ctx))
	}
	if err == nil {
		f.mls[name] = ml
	}
	f.mu.Unlock()
	return ml, err
}

func (f *Factory) forget(ml *ManagedLedger) {
	f.mu.Lock()
	if f.mls[ml.name] == ml {
		delete(f.mls, ml.name)
		// Rebuilt once mostly deleted: a map keeps its largest room
		// (a million idle topics unloaded).
		if f.shrink.Deleted(len(f.mls)) {
			f.mls = shrink.Rebuild(f.mls)
		}
	}
	f.mu.Unlock()
}

// Close closes every open managed ledger (flushing cursors) and stops the
// background loop. The stores are not closed.
func (f *Factory) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	mls := make([]*ManagedLedger, 0, len(f.mls))
	for _, ml := range f.mls {
		mls = append(mls, ml)
	}
	f.mu.Unlock()
	close(f.stop)
	f.wg.Wait()
	var errs []error
	for _, ml := range mls {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		errs = append(errs, ml.Close(ctx))
		cancel()
	}
	return errors.Join(errs...)
}

// maxSharedConfigs bounds Factory.configs; beyond it each managed ledger
// has its own copy.
const maxSharedConfigs = 1024

// config returns a Config equal to cfg, shared with the other managed
// ledgers opened with the same one (most topics of a namespace are):
// 216 bytes a topic otherwise. A config whose offloader is not a pointer
// (whose equality might panic) is not shared.
func (f *Factory) config(cfg Config) *Config {
	if o := cfg.Offload.Offloader; o != nil && reflect.TypeOf(o).Kind() != reflect.Pointer {
		return &cfg
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.configs[cfg]; c != nil {
		return c
	}
	c := &cfg
	if len(f.configs) < maxSharedConfigs {
		f.configs[cfg] = c
	}
	return c
}
