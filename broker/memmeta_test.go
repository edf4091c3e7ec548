package broker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/magnetar-mq/magnetar/metadata"
)

// memMeta is a minimal in-memory metadata.Store for tests.
type memMeta struct {
	mu    sync.Mutex
	nodes map[string]*memNode
	seq   int
}

type memNode struct {
	v   []byte
	ver metadata.Version
}

func newMemMeta() *memMeta { return &memMeta{nodes: map[string]*memNode{"/": {}}} }

var _ metadata.Store = (*memMeta)(nil)

func (m *memMeta) Get(_ context.Context, p string) ([]byte, metadata.Version, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.nodes[p]
	if n == nil {
		return nil, 0, metadata.ErrNotFound
	}
	return slices.Clone(n.v), n.ver, nil
}

func (m *memMeta) mkParentsLocked(p string) {
	for i := 1; i < len(p); i++ {
		if p[i] == '/' {
			if m.nodes[p[:i]] == nil {
				m.nodes[p[:i]] = &memNode{}
			}
		}
	}
}

func (m *memMeta) Put(_ context.Context, p string, v []byte, exp metadata.Version) (metadata.Version, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.nodes[p]
	switch {
	case exp == metadata.NotExists && n != nil:
		return 0, metadata.ErrExists
	case exp >= 0 && n == nil:
		return 0, metadata.ErrNotFound
	case exp >= 0 && n.ver != exp:
		return 0, metadata.ErrBadVersion
	}
	if n == nil {
		m.mkParentsLocked(p)
		m.nodes[p] = &memNode{v: slices.Clone(v)}
		return 0, nil
	}
	n.v = slices.Clone(v)
	n.ver++
	return n.ver, nil
}

func (m *memMeta) childrenLocked(p string) []string {
	prefix := strings.TrimSuffix(p, "/") + "/"
	var out []string
	for k := range m.nodes {
		if k != "/" && strings.HasPrefix(k, prefix) && !strings.Contains(k[len(prefix):], "/") {
			out = append(out, k[len(prefix):])
		}
	}
	slices.Sort(out)
	return out
}

func (m *memMeta) Delete(_ context.Context, p string, exp metadata.Version) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.nodes[p]
	if n == nil {
		return metadata.ErrNotFound
	}
	if exp >= 0 && n.ver != exp {
		return metadata.ErrBadVersion
	}
	if len(m.childrenLocked(p)) > 0 {
		return metadata.ErrNotEmpty
	}
	delete(m.nodes, p)
	return nil
}

func (m *memMeta) Children(_ context.Context, p string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.nodes[p] == nil {
		return nil, metadata.ErrNotFound
	}
	return m.childrenLocked(p), nil
}

func (m *memMeta) Exists(_ context.Context, p string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.nodes[p] != nil, nil
}

func (m *memMeta) CreateSequential(_ context.Context, prefix string, v []byte) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := fmt.Sprintf("%s%010d", prefix, m.seq)
	m.seq++
	m.mkParentsLocked(p)
	m.nodes[p] = &memNode{v: slices.Clone(v)}
	return p, nil
}

func (m *memMeta) Close() error { return nil }
