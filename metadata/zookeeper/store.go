package zookeeper

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/magnetar-mq/magnetar/metadata"
)

// Store is a metadata.Store on a ZooKeeper ensemble: one client session.
// It is safe for concurrent use.
type Store struct {
	conn    *zk.Conn
	chroot  string // "" or a path every node path is prefixed with
	timeout time.Duration
	log     *slog.Logger
	acl     []zk.ACL

	sessCh chan struct{} // capacity 1: a session state change to look at

	closed  atomic.Bool
	closing chan struct{} // closed by Close; stops monitor and watches
	wg      sync.WaitGroup
	closeMu sync.Mutex // serializes Close
	// life is held shared by PutEphemeral and Watch from their closed check
	// until the node is tracked or the goroutine counted, exclusively by
	// Close while it sets closed.
	life sync.RWMutex

	ephMu      sync.Mutex
	ephemerals map[string][]byte // path -> value; protected by ephMu

	genMu sync.Mutex
	gen   uint64        // protected by genMu: sessions replaced after expiry
	genCh chan struct{} // protected by genMu: closed when gen changes
}

var (
	_ metadata.Store       = (*Store)(nil)
	_ metadata.Ephemeraler = (*Store)(nil)
	_ metadata.Watcher     = (*Store)(nil)
	_ metadata.Sessioner   = (*Store)(nil)
)

