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
	// Token identifies the bookie's storage (Cookie.Token) in its
	// registration node. A node for this id that another session left
	// with the same token is this bookie's own, from before a crash:
	// it is reclaimed at once. Without a token (or with another one)
	// Register waits for the node to go, as BookKeeper's bookie does.
	Token string
	// StaleWait bounds that wait (default: the store's session timeout
	// plus 2 s, or 12 s for a store without sessions).
	StaleWait time.Duration
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
	if opts.StaleWait == 0 {
		opts.StaleWait = 12 * time.Second
		if ss, ok := store.(metadata.Sessioner); ok {
			opts.StaleWait = ss.SessionTimeout() + 2*time.Second
		}
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
	val, _ := json.Marshal(regNode{Address: r.id, ReadOnly: ro, Token: r.opts.Token})
	err := r.eph.PutEphemeral(ctx, want, val)
	if errors.Is(err, metadata.ErrExists) {
		err = r.replaceStale(ctx, want, val)
	}
	if err != nil {
		return fmt.Errorf("server: registering %s: %w", want, err)
	}
	if r.cur != "" {
		if err := r.store.Delete(ctx, r.cur, metadata.AnyVersion); err != nil && !errors.Is(err, metadata.ErrNotFound) {
			r.opts.Logger.Warn("server: removing old registration", "path", r.cur, "err", err)
		}
	}
	if other := r.otherPath(want); r.cur != other {
		r.dropStale(ctx, other)
	}
	r.opts.Logger.Info("server: registered", "path", want)
	r.cur, r.readOnly = want, ro
	return nil
}

// regNode is the JSON of a registration node.
type regNode struct {
	Address  string `json:"address"`
	ReadOnly bool   `json:"readOnly"`
	Token    string `json:"token,omitempty"`
}

// replaceStale registers path (value val) over a node another session
// holds. A bookie restarted right after a crash finds the node of its
// previous session, which lives until the server expires that session:
// with the same token it is this bookie's own and is deleted now (no
// other process can serve this id: the bookie holds its port and its
// directories); otherwise wait for the node to go (session expiry) up to
// StaleWait, as BookKeeper's bookie does, then fail.
func (r *Registration) replaceStale(ctx context.Context, path string, val []byte) error {
	log := r.opts.Logger
	for {
		old, ver, err := r.store.Get(ctx, path)
		if errors.Is(err, metadata.ErrNotFound) {
			return r.eph.PutEphemeral(ctx, path, val)
		}
		if err != nil {
			return err
		}
		var n regNode
		_ = json.Unmarshal(old, &n)
		if r.opts.Token == "" || n.Token != r.opts.Token {
			break
		}
		log.Info("server: reclaiming the registration left by this bookie's previous session", "path", path)
		err = r.store.Delete(ctx, path, ver)
		if err != nil && !errors.Is(err, metadata.ErrNotFound) && !errors.Is(err, metadata.ErrBadVersion) {
			return err
		}
		if err = r.eph.PutEphemeral(ctx, path, val); !errors.Is(err, metadata.ErrExists) {
			return err
		}
		// Re-created meanwhile (by whom?): look again.
	}
	log.Info("server: a previous registration exists; waiting for its session to expire", "path", path, "for", r.opts.StaleWait)
	wctx, cancel := context.WithTimeout(ctx, r.opts.StaleWait)
	defer cancel()
	gone := make(chan struct{}, 1)
	if w, ok := r.store.(metadata.Watcher); ok {
		if err := w.Watch(wctx, path, func(ev metadata.Event) {
			if ev.Type == metadata.EventDeleted {
				select {
				case gone <- struct{}{}:
				default:
				}
			}
		}); err != nil {
			return err
		}
	}
	poll := time.NewTicker(time.Second) // a watch can miss a delete while it is being set
	defer poll.Stop()
	for {
		err := r.eph.PutEphemeral(wctx, path, val)
		if !errors.Is(err, metadata.ErrExists) {
			if err == nil {
				log.Info("server: the previous registration expired", "path", path)
			}
			return err
		}
		select {
		case <-gone:
		case <-poll.C:
		case <-wctx.Done():
			return fmt.Errorf("%w: held by another session for %v (another bookie with this id?)", metadata.ErrExists, r.opts.StaleWait)
		}
	}
}

// otherPath is the registration path for the other state than path's.
func (r *Registration) otherPath(path string) string {
	if path == ReadOnlyPath+"/"+r.id {
		return AvailablePath + "/" + r.id
	}
	return ReadOnlyPath + "/" + r.id
}

// dropStale deletes the node at path if this bookie's previous session
// left it (its token): a bookie that crashed while read-only and starts
// writable (or the reverse) is not listed as both until that session
// expires.
func (r *Registration) dropStale(ctx context.Context, path string) {
	if r.opts.Token == "" {
		return
	}
	old, ver, err := r.store.Get(ctx, path)
	if err != nil {
		return
	}
	var n regNode
	if json.Unmarshal(old, &n) != nil || n.Token != r.opts.Token {
		return
	}
	if err := r.store.Delete(ctx, path, ver); err == nil {
		r.opts.Logger.Info("server: removed the registration left by this bookie's previous session", "path", path)
	}
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
