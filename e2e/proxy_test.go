package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// `magnetar proxy` process tests: a broker cluster (real ZooKeeper, real
// processes) reached by Go clients that know only the proxies.

// startProxy starts `magnetar proxy` with extra flags.
func (bc *brokerCluster) startProxy(name string, extra ...string) *proc {
	bc.t.Helper()
	args := append([]string{"proxy", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--keep-alive-interval", "2s", "--log-level", "debug"}, extra...)
	p, _ := startMagnetar(bc.t, name, "magnetar proxy ready", args...)
	bc.t.Cleanup(func() {
		if bc.t.Failed() {
			bc.t.Logf("%s log:\n%s", name, p.log())
		}
	})
	return p
}

// metricValue reads one series from a /metrics page.
func metricValue(t testing.TB, base, name string) float64 {
	t.Helper()
	code, _, body := httpDo(t, "GET", base+"/metrics", "", true)
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("/metrics has no %s", name)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// roundTrip produces n messages on topic and reads them back through cl.
func roundTrip(t *testing.T, cl pulsar.Client, topic string, n int) {
	t.Helper()
	cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "rt",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatalf("subscribe %s: %v", topic, err)
	}
	defer cons.Close()
	prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, SendTimeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("producer %s: %v", topic, err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range n {
		if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: bodyOf(topic[strings.LastIndexByte(topic, '/')+1:], i)}); err != nil {
			t.Fatalf("send %s %d: %v", topic, i, err)
		}
	}
	for i := range n {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("receive %s %d: %v", topic, i, err)
		}
		if want := bodyOf(topic[strings.LastIndexByte(topic, '/')+1:], i); string(m.Payload()) != string(want) {
			t.Fatalf("%s message %d: got %q want %q", topic, i, m.Payload(), want)
		}
		cons.Ack(m)
	}
}

