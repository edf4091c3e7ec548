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
	kids  map[string][]string // parent path -> child names (substrings of the paths: no copies)
	// failGet, when set, fails Get and Children of the paths it returns
	// an error for (as a real store does, the error names the path).
	failGet func(p string) error
	seq     int
}

type memNode struct {
	v   []byte
	ver metadata.Version
}

func newMemMeta() *memMeta {
	return &memMeta{nodes: map[string]*memNode{"/": {}}, kids: map[string][]string{}}
}

// splitPath is p's parent path and name ("/" is the root's children's
// parent).
func splitPath(p string) (parent, name string) {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/", p[i+1:]
	}
	return p[:i], p[i+1:]
}

// addLocked creates node p, indexing it under its parent.
func (m *memMeta) addLocked(p string, n *memNode) {
	m.nodes[p] = n
	parent, name := splitPath(p)
	m.kids[parent] = append(m.kids[parent], name)
}

var _ metadata.Store = (*memMeta)(nil)

func (m *memMeta) Get(_ context.Context, p string) ([]byte, metadata.Version, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failGet != nil {
		if err := m.failGet(p); err != nil {
			return nil, 0, err
		}
	}
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
				m.addLocked(p[:i], &memNode{})
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
		m.addLocked(p, &memNode{v: slices.Clone(v)})
		return 0, nil
	}
	n.v = slices.Clone(v)
	n.ver++
	return n.ver, nil
}

func (m *memMeta) childrenLocked(p string) []string {
	out := slices.Clone(m.kids[p])
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
	if len(m.kids[p]) > 0 {
		return metadata.ErrNotEmpty
	}
	delete(m.nodes, p)
	parent, name := splitPath(p)
	k := m.kids[parent]
	if i := slices.Index(k, name); i >= 0 {
		k = slices.Delete(k, i, i+1)
	}
	if len(k) == 0 {
		delete(m.kids, parent)
	} else {
		m.kids[parent] = k
	}
	return nil
}

func (m *memMeta) Children(_ context.Context, p string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failGet != nil {
		if err := m.failGet(p); err != nil {
			return nil, err
		}
	}
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
	m.addLocked(p, &memNode{v: slices.Clone(v)})
	return p, nil
}

func (m *memMeta) Close() error { return nil }
