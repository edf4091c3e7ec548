// Package memmeta is a minimal in-memory metadata.Store for mledger tests
// (no watches, no ephemerals). It counts bytes written so tests can measure
// metadata traffic.
package memmeta

import (
	"context"
	"fmt"
	"sort"
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

// Store is an in-memory metadata.Store. Safe for concurrent use.
type Store struct {
	mu     sync.Mutex
	nodes  map[string]*node
	seq    map[string]int64
	closed bool

	// BytesPut counts the value bytes of successful Puts.
	BytesPut atomic.Int64
	// Puts counts successful Puts.
	Puts atomic.Int64
	// FailPuts makes the next n Puts fail with an error.
	FailPuts atomic.Int64
}

// New returns an empty store holding only "/".
func New() *Store {
	return &Store{nodes: map[string]*node{"/": {}}, seq: map[string]int64{}}
}

func parent(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

func (s *Store) ensureParentsLocked(p string) {
	for q := parent(p); q != "/"; q = parent(q) {
		if _, ok := s.nodes[q]; !ok {
			s.nodes[q] = &node{}
		}
	}
}

// Get implements metadata.Store.
func (s *Store) Get(_ context.Context, path string) ([]byte, metadata.Version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, 0, metadata.ErrClosed
	}
	n, ok := s.nodes[path]
	if !ok {
		return nil, 0, metadata.ErrNotFound
	}
	return append([]byte(nil), n.value...), n.version, nil
}

// Put implements metadata.Store.
func (s *Store) Put(_ context.Context, path string, value []byte, expected metadata.Version) (metadata.Version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, metadata.ErrClosed
	}
	if s.FailPuts.Load() > 0 && s.FailPuts.Add(-1) >= 0 {
		return 0, fmt.Errorf("memmeta: injected put failure")
	}
	n, ok := s.nodes[path]
	switch {
	case expected == metadata.AnyVersion:
	case expected == metadata.NotExists:
		if ok {
			return 0, metadata.ErrExists
		}
	default:
		if !ok {
			return 0, metadata.ErrNotFound
		}
		if n.version != expected {
			return 0, metadata.ErrBadVersion
		}
	}
	v := append([]byte(nil), value...)
	if !ok {
		s.ensureParentsLocked(path)
		s.nodes[path] = &node{value: v}
	} else {
		n.value = v
		n.version++
	}
	s.BytesPut.Add(int64(len(value)))
	s.Puts.Add(1)
	return s.nodes[path].version, nil
}

// Delete implements metadata.Store.
func (s *Store) Delete(_ context.Context, path string, expected metadata.Version) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return metadata.ErrClosed
	}
	n, ok := s.nodes[path]
	if !ok {
		return metadata.ErrNotFound
	}
	if expected != metadata.AnyVersion && n.version != expected {
		return metadata.ErrBadVersion
	}
	prefix := path + "/"
	for k := range s.nodes {
		if strings.HasPrefix(k, prefix) {
			return metadata.ErrNotEmpty
		}
	}
	delete(s.nodes, path)
	return nil
}

// Children implements metadata.Store.
func (s *Store) Children(_ context.Context, path string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, metadata.ErrClosed
	}
	if _, ok := s.nodes[path]; !ok {
		return nil, metadata.ErrNotFound
	}
	prefix := path + "/"
	if path == "/" {
		prefix = "/"
	}
	var out []string
	for k := range s.nodes {
		if k != "/" && strings.HasPrefix(k, prefix) && !strings.Contains(k[len(prefix):], "/") {
			out = append(out, k[len(prefix):])
		}
	}
	sort.Strings(out)
	return out, nil
}

// Exists implements metadata.Store.
func (s *Store) Exists(_ context.Context, path string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, metadata.ErrClosed
	}
	_, ok := s.nodes[path]
	return ok, nil
}

// CreateSequential implements metadata.Store.
func (s *Store) CreateSequential(_ context.Context, parentPrefix string, value []byte) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", metadata.ErrClosed
	}
	n := s.seq[parentPrefix]
	s.seq[parentPrefix] = n + 1
	p := fmt.Sprintf("%s%010d", parentPrefix, n)
	s.ensureParentsLocked(p)
	s.nodes[p] = &node{value: append([]byte(nil), value...)}
	return p, nil
}

// PutBytes returns BytesPut.
func (s *Store) PutBytes() int64 { return s.BytesPut.Load() }

// Close implements metadata.Store.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}
