package admin

import (
	"context"
	"math"
	"net/http"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/topicstats"
)

// /admin/v2/broker-stats/metrics: Pulsar's monitoring metrics, a list of
// Metrics ({"metrics": {...}, "dimensions": {...}}), one per dimension
// set, as Pulsar's MetricsGenerator merges them. Magnetar fills the
// entries it has the figures for (docs/broker-stats.md):
//
//   - {"namespace": ns}: the namespace's loaded topics summed (rates,
//     storage, producers, subscriptions, consumers, backlog, replication);
//   - {"namespace": ns + "/persistent"}: its managed ledgers (backlog,
//     stored size, add rates);
//   - {}: the number of open managed ledgers (brk_ml_count);
//   - {"metric": "jvm_metrics"}: the process's memory and goroutines in
//     the JVM entry's names.
//
// Superuser only, as in Pulsar.

// BrokerMetrics is what broker-stats/metrics reads (*broker.Broker).
type BrokerMetrics interface {
	// Cluster is the broker's cluster membership (nil on a single node):
	// a clustered broker reports its owned bundles' topics.
	Cluster() *cluster.Service
	// LoadedTopicsOf lists the loaded topics of a bundle (its cluster
	// key; "" on a single node: every loaded topic).
	LoadedTopicsOf(bundleKey string) []string
	TopicStats(ctx context.Context, topic string) (topicstats.TopicStats, error)
}

func (a *API) registerBrokerMetricsRoute(rt routeTable) {
	if a.metrics == nil {
		return
	}
	rt.Add(httpapi.Route{Method: "GET", Pattern: "/admin/v2/broker-stats/metrics", Access: auth.AccessSuperUser,
		Response: []metricsEntry{}, Handler: func(w http.ResponseWriter, r *http.Request, _ params) {
			writeJSON(w, http.StatusOK, brokerMetrics(r.Context(), a.metrics))
		}})
}

// nsSums are one namespace's figures: Pulsar's NamespaceStats (all its
// topics) and the managed ledger part of ManagedLedgerMetrics (its
// persistent topics).
type nsSums struct{ all, persistent topicstats.Sums }

// brokerMetrics collects the metrics list from the loaded topics' stats
// and the Go runtime, sorted by dimensions for a stable answer.
func brokerMetrics(ctx context.Context, src BrokerMetrics) []metricsEntry {
	byNS := map[string]*nsSums{}
	ledgers := 0
	for _, lt := range loadedTopicsOf(src) {
		st, err := src.TopicStats(ctx, lt.name)
		if err != nil {
			continue // unloaded meanwhile
		}
		tn, err := broker.ParseTopicName(lt.name)
		if err != nil {
			continue
		}
		ns := tn.NamespaceName()
		s := byNS[ns]
		if s == nil {
			s = &nsSums{}
			byNS[ns] = s
		}
		persistent := !strings.HasPrefix(lt.name, "non-persistent://")
		s.all.Add(&st)
		if persistent {
			s.persistent.Add(&st)
			ledgers++
		}
	}
	out := []metricsEntry{
		{Dimensions: map[string]string{}, Metrics: map[string]any{"brk_ml_count": ledgers}},
		goJVMMetrics(),
	}
	for ns, s := range byNS {
		a := &s.all
		out = append(out, metricsEntry{Dimensions: map[string]string{"namespace": ns}, Metrics: map[string]any{
			"brk_in_rate": a.RateIn, "brk_in_tp_rate": a.ThroughputIn, "brk_out_rate": a.RateOut, "brk_out_tp_rate": a.ThroughputOut,
			"brk_storage_size": float64(a.Storage), "brk_msg_backlog": float64(a.Backlog),
			"brk_no_of_producers": a.Producers, "brk_no_of_subscriptions": a.Subscriptions,
			"brk_no_of_consumers": a.Consumers, "brk_no_of_replicators": a.Replicators,
			"brk_replication_backlog": float64(a.ReplicationBacklog), "brk_max_replication_delay_second": float64(a.MaxReplicationDelaySeconds),
		}})
		if p := &s.persistent; p.Topics > 0 {
			out = append(out, metricsEntry{Dimensions: map[string]string{"namespace": ns + "/persistent"}, Metrics: map[string]any{
				"brk_ml_NumberOfMessagesInBacklog": float64(p.Backlog), "brk_ml_StoredMessagesSize": float64(p.Storage),
				"brk_ml_AddEntryMessagesRate": p.RateIn, "brk_ml_AddEntryBytesRate": p.ThroughputIn,
			}})
		}
	}
	sort.Slice(out, func(i, j int) bool { return dimKey(out[i].Dimensions) < dimKey(out[j].Dimensions) })
	return out
}

// dimKey orders dimension maps: by their sorted key=value pairs.
func dimKey(d map[string]string) string {
	var kv []string
	for k, v := range d {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

// goJVMMetrics is Pulsar's jvm_metrics entry from the Go runtime:
// jvm_heap_used the live heap, jvm_total_memory the heap obtained from
// the OS, jvm_max_memory the memory limit (GOMEMLIMIT; without one, all
// the memory obtained from the OS), jvm_thread_cnt the goroutines. Go
// has no off-heap direct memory (0) and one non-generational collector,
// counted as the old generation.
func goJVMMetrics() metricsEntry {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	limit := debug.SetMemoryLimit(-1)
	if limit == math.MaxInt64 {
		limit = int64(ms.Sys)
	}
	return metricsEntry{Dimensions: map[string]string{"metric": "jvm_metrics"}, Metrics: map[string]any{
		"jvm_heap_used": ms.HeapAlloc, "jvm_total_memory": ms.HeapSys, "jvm_max_memory": limit,
		"jvm_direct_memory_used": 0, "jvm_max_direct_memory": 0,
		"jvm_thread_cnt":     runtime.NumGoroutine(),
		"jvm_gc_young_count": 0, "jvm_gc_young_pause": 0,
		"jvm_gc_old_count": ms.NumGC, "jvm_gc_old_pause": ms.PauseTotalNs / 1e6,
	}}
}