// Clients that know only the proxy produce and consume on topics owned
// by different brokers; HTTP admin and lookup calls go through it too;
// its stats and metrics count what it did. A second proxy configured
// with the static broker list serves the same topics.
func TestProxyTopicsOnSeveralBrokers(t *testing.T) {
	bc := startBrokerCluster(t, 2, 2, "--load-shedding-interval", "-1s", "--ensemble", "2", "--write-quorum", "2", "--ack-quorum", "2")
	bc.createNamespace("public/px", 8)
	px := bc.startProxy("proxy", "--metadata-url", bc.c.url)
	cl := newClusterClient(t, px.service)
	var topics []string
	for i := range 8 {
		topics = append(topics, fmt.Sprintf("persistent://public/px/t%d", i))
	}
	for _, tp := range topics {
		roundTrip(t, cl, tp, 20)
	}
	owners := map[string]bool{}
	for _, tp := range topics {
		o := bc.owner(tp)
		if o == "" {
			t.Fatalf("%s has no owner", tp)
		}
		owners[o] = true
	}
	if len(owners) < 2 {
		t.Fatalf("all topics on one broker %v: the test needs several owners", owners)
	}
	for _, b := range bc.brokers {
		if strings.Contains(px.service, strings.TrimPrefix(b.service, "pulsar://")) {
			t.Fatal("proxy and broker share an address")
		}
	}
	// HTTP through the proxy: a topic call reaches the owner (stats are
	// served only there), a namespace call any broker, a lookup answers.
	for _, tp := range topics[:3] {
		path := "/admin/v2/persistent/" + strings.TrimPrefix(tp, "persistent://") + "/stats"
		code, _, body := httpDo(t, "GET", px.http+path, "", false)
		var st struct {
			MsgInCounter int64 `json:"msgInCounter"`
		}
		if code != 200 || json.Unmarshal(body, &st) != nil || st.MsgInCounter != 20 {
			t.Fatalf("stats of %s through the proxy: %d %s", tp, code, body)
		}
	}
	code, _, body := httpDo(t, "GET", px.http+"/admin/v2/namespaces/public/px/bundles", "", false)
	if code != 200 || !strings.Contains(string(body), `"numBundles":8`) {
		t.Fatalf("bundles through the proxy: %d %s", code, body)
	}
	code, _, body = httpDo(t, "GET", px.http+"/lookup/v2/topic/persistent/public/px/t0", "", false)
	if code != 200 || !strings.Contains(string(body), bc.owner(topics[0])) {
		t.Fatalf("HTTP lookup through the proxy: %d %s (owner %s)", code, body, bc.owner(topics[0]))
	}
	// A partitioned topic created through the proxy (HTTP PUT with a
	// body), used through it (partitioned metadata forwarded), and a
	// regex subscription (topics of namespace forwarded).
	code, _, body = httpDo(t, "PUT", px.http+"/admin/v2/persistent/public/px/parted/partitions", "4", false)
	if code != 204 {
		t.Fatalf("create partitioned topic through the proxy: %d %s", code, body)
	}
	roundTrip(t, cl, "persistent://public/px/parted", 40)
	rx, err := cl.Subscribe(pulsar.ConsumerOptions{TopicsPattern: "persistent://public/px/t[0-7]", SubscriptionName: "rt",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatalf("regex subscription through the proxy: %v", err)
	}
	// Every t* topic holds 20 messages acked by "rt" already; a new
	// one on t3 must arrive.
	p3, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topics[3]})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p3.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("via-regex")}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	m, err := rx.Receive(ctx)
	cancel()
	if err != nil || string(m.Payload()) != "via-regex" {
		t.Fatalf("regex consumer: %v %v", m, err)
	}
	rx.Close()
	p3.Close()
	if v := metricValue(t, px.http, "pulsar_proxy_partitions_metadata_requests"); v < 1 {
		t.Fatalf("partitioned-metadata requests = %v", v)
	}

	// Stats and metrics.
	if v := metricValue(t, px.http, "pulsar_proxy_lookup_requests"); v < float64(len(topics)) {
		t.Fatalf("lookups = %v, want >= %d", v, len(topics))
	}
	in := metricValue(t, px.http, "magnetar_proxy_relayed_bytes_client_to_broker")
	out := metricValue(t, px.http, "magnetar_proxy_relayed_bytes_broker_to_client")
	if in < 8*20*64 || out < 8*20*64 {
		t.Fatalf("relayed bytes in=%v out=%v, want each >= %d", in, out, 8*20*64)
	}
	if v := metricValue(t, px.http, "pulsar_proxy_active_connections"); v < 2 {
		t.Fatalf("active connections = %v", v)
	}
	code, _, body = httpDo(t, "GET", px.http+"/proxy-stats/connections", "", false)
	var conns []struct {
		Kind, Broker string
	}
	if code != 200 || json.Unmarshal(body, &conns) != nil {
		t.Fatalf("/proxy-stats/connections: %d %s", code, body)
	}
	relayed := map[string]bool{}
	for _, c := range conns {
		if c.Kind == "relay" {
			relayed["pulsar://"+c.Broker] = true
		}
	}
	for o := range owners {
		if !relayed[o] {
			t.Fatalf("no relayed connection to owner %s: %s", o, body)
		}
	}

	// Static list, no metadata store.
	var svc, web []string
	for _, b := range bc.brokers {
		svc = append(svc, b.service)
		web = append(web, b.http)
	}
	static := bc.startProxy("proxy-static", "--broker-service-url", strings.Join(svc, ","), "--broker-web-service-url", strings.Join(web, ","))
	cl2 := newClusterClient(t, static.service)
	for _, tp := range topics[:4] {
		cons, err := cl2.Subscribe(pulsar.ConsumerOptions{Topic: tp, SubscriptionName: "rt"})
		if err != nil {
			t.Fatalf("subscribe %s through the static proxy: %v", tp, err)
		}
		cons.Close()
	}
	prod, err := cl2.CreateProducer(pulsar.ProducerOptions{Topic: topics[5]})
	if err != nil {
		t.Fatalf("producer through the static proxy: %v", err)
	}
	if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("static")}); err != nil {
		t.Fatal(err)
	}
	prod.Close()
}

