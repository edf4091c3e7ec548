package georep

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/policy"
)

// newConfigStore returns a configuration store for the clusters of one
// test, closed when it ends (after their brokers: cleanups run last
// first).
func newConfigStore(t testing.TB) metadata.Store {
	t.Helper()
	s, err := embedded.Open(filepath.Join(t.TempDir(), "config"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// geoOptions are the options of a broker of cluster name on config.
type geoOptions struct {
	mut    func(*brokerconf.Config)
	ledger mledger.Config
}

// startGeo starts a broker of cluster name with geo-replication, whose
// configuration store is config (shared with the other clusters of the
// test).
func startGeo(t testing.TB, name string, config metadata.Store, o geoOptions) *brokertest.Broker {
	t.Helper()
	return brokertest.Start(t, brokertest.Options{
		ConfigStore: config,
		Ledger:      o.ledger,
		Config: func(c *brokerconf.Config) {
			c.ClusterName = name
			c.Logger = c.Logger.With("cluster", name)
			if o.mut != nil {
				o.mut(c)
			}
		},
		Features: func(b *broker.Broker) error {
			_, err := Enable(b)
			return err
		},
	})
}

// geoNamespace creates tenant geo allowing clusters and namespace ns
// replicating to them, through a's policy store.
func geoNamespace(t testing.TB, a *brokertest.Broker, ns string, clusters ...string) {
	t.Helper()
	ctx := context.Background()
	if err := a.Policies().CreateTenant(ctx, "geo", policy.TenantInfo{AllowedClusters: clusters}); err != nil && err != policy.ErrExists {
		t.Fatal(err)
	}
	if err := a.Policies().CreateNamespace(ctx, "geo/"+ns, &policy.Policies{ReplicationClusters: clusters}); err != nil {
		t.Fatal(err)
	}
}

var topicSeq atomic.Int64

// geoTopic returns a fresh persistent topic name in geo/ns.
func geoTopic(ns string) string {
	return fmt.Sprintf("persistent://geo/%s/t-%d-%d", ns, time.Now().UnixNano()%1000000, topicSeq.Add(1))
}

// managed returns topic's managed ledger on b (loading the topic).
func managed(t testing.TB, b *brokertest.Broker, topic string) *mledger.ManagedLedger {
	t.Helper()
	tv, err := b.Topic(brokertest.Ctx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	ml := tv.Managed()
	if ml == nil {
		t.Fatalf("%s has no managed ledger", topic)
	}
	return ml
}

// holdPort reserves a loopback port for a remote cluster started later: a
// listener that closes every connection at once (the replicator sees a
// remote that is down) and keeps the port from other tests running in
// parallel, until release closes it just before the remote's broker
// binds it. (Closing the probe listener at once, as before, let another
// test's listener take the port while it was free. That was first taken
// for the cause of TestReplicationMessageTTL's "old" messages reaching
// the remote; the failure came back with this in place, and the cause
// found later (likely, not proven) is a stale policy cache entry without
// the TTL, fixed in package policy.)
func holdPort(t *testing.T) (addr string, release func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	var once sync.Once
	release = func() {
		once.Do(func() {
			ln.Close()
			<-done
		})
	}
	t.Cleanup(release)
	return ln.Addr().String(), release
}
