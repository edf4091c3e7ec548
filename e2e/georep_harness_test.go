package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/internal/zktest"
)

// geoCluster is one `magnetar standalone` of a geo-replicated pair: its
// own data directory and ports (kept across restarts, since the
// configuration store holds its URLs), and a shared configuration store.
type geoCluster struct {
	t       testing.TB
	name    string
	dir     string
	config  string
	extra   []string
	listen  string // host:port, fixed after the first start
	httpAdr string
	*proc
}

// startGeoPair starts a ZooKeeper for the configuration store and two
// standalones "ca" and "cb" sharing it, then creates tenant geo (allowed
// in both) and namespace geo/<ns> replicated to both, through ca.
func startGeoPair(t testing.TB, ns string, extra ...string) (*geoCluster, *geoCluster) {
	t.Helper()
	zk := zktest.Start(t)
	config := "zk://" + zk + "/geo-config"
	a := &geoCluster{t: t, name: "ca", dir: t.TempDir(), config: config, extra: extra}
	b := &geoCluster{t: t, name: "cb", dir: t.TempDir(), config: config, extra: extra}
	a.start()
	b.start()
	a.admin("PUT", "/admin/v2/tenants/geo", `{"adminRoles":[],"allowedClusters":["ca","cb"]}`, http.StatusNoContent)
	a.admin("PUT", "/admin/v2/namespaces/geo/"+ns, `{"replication_clusters":["ca","cb"]}`, http.StatusNoContent)
	return a, b
}

func (g *geoCluster) start() {
	g.t.Helper()
	listen, httpAddr := "127.0.0.1:0", "127.0.0.1:0"
	if g.listen != "" {
		listen, httpAddr = g.listen, g.httpAdr
	}
	args := append([]string{"--cluster-name", g.name, "--configuration-metadata-url", g.config}, g.extra...)
	p, _ := startMagnetar(g.t, g.name, "magnetar standalone ready", append([]string{"standalone", "--data-dir", g.dir,
		"--listen", listen, "--http", httpAddr, "--advertised-host", "127.0.0.1"}, args...)...)
	g.proc = p
	g.listen = strings.TrimPrefix(p.service, "pulsar://")
	g.httpAdr = strings.TrimPrefix(p.http, "http://")
}

// admin sends an admin request to g and checks the status.
func (g *geoCluster) admin(method, path, body string, want int) []byte {
	g.t.Helper()
	code, _, out := httpDo(g.t, method, g.http+path, body, true)
	if code != want {
		g.t.Fatalf("%s %s %s on %s: %d %s, want %d", method, path, body, g.name, code, out, want)
	}
	return out
}

// replStats returns the replication section of topic's stats on g.
type replStat struct {
	MsgRateOut                float64 `json:"msgRateOut"`
	MsgOutCount               int64   `json:"msgOutCount"`
	MsgInCount                int64   `json:"msgInCount"`
	ReplicationBacklog        int64   `json:"replicationBacklog"`
	Connected                 bool    `json:"connected"`
	ReplicationDelayInSeconds int64   `json:"replicationDelayInSeconds"`
	OutboundConnection        string  `json:"outboundConnection"`
	InboundConnection         string  `json:"inboundConnection"`
}

func (g *geoCluster) replStats(topic string) map[string]replStat {
	g.t.Helper()
	code, _, out := httpDo(g.t, "GET", g.http+"/admin/v2/"+strings.Replace(topic, "://", "/", 1)+"/stats", "", true)
	if code != http.StatusOK {
		return nil
	}
	var st struct {
		Replication map[string]replStat `json:"replication"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		g.t.Fatalf("stats: %v: %s", err, out)
	}
	return st.Replication
}

// cursors lists the managed-ledger cursors of topic on g.
func (g *geoCluster) cursors(topic string) []string {
	g.t.Helper()
	out := g.admin("GET", "/admin/v2/"+strings.Replace(topic, "://", "/", 1)+"/internalStats", "", http.StatusOK)
	var st struct {
		Cursors map[string]json.RawMessage `json:"cursors"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		g.t.Fatalf("internal stats: %v: %s", err, out)
	}
	var names []string
	for n := range st.Cursors {
		names = append(names, n)
	}
	return names
}

// orderChecker checks per-producer order of "<producer>:<seq>" payloads
// and counts duplicates.
type orderChecker struct {
	next  map[string]int
	dups  int
	total int
}

func newOrderChecker() *orderChecker { return &orderChecker{next: map[string]int{}} }

// add records one payload; an id below the next expected is a duplicate,
// one above it is a gap (an error).
func (o *orderChecker) add(p string) error {
	prod, seqs, ok := strings.Cut(p, ":")
	var seq int
	if _, err := fmt.Sscanf(seqs, "%d", &seq); !ok || err != nil {
		return fmt.Errorf("bad payload %q", p)
	}
	switch {
	case seq < o.next[prod]:
		o.dups++
	case seq > o.next[prod]:
		return fmt.Errorf("producer %s: got %d, want %d (gap or reorder)", prod, seq, o.next[prod])
	default:
		o.next[prod]++
		o.total++
	}
	return nil
}

// consumeOrdered receives until every producer in want reached its
// count, checking per-producer order; it returns the checker.
func consumeOrdered(t testing.TB, c pulsar.Consumer, d time.Duration, want map[string]int) *orderChecker {
	t.Helper()
	o := newOrderChecker()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	done := func() bool {
		for p, n := range want {
			if o.next[p] < n {
				return false
			}
		}
		return true
	}
	for !done() {
		m, err := c.Receive(ctx)
		if err != nil {
			t.Fatalf("receive (have %v, want %v): %v", o.next, want, err)
		}
		if err := o.add(string(m.Payload())); err != nil {
			t.Fatal(err)
		}
		c.Ack(m)
	}
	return o
}

// expectNothing fails if c receives a message within d.
func expectNothing(t testing.TB, c pulsar.Consumer, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if m, err := c.Receive(ctx); err == nil {
		t.Fatalf("unexpected message %q", m.Payload())
	}
}
