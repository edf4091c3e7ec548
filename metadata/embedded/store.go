package embedded

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"

	"github.com/magnetar-mq/magnetar/metadata"
)

// Store is one handle (one session) on an embedded metadata database. It is
// safe for concurrent use.
type Store struct {
	db      *sharedDB
	session uint64

	closed  atomic.Bool
	closing chan struct{} // closed by Close; stops the watch goroutines
	wg      sync.WaitGroup
	closeMu sync.Mutex // serializes Close
	// life is held shared by PutEphemeral and Watch from their closed check
	// until their ephemeral node exists or their goroutine is counted in
	// wg, and exclusively by Close while it sets closed: no ephemeral node
	// is created after Close dropped the session's ones, and no wg.Add
	// races with wg.Wait.
	life sync.RWMutex
}

var (
	_ metadata.Store       = (*Store)(nil)
	_ metadata.Ephemeraler = (*Store)(nil)
	_ metadata.Watcher     = (*Store)(nil)
)

// Open opens (creating if needed) the database file at path and returns a
// new handle with its own session. Handles of one process on the same file
// share the database, its writer and its watches; the first one deletes the
// ephemeral nodes a previous process left behind.
func Open(path string, opts Options) (*Store, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	d, err := acquire(path, &opts)
	if err != nil {
		return nil, err
	}
	return &Store{db: d, session: d.nextID.Add(1), closing: make(chan struct{})}, nil
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
	var (
		val []byte
		ver metadata.Version
	)
	err := s.db.bolt.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketNodes).Get(nodeKey(p))
		if v == nil {
			return fmt.Errorf("%w: %s", metadata.ErrNotFound, p)
		}
		r, err := decodeRecord(v)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		val, ver = bytes.Clone(r.value), r.version
		if val == nil {
			val = []byte{}
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return val, ver, nil
}

// Exists implements metadata.Store.
func (s *Store) Exists(ctx context.Context, p string) (bool, error) {
	if err := s.check(ctx, p); err != nil {
		return false, err
	}
	var ok bool
	err := s.db.bolt.View(func(tx *bolt.Tx) error {
		ok = tx.Bucket(bucketNodes).Get(nodeKey(p)) != nil
		return nil
	})
	return ok, err
}

// Children implements metadata.Store.
func (s *Store) Children(ctx context.Context, p string) ([]string, error) {
	if err := s.check(ctx, p); err != nil {
		return nil, err
	}
	var names []string
	err := s.db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketNodes)
		if b.Get(nodeKey(p)) == nil {
			return fmt.Errorf("%w: %s", metadata.ErrNotFound, p)
		}
		prefix := childPrefix(p)
		names = []string{}
		c := b.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			names = append(names, string(k[len(prefix):]))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return names, nil
}

// Put implements metadata.Store.
func (s *Store) Put(ctx context.Context, p string, value []byte, expected metadata.Version) (metadata.Version, error) {
	if err := s.check(ctx, p); err != nil {
		return 0, err
	}
	if expected < metadata.NotExists {
		return 0, fmt.Errorf("%w: %s: expected version %d", metadata.ErrBadVersion, p, expected)
	}
	if len(value) > metadata.MaxValueSize {
		return 0, fmt.Errorf("%w: %s: %d bytes", metadata.ErrTooLarge, p, len(value))
	}
	o := &op{kind: opPut, path: p, value: value, expected: expected}
	if err := s.db.submit(ctx, o); err != nil {
		return 0, err
	}
	return o.version, nil
}

// Delete implements metadata.Store.
func (s *Store) Delete(ctx context.Context, p string, expected metadata.Version) error {
	if err := s.check(ctx, p); err != nil {
		return err
	}
	if p == "/" {
		return fmt.Errorf("%w: cannot delete /", metadata.ErrInvalidPath)
	}
	if expected < metadata.AnyVersion {
		return fmt.Errorf("%w: %s: expected version %d", metadata.ErrBadVersion, p, expected)
	}
	return s.db.submit(ctx, &op{kind: opDelete, path: p, expected: expected})
}

// CreateSequential implements metadata.Store. Numbers come from a counter
// kept in the parent's record, starting at 0; they are never reused, even
// after the child is deleted.
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
		return "", fmt.Errorf("%w: %s: %d bytes", metadata.ErrTooLarge, parentPrefix, len(value))
	}
	o := &op{kind: opSequential, path: parent, prefix: prefix, value: value}
	if err := s.db.submit(ctx, o); err != nil {
		return "", err
	}
	return o.created, nil
}

// PutEphemeral implements metadata.Ephemeraler. The node lives until
// Delete, Close of this handle, or the end of the process (the next Open
// removes it). Calling it again on a node of this handle replaces the value;
// a node of another handle, or a persistent one, gives ErrExists.
func (s *Store) PutEphemeral(ctx context.Context, p string, value []byte) error {
	s.life.RLock()
	defer s.life.RUnlock()
	if err := s.check(ctx, p); err != nil {
		return err
	}
	if p == "/" {
		return fmt.Errorf("%w: / cannot be ephemeral", metadata.ErrInvalidPath)
	}
	if len(value) > metadata.MaxValueSize {
		return fmt.Errorf("%w: %s: %d bytes", metadata.ErrTooLarge, p, len(value))
	}
	return s.db.submit(ctx, &op{kind: opPutEphemeral, path: p, value: value, session: s.session})
}

// Watch implements metadata.Watcher. Every committed change is delivered,
// none coalesced; fn runs on a goroutine of its own and must not call Close.
// Watching a path that does not exist is allowed (EventCreated follows).
func (s *Store) Watch(ctx context.Context, p string, fn func(metadata.Event)) error {
	s.life.RLock()
	defer s.life.RUnlock()
	if err := s.check(ctx, p); err != nil {
		return err
	}
	w := &watch{path: p, fn: fn, signal: make(chan struct{}, 1)}
	s.db.hub.add(w)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.db.hub.remove(w)
		w.run(ctx, s.closing)
	}()
	return nil
}

// Close deletes this handle's ephemeral nodes, stops its watches and, for
// the last handle of the file, closes the database. Calling it again returns
// nil.
func (s *Store) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed.Load() {
		return nil
	}
	s.life.Lock()
	s.closed.Store(true)
	s.life.Unlock()
	err := s.db.submit(context.Background(), &op{kind: opDropSession, session: s.session})
	close(s.closing)
	s.wg.Wait()
	if rerr := s.db.release(); err == nil {
		err = rerr
	}
	return err
}
