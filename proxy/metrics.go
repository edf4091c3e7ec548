package proxy

import (
	"encoding/json"
	"net/http"
	"sort"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/magnetar-mq/magnetar/httpapi"
)

// metrics are the proxy's Prometheus series (names follow Pulsar's
// proxy where it has one).
type metrics struct {
	reg                   *prometheus.Registry
	active                *stat
	newConns              *stat
	rejected              *stat
	relays                *stat
	bytesIn, bytesOut     *stat
	lookups               *stat
	lookupFailures        *stat
	partitionLookups      *stat
	brokerConnectFailures *stat
	httpRequests          *prometheus.CounterVec
}

// stat is a number exported both as a Prometheus series and in Stats.
type stat struct{ v atomic.Int64 }

func (s *stat) Inc()          { s.v.Add(1) }
func (s *stat) Dec()          { s.v.Add(-1) }
func (s *stat) Add(n float64) { s.v.Add(int64(n)) }
func (s *stat) Load() int64   { return s.v.Load() }

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	series := func(p **stat, gauge bool, name, help string) {
		s := &stat{}
		*p = s
		f := func() float64 { return float64(s.v.Load()) }
		if gauge {
			m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
		} else {
			m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f))
		}
	}
	series(&m.active, true, "pulsar_proxy_active_connections", "Client connections open now (lookup and relayed).")
	series(&m.newConns, false, "pulsar_proxy_new_connections", "Client connections accepted.")
	series(&m.rejected, false, "pulsar_proxy_rejected_connections", "Client connections refused (limit, authentication, bad target, protocol).")
	series(&m.relays, true, "magnetar_proxy_active_relays", "Relayed client connections open now.")
	series(&m.bytesIn, false, "magnetar_proxy_relayed_bytes_client_to_broker", "Bytes relayed from clients to brokers.")
	series(&m.bytesOut, false, "magnetar_proxy_relayed_bytes_broker_to_client", "Bytes relayed from brokers to clients.")
	series(&m.lookups, false, "pulsar_proxy_lookup_requests", "Topic lookups answered by the proxy.")
	series(&m.lookupFailures, false, "magnetar_proxy_lookup_failures", "Topic lookups answered with an error.")
	series(&m.partitionLookups, false, "pulsar_proxy_partitions_metadata_requests", "Partitioned-metadata requests forwarded.")
	series(&m.brokerConnectFailures, false, "magnetar_proxy_broker_connect_failures", "Relays that could not connect to their broker.")
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "magnetar_proxy_http_requests", Help: "HTTP requests forwarded to brokers, by status code."}, []string{"code"})
	m.reg.MustRegister(m.httpRequests, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// ConnStats is one client connection in /proxy-stats/connections.
type ConnStats struct {
	RemoteAddress string `json:"remoteAddress"`
	Role          string `json:"role,omitempty"`
	Kind          string `json:"kind"` // lookup, relay, connecting
	Broker        string `json:"broker,omitempty"`
	BytesIn       int64  `json:"bytesIn"`  // client to broker
	BytesOut      int64  `json:"bytesOut"` // broker to client
	ConnectedAt   string `json:"connectedSince"`
}

// Stats is the proxy's counters (also /proxy-stats).
type Stats struct {
	ActiveConnections int64 `json:"activeConnections"`
	ActiveRelays      int64 `json:"activeRelays"`
	NewConnections    int64 `json:"newConnections"`
	Rejected          int64 `json:"rejectedConnections"`
	BytesIn           int64 `json:"bytesClientToBroker"`
	BytesOut          int64 `json:"bytesBrokerToClient"`
	Lookups           int64 `json:"lookups"`
	LookupFailures    int64 `json:"lookupFailures"`
}

// Connections lists the open client connections.
func (p *Proxy) Connections() []ConnStats {
	p.mu.Lock()
	out := make([]ConnStats, 0, len(p.mu.conns))
	for c := range p.mu.conns {
		out = append(out, ConnStats{RemoteAddress: c.remote, Role: *c.role.Load(), Kind: *c.kind.Load(), Broker: *c.broker.Load(),
			BytesIn: c.bytesIn.Load(), BytesOut: c.bytesOut.Load(), ConnectedAt: c.since.UTC().Format(time.RFC3339)})
	}
	p.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].RemoteAddress < out[j].RemoteAddress })
	return out
}

// Stats returns the counters.
func (p *Proxy) Stats() Stats {
	return Stats{
		ActiveConnections: p.m.active.Load(), ActiveRelays: p.m.relays.Load(), NewConnections: p.m.newConns.Load(),
		Rejected: p.m.rejected.Load(), BytesIn: p.m.bytesIn.Load(), BytesOut: p.m.bytesOut.Load(),
		Lookups: p.m.lookups.Load(), LookupFailures: p.m.lookupFailures.Load(),
	}
}

// serveStats answers /proxy-stats and /proxy-stats/connections. With
// authentication on, only superUserRoles may read them (they name
// clients and their roles): their routes' access rule.
func (p *Proxy) serveStats(w http.ResponseWriter, r *http.Request, _ httpapi.Params) {
	var v any = p.Stats()
	if r.URL.Path == "/proxy-stats/connections" {
		v = p.Connections()
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