// A broker is SIGKILLed while clients produce through the proxy: they
// reconnect through the proxy to the new owner; every acked message is
// read back byte for byte.
func TestProxyBrokerSIGKILL(t *testing.T) {
	bc := startBrokerCluster(t, 3, 3, "--load-shedding-interval", "-1s")
	bc.createNamespace("public/pfo", 4)
	px := bc.startProxy("proxy", "--metadata-url", bc.c.url)
	const topic = "persistent://public/pfo/failover"
	cl := newClusterClient(t, px.service)
	log := &ackedLog{acked: map[string][]string{}}
	stop := make(chan struct{})
	wg := runProducers(t, px.service, topic, []string{"pa", "pb"}, stop, log)
	waitAcked(t, log, 200, 60*time.Second)
	owner := bc.owner(topic)
	bc.byService(owner).kill()
	before := log.total()
	t0 := time.Now()
	waitAcked(t, log, before+200, 90*time.Second)
	t.Logf("failover through the proxy: %d more acks %v after SIGKILL", log.total()-before, time.Since(t0))
	close(stop)
	wg.Wait()
	if t.Failed() {
		return
	}
	if o := bc.owner(topic); o == "" || o == owner {
		t.Fatalf("owner after failover = %q (killed %s)", o, owner)
	}
	dups := checkDelivered(t, cl, topic, "check", log)
	t.Logf("%d acked, %d duplicates", log.total(), dups)
}

// Proxies behind one client URL list; one is SIGKILLed while clients
// produce: they move to the others, nothing acked is lost; restarted on
// its address, it serves everything back.
//
// Three proxies, not two: pulsar-client-go (v0.19) takes one host from
// its round-robin list for the lookup and the next one as the physical
// address of the relayed connection, so with exactly two hosts every
// reconnect whose lookup lands on the survivor dials the dead one again
// (docs/proxy.md, "Several proxies").
func TestProxySIGKILLOneOfSeveral(t *testing.T) {
	bc := startBrokerCluster(t, 2, 2, "--load-shedding-interval", "-1s", "--ensemble", "2", "--write-quorum", "2", "--ack-quorum", "2")
	bc.createNamespace("public/pp", 4)
	var ps []*proc
	var hosts []string
	for i := range 3 {
		p := bc.startProxy(fmt.Sprintf("proxy%d", i+1), "--metadata-url", bc.c.url)
		ps = append(ps, p)
		hosts = append(hosts, strings.TrimPrefix(p.service, "pulsar://"))
	}
	const topic = "persistent://public/pp/moving"
	log := &ackedLog{acked: map[string][]string{}}
	stop := make(chan struct{})
	wg := runProducers(t, "pulsar://"+strings.Join(hosts, ","), topic, []string{"qa", "qb", "qc", "qd"}, stop, log)
	waitAcked(t, log, 200, 60*time.Second)
	// Kill the proxy carrying the most relays.
	victim, most := 0, -1.0
	for i, p := range ps {
		if v := metricValue(t, p.http, "magnetar_proxy_active_relays"); v > most {
			victim, most = i, v
		}
	}
	if most < 1 {
		t.Fatal("no proxy carries a relay")
	}
	ps[victim].kill()
	before := log.total()
	t0 := time.Now()
	waitAcked(t, log, before+400, 90*time.Second)
	t.Logf("clients moved: %d more acks %v after SIGKILL of a proxy with %v relays", log.total()-before, time.Since(t0), most)
	close(stop)
	wg.Wait()
	if t.Failed() {
		return
	}
	relays := 0.0
	for i, p := range ps {
		if i != victim {
			relays += metricValue(t, p.http, "magnetar_proxy_active_relays")
		}
	}
	// A proxy keeps nothing a restart loses: the killed one, restarted on
	// its address, serves a client that knows only it.
	addr := strings.TrimPrefix(ps[victim].service, "pulsar://")
	again := bc.startProxy("proxy-restarted", "--metadata-url", bc.c.url, "--listen", addr)
	dups := checkDelivered(t, newClusterClient(t, again.service), topic, "check", log)
	t.Logf("%d acked, %d duplicates (read through the restarted proxy); %v relays on the surviving proxies", log.total(), dups, relays)
}
