package functions

import (
	"cmp"
	"context"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"time"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/httpapi"
)

// Pulsar's worker endpoints (superusers only, as Pulsar's worker allows
// them):
//
//	GET /admin/v2/worker/cluster                   the live workers: [{workerId, workerHostname, port}]
//	GET /admin/v2/worker/cluster/leader            the leader (below)
//	GET /admin/v2/worker/assignments               worker id -> its instances, "tenant/ns/name:instance"
//	GET /admin/v2/worker-stats/functionsmetrics    this worker's instances' stats: [{name, metrics}]
//	GET /admin/v2/worker-stats/metrics             this worker process's runtime metrics: [{metrics, dimensions}]
//
// Magnetar's workers elect no leader: each computes every instance's
// worker from the membership list by rendezvous hashing (worker.go). The
// leader answered is the live worker with the smallest id, the one every
// worker names from the same list. Assignments are computed the same way
// the workers place instances (stopped instances run nowhere and are not
// listed). The runtime metrics are the Go runtime's where Pulsar reports
// the JVM's (dimensions {"system": "go"}).

// workerInfoJSON is Pulsar's WorkerInfo.
type workerInfoJSON struct {
	WorkerID       string `json:"workerId"`
	WorkerHostname string `json:"workerHostname"`
	Port           int    `json:"port"`
}

// instanceStatsJSON is Pulsar's WorkerFunctionInstanceStats.
type instanceStatsJSON struct {
	Name    string         `json:"name"`
	Metrics map[string]any `json:"metrics"`
}

// metricsJSON is Pulsar's Metrics.
type metricsJSON struct {
	Metrics    map[string]any    `json:"metrics"`
	Dimensions map[string]string `json:"dimensions"`
}

func (w *Worker) registerWorkerRoutes(rt *httpapi.Table) {
	get := func(name, pattern string, resp any, h func(ctx context.Context) (any, error)) httpapi.Route {
		return httpapi.Route{Name: name, Method: http.MethodGet, Pattern: pattern, Access: auth.AccessSuperUser, Response: resp,
			Handler: func(rw http.ResponseWriter, r *http.Request, _ httpapi.Params) {
				ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
				defer cancel()
				v, err := h(ctx)
				if err != nil {
					w.log.Warn("worker API", "route", name, "err", err)
					httpapi.WriteError(rw, http.StatusInternalServerError, "cannot read the workers' state")
					return
				}
				httpapi.WriteJSON(rw, http.StatusOK, v)
			}}
	}
	rt.Add(
		get("worker.cluster", "/admin/v2/worker/cluster", []workerInfoJSON{}, func(ctx context.Context) (any, error) {
			return w.clusterInfo(ctx)
		}),
		get("worker.cluster.leader", "/admin/v2/worker/cluster/leader", workerInfoJSON{}, func(ctx context.Context) (any, error) {
			all, err := w.clusterInfo(ctx)
			if err != nil || len(all) == 0 {
				return nil, err
			}
			return all[0], nil
		}),
		get("worker.assignments", "/admin/v2/worker/assignments", map[string][]string{}, func(ctx context.Context) (any, error) {
			return w.assignments(ctx)
		}),
		get("worker-stats.functionsmetrics", "/admin/v2/worker-stats/functionsmetrics", []instanceStatsJSON{}, func(context.Context) (any, error) {
			return w.localInstanceStats(), nil
		}),
		get("worker-stats.metrics", "/admin/v2/worker-stats/metrics", []metricsJSON{}, func(context.Context) (any, error) {
			return []metricsJSON{w.runtimeMetrics()}, nil
		}),
	)
}

// clusterInfo lists the live workers by id.
func (w *Worker) clusterInfo(ctx context.Context) ([]workerInfoJSON, error) {
	live, err := w.liveWorkers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]workerInfoJSON, 0, len(live))
	for _, wi := range live {
		out = append(out, workerInfoOf(wi))
	}
	slices.SortFunc(out, func(a, b workerInfoJSON) int { return cmp.Compare(a.WorkerID, b.WorkerID) })
	return out, nil
}

// workerInfoOf splits a worker's URL into Pulsar's hostname and port.
func workerInfoOf(wi WorkerInfo) workerInfoJSON {
	out := workerInfoJSON{WorkerID: wi.ID}
	u, err := url.Parse(wi.URL)
	if err != nil {
		return out
	}
	out.WorkerHostname = u.Hostname()
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	out.Port, _ = strconv.Atoi(port)
	if out.WorkerHostname == "" {
		out.WorkerHostname, _, _ = net.SplitHostPort(u.Host)
	}
	return out
}

// assignments maps each live worker that runs instances to them.
func (w *Worker) assignments(ctx context.Context) (map[string][]string, error) {
	workers, err := w.liveWorkers(ctx)
	if err != nil {
		return nil, err
	}
	recs, err := w.st.all(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, r := range recs {
		for i := 0; i < r.Spec.Parallelism; i++ {
			if r.Stopped[i] {
				continue
			}
			k := instKey{kind: r.Kind, fqfn: r.Spec.FQFN(), id: i}
			if id := owner(workers, k); id != "" {
				out[id] = append(out[id], k.fqfn+":"+strconv.Itoa(i))
			}
		}
	}
	for _, l := range out {
		slices.Sort(l)
	}
	return out, nil
}

// localInstanceStats are the stats of this worker's instances, by
// instance name.
func (w *Worker) localInstanceStats() []instanceStatsJSON {
	w.mu.Lock()
	insts := make([]*instance, 0, len(w.instances))
	for _, in := range w.instances {
		insts = append(insts, in)
	}
	w.mu.Unlock()
	out := make([]instanceStatsJSON, 0, len(insts))
	for _, in := range insts {
		s, _, _, _ := in.stats()
		m := statsOf(s)
		if _, ok := m["userMetrics"]; !ok {
			m["userMetrics"] = map[string]float64{}
		}
		out = append(out, instanceStatsJSON{Name: in.key.fqfn + ":" + strconv.Itoa(in.key.id), Metrics: m})
	}
	slices.SortFunc(out, func(a, b instanceStatsJSON) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// runtimeMetrics reads the worker process's Go runtime.
func (w *Worker) runtimeMetrics() metricsJSON {
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/sched/goroutines:goroutines"},
		{Name: "/gc/heap/goal:bytes"},
	}
	metrics.Read(samples)
	val := func(i int) uint64 {
		if samples[i].Value.Kind() == metrics.KindUint64 {
			return samples[i].Value.Uint64()
		}
		return 0
	}
	w.mu.Lock()
	n := len(w.instances)
	w.mu.Unlock()
	return metricsJSON{
		Dimensions: map[string]string{"system": "go", "worker": w.opts.ID, "cluster": w.opts.Cluster},
		Metrics: map[string]any{
			"go_heap_used":     val(0),
			"go_total_memory":  val(1),
			"go_gc_count":      val(2),
			"go_goroutines":    val(3),
			"go_heap_goal":     val(4),
			"go_max_procs":     runtime.GOMAXPROCS(0),
			"worker_instances": n,
		},
	}
}
