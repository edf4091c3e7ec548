package cluster

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/internal/zktest"
	"github.com/magnetar-mq/magnetar/metadata/zookeeper"
)

// TestRetuneTakesEffect: a Service started without load shedding (so
// without automatic splits) and with a split threshold its bundles stay
// under splits them once Retune (a dynamic update of
// loadBalancerSheddingIntervalMinutes and
// loadBalancerNamespaceBundleMaxTopics) starts the period and lowers the
// threshold.
func TestRetuneTakesEffect(t *testing.T) {
	svc := startFiveTopicBundles(t, Options{ReportInterval: 50 * time.Millisecond, ShedInterval: -1, SplitMaxTopics: 10})
	tu := svc.Tuning()
	if tu.ShedInterval >= 0 || tu.SplitMaxTopics != 10 {
		t.Fatalf("tuning at start: %+v", tu)
	}
	tu.ShedInterval, tu.SplitMaxTopics = 50*time.Millisecond, 4
	svc.Retune(tu)
	waitFor(t, "auto split after Retune", func() bool {
		bs, err := svc.Bundles(context.Background(), "t/ns")
		return err == nil && bs.Count() > 4
	})
}

// startFiveTopicBundles starts a Service with o over a namespace t/ns of
// 4 bundles whose owned bundles each report 5 topics, and makes it own
// one of them.
func startFiveTopicBundles(t *testing.T, o Options) *Service {
	t.Helper()
	srv := zktest.StartServer(t)
	st, err := zookeeper.Open("zk://"+srv.Addr()+"/c", zookeeper.Options{SessionTimeout: testSession})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	createNamespace(t, st, "t/ns", 4)
	var cur atomic.Pointer[Service]
	o.Store, o.BrokerID, o.ServiceURL, o.WebURL = st, "127.0.0.1:8080", "pulsar://127.0.0.1:6650", "http://127.0.0.1:8080"
	o.Stats = func() map[string]BundleStats {
		out := map[string]BundleStats{}
		if svc := cur.Load(); svc != nil {
			for _, k := range svc.OwnedBundles() {
				out[k] = BundleStats{Topics: 5}
			}
		}
		return out
	}
	svc, err := Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	cur.Store(svc)
	t.Cleanup(func() { svc.Close() })
	if _, err := svc.Lookup(context.Background(), "persistent://t/ns/x", true); err != nil {
		t.Fatal(err)
	}
	return svc
}
