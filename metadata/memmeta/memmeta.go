package memmeta

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/magnetar-mq/magnetar/metadata"
)

var _ metadata.Store = (*Store)(nil)

type node struct {
	value   []byte
	version metadata.Version
}

// Store is a client of an in-memory tree (New makes one, Client another
// of the same tree, as two sessions of one ZooKeeper ensemble). Safe for
// concurrent use.
type Store struct {
	*tree
	closed atomic.Bool
}

// tree is the data every client of a store shares.
type tree struct {
	mu    sync.Mutex
	nodes map[string]*node
	// kids indexes each parent's child names, so Children and Delete do
	// not scan the whole tree (tests hold tens of thousands of nodes).
	kids map[string][]string
	seq  map[string]int64
	// failGet, when set, fails Get and Children of the paths it returns
	// an error for.
	failGet func(p string) error

	// BytesPut counts the value bytes of successful Puts.
	BytesPut atomic.Int64
	// Puts counts successful Puts.
	Puts atomic.Int64
	// FailPuts makes the next n Puts fail with an error.
	FailPuts atomic.Int64
}

// New returns an empty store holding only "/".
func New() *Store {
	return &Store{tree: &tree{nodes: map[string]*node{"/": {}}, kids: map[string][]string{}, seq: map[string]int64{}}}
}

// Client returns another client of s's tree: it sees s's writes and is
// closed on its own.
func (s *Store) Client() *Store { return &Store{tree: s.tree} }

// FailGet makes Get and Children of a path fail with the error fn returns
// for it (nil: succeed), as a real store's error names the path; nil fn
// turns this off.
func (s *Store) FailGet(fn func(p string) error) {
	s.mu.Lock()
	s.failGet = fn
	s.mu.Unlock()
}

// PutBytes returns BytesPut.
func (s *Store) PutBytes() int64 { return s.BytesPut.Load() }

// checkLocked validates p and the client's and ctx's state, and applies
// failGet when get is set.
func (s *Store) checkLocked(ctx context.Context, p string, get bool) error {
	if err := metadata.ValidatePath(p); err != nil {
		return err
	}
	if s.closed.Load() {
		return metadata.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if get && s.failGet != nil {
		return s.failGet(p)
	}
	return nil
}

// addLocked creates p (and its missing parents), indexing each under its
// parent.
func (s *Store) addLocked(p string, value []byte) *node {
	parent := metadata.Parent(p)
	if _, ok := s.nodes[parent]; !ok {
		s.addLocked(parent, nil)
	}
	n := &node{value: slices.Clone(value)}
	s.nodes[p] = n
	s.kids[parent] = append(s.kids[parent], p[strings.LastIndexByte(p, '/')+1:])
	return n
}

// Get implements metadata.Store.
func (s *Store) Get(ctx context.Context, p string) ([]byte, metadata.Version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(ctx, p, true); err != nil {
		return nil, 0, err
	}
	n, ok := s.nodes[p]
	if !ok {
		return nil, 0, metadata.ErrNotFound
	}
	return slices.Clone(n.value), n.version, nil
}

// Put implements metadata.Store.
func (s *Store) Put(ctx context.Context, p string, value []byte, expected metadata.Version) (metadata.Version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(ctx, p, false); err != nil {
		return 0, err
	}
	if len(value) > metadata.MaxValueSize {
		return 0, fmt.Errorf("%w: %d bytes at %s", metadata.ErrTooLarge, len(value), p)
	}
	if s.FailPuts.Load() > 0 && s.FailPuts.Add(-1) >= 0 {
		return 0, fmt.Errorf("memmeta: injected put failure at %s", p)
	}
	n, ok := s.nodes[p]
	switch {
	case expected == metadata.AnyVersion:
	case expected == metadata.NotExists:
		if ok {
			return 0, metadata.ErrExists
		}
	case !ok:
		return 0, metadata.ErrNotFound
	case n.version != expected:
		return 0, metadata.ErrBadVersion
	}
	if !ok {
		n = s.addLocked(p, value)
	} else {
		n.value = slices.Clone(value)
		n.version++
	}
	s.BytesPut.Add(int64(len(value)))
	s.Puts.Add(1)
	return n.version, nil
}

// Delete implements metadata.Store.
func (s *Store) Delete(ctx context.Context, p string, expected metadata.Version) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(ctx, p, false); err != nil {
		return err
	}
	if p == "/" {
		return fmt.Errorf("%w: the root cannot be deleted", metadata.ErrInvalidPath)
	}
	n, ok := s.nodes[p]
	if !ok {
		return metadata.ErrNotFound
	}
	if expected != metadata.AnyVersion && n.version != expected {
		return metadata.ErrBadVersion
	}
	if len(s.kids[p]) > 0 {
		return metadata.ErrNotEmpty
	}
	delete(s.nodes, p)
	parent := metadata.Parent(p)
	k := s.kids[parent]
	if i := slices.Index(k, p[strings.LastIndexByte(p, '/')+1:]); i >= 0 {
		k = slices.Delete(k, i, i+1)
	}
	if len(k) == 0 {
		delete(s.kids, parent)
	} else {
		s.kids[parent] = k
	}
	return nil
}

// Children implements metadata.Store.
func (s *Store) Children(ctx context.Context, p string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(ctx, p, true); err != nil {
		return nil, err
	}
	if _, ok := s.nodes[p]; !ok {
		return nil, metadata.ErrNotFound
	}
	out := slices.Clone(s.kids[p])
	slices.Sort(out)
	return out, nil
}

// Exists implements metadata.Store.
func (s *Store) Exists(ctx context.Context, p string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(ctx, p, false); err != nil {
		return false, err
	}
	_, ok := s.nodes[p]
	return ok, nil
}

// CreateSequential implements metadata.Store: the number after
// parentPrefix counts per prefix and is never reused.
func (s *Store) CreateSequential(ctx context.Context, parentPrefix string, value []byte) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.seq[parentPrefix]
	p := fmt.Sprintf("%s%010d", parentPrefix, n)
	if err := s.checkLocked(ctx, p, false); err != nil {
		return "", err
	}
	if len(value) > metadata.MaxValueSize {
		return "", fmt.Errorf("%w: %d bytes at %s", metadata.ErrTooLarge, len(value), p)
	}
	s.seq[parentPrefix] = n + 1
	s.addLocked(p, value)
	return p, nil
}

// Close implements metadata.Store: the client's later calls answer
// ErrClosed; the tree and its other clients live on.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}