// Open connects to the ensemble named by url ("zk://host:port[,...]
// [/chroot]", see ParseURL), waits for a session and creates the chroot if
// it is missing. Every path the Store is given is relative to the chroot.
func Open(url string, opts Options) (*Store, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	servers, chroot, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	s := &Store{
		chroot:     chroot,
		timeout:    opts.SessionTimeout,
		log:        opts.Logger,
		acl:        zk.WorldACL(zk.PermAll),
		sessCh:     make(chan struct{}, 1),
		closing:    make(chan struct{}),
		ephemerals: make(map[string][]byte),
		genCh:      make(chan struct{}),
	}
	dialer := opts.Dialer
	if dialer == nil {
		dialer = net.DialTimeout
	}
	n := time.Duration(len(servers))
	limit := max(opts.SessionTimeout/n, time.Second)
	handshake := max(opts.SessionTimeout/(3*n), time.Second)
	conn, _, err := zk.Connect(servers, opts.SessionTimeout,
		zk.WithHostProvider(&hostProvider{}),
		zk.WithDialer(clampDialer(dialer, limit, handshake)),
		zk.WithLogger(zkLogger{opts.Logger}),
		zk.WithLogInfo(false),
		zk.WithEventCallback(s.onEvent))
	if err != nil {
		return nil, fmt.Errorf("zookeeper: connect %s: %w", url, err)
	}
	s.conn = conn
	ready := make(chan struct{})
	s.wg.Add(1)
	go s.monitor(ready)

	timer := time.NewTimer(opts.ConnectTimeout)
	defer timer.Stop()
	select {
	case <-ready:
	case <-timer.C:
		s.Close()
		return nil, fmt.Errorf("zookeeper: no session with %v within %v: %w", servers, opts.ConnectTimeout, metadata.ErrUnavailable)
	}
	if chroot != "" {
		if err := s.createPath(chroot, 0); err != nil {
			err = fmt.Errorf("zookeeper: create chroot: %w", s.mapErr(err, chroot))
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// full maps a store path to the ZooKeeper path under the chroot.
func (s *Store) full(p string) string {
	switch {
	case s.chroot == "":
		return p
	case p == "/":
		return s.chroot
	}
	return s.chroot + p
}

// strip maps a ZooKeeper path back to a store path.
func (s *Store) strip(full string) string {
	if s.chroot == "" {
		return full
	}
	if full == s.chroot {
		return "/"
	}
	return full[len(s.chroot):]
}

func (s *Store) check(ctx context.Context, p string) error {
	if s.closed.Load() {
		return metadata.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return metadata.ValidatePath(p)
}

// Get implements metadata.Store.
func (s *Store) Get(ctx context.Context, p string) ([]byte, metadata.Version, error) {
	if err := s.check(ctx, p); err != nil {
		return nil, 0, err
	}
	data, st, err := s.conn.Get(s.full(p))
	if err != nil {
		return nil, 0, s.mapErr(err, p)
	}
	if data == nil {
		data = []byte{}
	}
	return data, metadata.Version(st.Version), nil
}

// Exists implements metadata.Store.
func (s *Store) Exists(ctx context.Context, p string) (bool, error) {
	if err := s.check(ctx, p); err != nil {
		return false, err
	}
	ok, _, err := s.conn.Exists(s.full(p))
	return ok, s.mapErr(err, p)
}

// Children implements metadata.Store.
func (s *Store) Children(ctx context.Context, p string) ([]string, error) {
	if err := s.check(ctx, p); err != nil {
		return nil, err
	}
	names, _, err := s.conn.Children(s.full(p))
	if err != nil {
		return nil, s.mapErr(err, p)
	}
	if names == nil {
		names = []string{}
	}
	slices.Sort(names)
	return names, nil
}

// Put implements metadata.Store. Versions are ZooKeeper's data versions
// (int32 on the server); an expected version above math.MaxInt32 can never
// match.
func (s *Store) Put(ctx context.Context, p string, value []byte, expected metadata.Version) (metadata.Version, error) {
	if err := s.check(ctx, p); err != nil {
		return 0, err
	}
	if len(value) > metadata.MaxValueSize {
		return 0, fmt.Errorf("zookeeper: %s: %w: %d bytes", p, metadata.ErrTooLarge, len(value))
	}
	full := s.full(p)
	switch {
	case expected == metadata.NotExists:
		_, err := s.create(full, value, zk.FlagPersistent)
		return 0, s.mapErr(err, p)
	case expected == metadata.AnyVersion:
		// Set if present, else create; a concurrent create or delete sends
		// us round again.
		for attempt := 0; ; attempt++ {
			st, err := s.conn.Set(full, value, -1)
			if err == nil {
				return metadata.Version(st.Version), nil
			}
			if !errors.Is(err, zk.ErrNoNode) || attempt == 10 {
				return 0, s.mapErr(err, p)
			}
			_, err = s.create(full, value, zk.FlagPersistent)
			if err == nil {
				return 0, nil
			}
			if !errors.Is(err, zk.ErrNodeExists) {
				return 0, s.mapErr(err, p)
			}
		}
	case expected < 0 || expected > math.MaxInt32:
		return 0, fmt.Errorf("zookeeper: %s: %w: expected version %d", p, metadata.ErrBadVersion, expected)
	}
	st, err := s.conn.Set(full, value, int32(expected))
	if err != nil {
		return 0, s.mapErr(err, p)
	}
	return metadata.Version(st.Version), nil
}

// create creates full with flags, creating missing parents, and returns the
// created path (with the sequence number for sequential nodes).
func (s *Store) create(full string, value []byte, flags int32) (string, error) {
	for attempt := 0; ; attempt++ {
		name, err := s.conn.Create(full, value, flags, s.acl)
		if !errors.Is(err, zk.ErrNoNode) || attempt == 3 {
			return name, err
		}
		if err := s.createPath(metadata.Parent(full), len(s.chroot)); err != nil {
			return "", err
		}
	}
}

// createPath creates full and its missing ancestors as empty persistent
// nodes, except the ancestors no longer than floor bytes (known to exist:
// the chroot).
func (s *Store) createPath(full string, floor int) error {
	for _, p := range append(metadata.Ancestors(full), full) {
		if len(p) <= floor || p == "/" {
			continue
		}
		if _, err := s.conn.Create(p, nil, zk.FlagPersistent, s.acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// Delete implements metadata.Store. Deleting an ephemeral node of this
// session also stops its re-creation after a session expiry.
func (s *Store) Delete(ctx context.Context, p string, expected metadata.Version) error {
	if err := s.check(ctx, p); err != nil {
		return err
	}
	if p == "/" {
		return fmt.Errorf("%w: cannot delete /", metadata.ErrInvalidPath)
	}
	v := int32(-1)
	switch {
	case expected == metadata.AnyVersion:
	case expected < 0 || expected > math.MaxInt32:
		return fmt.Errorf("zookeeper: %s: %w: expected version %d", p, metadata.ErrBadVersion, expected)
	default:
		v = int32(expected)
	}
	if err := s.conn.Delete(s.full(p), v); err != nil {
		return s.mapErr(err, p)
	}
	s.ephMu.Lock()
	delete(s.ephemerals, p)
	s.ephMu.Unlock()
	return nil
}

// CreateSequential implements metadata.Store with ZooKeeper sequential
// nodes: the number is the parent's child-change counter (cversion), so
// it starts at 0 under a new parent, only grows, and is never reused.
func (s *Store) CreateSequential(ctx context.Context, parentPrefix string, value []byte) (string, error) {
	if s.closed.Load() {
		return "", metadata.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	parent, prefix, err := metadata.SplitSequential(parentPrefix)
	if err != nil {
		return "", err
	}
	if len(value) > metadata.MaxValueSize {
		return "", fmt.Errorf("zookeeper: %s: %w: %d bytes", parentPrefix, metadata.ErrTooLarge, len(value))
	}
	full := s.full(parent) + "/" + prefix
	if parent == "/" {
		full = s.chroot + "/" + prefix
	}
	name, err := s.create(full, value, zk.FlagSequence)
	if err != nil {
		return "", s.mapErr(err, parentPrefix)
	}
	return s.strip(name), nil
}

// PutEphemeral implements metadata.Ephemeraler: a ZooKeeper ephemeral node,
// remembered so that it is re-created on the new session after an expiry.
// Calling it again on a node of this session replaces the value (one more
// version); a node of another session, or a persistent one, gives
// ErrExists.
func (s *Store) PutEphemeral(ctx context.Context, p string, value []byte) error {
	s.life.RLock()
	defer s.life.RUnlock()
	if err := s.checkEphemeral(ctx, p, value); err != nil {
		return err
	}
	s.ephMu.Lock()
	defer s.ephMu.Unlock()
	if err := s.putEphemeralLocked(s.full(p), value); err != nil {
		return s.mapErr(err, p)
	}
	s.ephemerals[p] = bytes.Clone(value)
	return nil
}

// checkEphemeral validates an ephemeral node's path and value.
func (s *Store) checkEphemeral(ctx context.Context, p string, value []byte) error {
	if err := s.check(ctx, p); err != nil {
		return err
	}
	if p == "/" {
		return fmt.Errorf("%w: / cannot be ephemeral", metadata.ErrInvalidPath)
	}
	if len(value) > metadata.MaxValueSize {
		return fmt.Errorf("zookeeper: %s: %w: %d bytes", p, metadata.ErrTooLarge, len(value))
	}
	return nil
}

// putEphemeralLocked creates full as an ephemeral node of the current
// session, or updates it if the current session already owns it.
func (s *Store) putEphemeralLocked(full string, value []byte) error {
	_, err := s.create(full, value, zk.FlagEphemeral)
	if !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	_, st, err := s.conn.Get(full)
	if err != nil {
		return err
	}
	if st.EphemeralOwner == 0 || st.EphemeralOwner != s.conn.SessionID() {
		return zk.ErrNodeExists
	}
	_, err = s.conn.Set(full, value, st.Version)
	return err
}

// SessionID implements metadata.Sessioner: the ZooKeeper session id, 0
// while there is no session.
func (s *Store) SessionID() int64 {
	if s.conn.State() != zk.StateHasSession {
		return 0
	}
	return s.conn.SessionID()
}

// SessionTimeout implements metadata.Sessioner (Options.SessionTimeout).
func (s *Store) SessionTimeout() time.Duration { return s.timeout }

// CreateEphemeral implements metadata.Sessioner: a ZooKeeper ephemeral node
// that is not tracked, so never re-created after a session expiry.
func (s *Store) CreateEphemeral(ctx context.Context, p string, value []byte) error {
	s.life.RLock()
	defer s.life.RUnlock()
	if err := s.checkEphemeral(ctx, p, value); err != nil {
		return err
	}
	if _, err := s.create(s.full(p), value, zk.FlagEphemeral); err != nil {
		return s.mapErr(err, p)
	}
	return nil
}

// Close ends the session (the server deletes its ephemeral nodes before it
// answers), stops the watches and waits for every goroutine of the Store.
// Calling it again returns nil.
func (s *Store) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed.Load() {
		return nil
	}
	s.life.Lock()
	s.closed.Store(true)
	s.life.Unlock()
	close(s.closing)
	s.conn.Close()
	s.wg.Wait()
	return nil
}
