package policy

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
)

// stallingGets is a metadata store whose Gets of one path, once armed,
// return what they read and then wait for release: a read that began
// before a write and finishes after it.
type stallingGets struct {
	metadata.Store
	path    string
	mu      sync.Mutex
	armed   bool
	read    chan struct{} // closed when the stalled Get has read
	release chan struct{}
}

func (s *stallingGets) Get(ctx context.Context, path string) ([]byte, metadata.Version, error) {
	data, v, err := s.Store.Get(ctx, path)
	s.mu.Lock()
	stall := s.armed && strings.HasSuffix(path, s.path)
	if stall {
		s.armed = false
	}
	s.mu.Unlock()
	if stall {
		close(s.read)
		<-s.release
	}
	return data, v, err
}

// TestCacheKeepsNoReadOlderThanAWrite: a Get that read the namespace's
// policies before an Update and returns after it must not put the older
// document in the cache (it did: a topic then loaded without the TTL
// just set, until the next Refresh).
func TestCacheKeepsNoReadOlderThanAWrite(t *testing.T) {
	meta, err := embedded.Open(filepath.Join(t.TempDir(), "meta"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	sg := &stallingGets{Store: meta, path: "t/ns", read: make(chan struct{}), release: make(chan struct{})}
	s := NewStore(sg, "c1")
	ctx := context.Background()
	if err := s.CreateTenant(ctx, "t", TenantInfo{AllowedClusters: []string{"c1"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateNamespace(ctx, "t/ns", nil); err != nil {
		t.Fatal(err)
	}
	s.forget("t/ns")
	sg.mu.Lock()
	sg.armed = true
	sg.mu.Unlock()
	done := make(chan *Policies)
	go func() {
		p, err := s.Get(ctx, "t/ns")
		if err != nil {
			t.Error(err)
		}
		done <- p
	}()
	<-sg.read // the old document is read
	if err := s.Update(ctx, "t/ns", func(p *Policies) error { p.MessageTTLInSeconds = ptr(1); return nil }); err != nil {
		t.Fatal(err)
	}
	close(sg.release)
	if old := <-done; old.MessageTTLInSeconds != nil {
		t.Fatalf("the stalled Get read after the Update: %+v", old)
	}
	p, err := s.Get(ctx, "t/ns")
	if err != nil {
		t.Fatal(err)
	}
	if p.MessageTTLInSeconds == nil || *p.MessageTTLInSeconds != 1 {
		t.Fatalf("cached policies lost the update: TTL %v", p.MessageTTLInSeconds)
	}
}
