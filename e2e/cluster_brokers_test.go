package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-mq/magnetar/bundle"
	"github.com/magnetar-mq/magnetar/metadata"
)

// Multi-broker process tests: N `magnetar broker` processes and M bookies
// on one real ZooKeeper, driven only through pulsar-client-go, HTTP and
// the metadata store.

// brokerCluster is a running multi-broker cluster.
type brokerCluster struct {
	t       testing.TB
	c       *testCluster
	brokers []*proc
	bookies []*bookieProc
	store   metadata.Store
}

// clusterSessionTimeout is the brokers' ZooKeeper session timeout in
// these tests: failover waits for it.
const clusterSessionTimeout = 3 * time.Second

func startBrokerCluster(t testing.TB, bookies, brokers int, extra ...string) *brokerCluster {
	t.Helper()
	c := newTestCluster(t)
	bc := &brokerCluster{t: t, c: c}
	for range bookies {
		bc.bookies = append(bc.bookies, c.startBookie(""))
	}
	for range brokers {
		bc.brokers = append(bc.brokers, bc.startBroker(extra...))
	}
	bc.store = c.clusterClient().store
	bc.waitBrokers(brokers)
	return bc
}

func (bc *brokerCluster) startBroker(extra ...string) *proc {
	bc.t.Helper()
	args := append([]string{"--zk-session-timeout", clusterSessionTimeout.String(), "--load-report-interval", "300ms",
		"--autorecovery=false"}, extra...)
	return bc.c.startBroker(args...)
}

// waitBrokers waits until /admin/v2/brokers/{cluster} lists n brokers and
// a leader is elected.
func (bc *brokerCluster) waitBrokers(n int) {
	bc.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ids []string
		code, body := bc.live().get(bc.t, "/admin/v2/brokers/magnetar")
		_ = json.Unmarshal(body, &ids)
		lc, _ := bc.live().get(bc.t, "/admin/v2/brokers/leaderBroker")
		if code == 200 && len(ids) == n && lc == 200 {
			return
		}
		if time.Now().After(deadline) {
			bc.t.Fatalf("brokers: %d %s (want %d), leader %d", code, body, n, lc)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// live returns a broker process that has not exited.
func (bc *brokerCluster) live() *proc {
	for _, b := range bc.brokers {
		select {
		case <-b.exited:
		default:
			return b
		}
	}
	bc.t.Fatal("no live broker")
	return nil
}

func (bc *brokerCluster) serviceURL() string {
	var hosts []string
	for _, b := range bc.brokers {
		hosts = append(hosts, strings.TrimPrefix(b.service, "pulsar://"))
	}
	return "pulsar://" + strings.Join(hosts, ",")
}

func newClusterClient(t testing.TB, url string) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{
		URL: url, OperationTimeout: 60 * time.Second, ConnectionTimeout: 5 * time.Second,
		KeepAliveInterval: 2 * time.Second, Logger: plog.DefaultNopLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func httpDo(t testing.TB, method, url, body string, follow bool) (int, http.Header, []byte) {
	t.Helper()
	cl := &http.Client{Timeout: 60 * time.Second}
	if !follow {
		cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// createNamespace creates public/{ns} with n bundles.
func (bc *brokerCluster) createNamespace(ns string, n int) {
	bc.t.Helper()
	code, _, body := httpDo(bc.t, "PUT", bc.live().http+"/admin/v2/namespaces/"+ns, fmt.Sprintf(`{"bundles":{"numBundles":%d}}`, n), true)
	if code != 204 {
		bc.t.Fatalf("create namespace %s: %d %s", ns, code, body)
	}
}

// owner returns the nativeUrl in the owner node of topic's bundle ("" if
// unowned), reading the boundaries in force.
func (bc *brokerCluster) owner(topic string) string {
	bc.t.Helper()
	ns := strings.Join(strings.Split(strings.SplitN(topic, "://", 2)[1], "/")[:2], "/")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	data, _, err := bc.store.Get(ctx, "/admin/local-policies/"+ns)
	if err != nil {
		bc.t.Fatalf("local policies of %s: %v", ns, err)
	}
	var lp struct {
		Bundles json.RawMessage `json:"bundles"`
	}
	if err := json.Unmarshal(data, &lp); err != nil {
		bc.t.Fatal(err)
	}
	bs, err := bundle.Parse(lp.Bundles)
	if err != nil {
		bc.t.Fatal(err)
	}
	data, _, err = bc.store.Get(ctx, "/namespace/"+ns+"/"+bs.ForTopic(topic).String())
	if err != nil {
		return ""
	}
	var od struct {
		NativeURL string `json:"nativeUrl"`
	}
	if err := json.Unmarshal(data, &od); err != nil {
		bc.t.Fatal(err)
	}
	return od.NativeURL
}

// checkSingleOwner asserts, for each topic, that it has an owner in the
// metadata store, that every live broker's HTTP lookup names that owner,
// and that only the owner serves the topic's stats.
func (bc *brokerCluster) checkSingleOwner(topics []string) map[string]string {
	return bc.checkOwners(topics, true, false)
}

// checkOwners is checkSingleOwner; without stats it checks only the owner
// node and the lookups (for topics not created yet).
// With lenient, a broker may fail to answer a lookup (it is reconnecting
// to the metadata store) but must not name another owner, and at most one
// broker may serve the topic.
func (bc *brokerCluster) checkOwners(topics []string, stats, lenient bool) map[string]string {
	bc.t.Helper()
	owners := map[string]string{}
	for _, tp := range topics {
		o := bc.owner(tp)
		if o == "" {
			bc.t.Fatalf("%s has no owner node", tp)
		}
		owners[tp] = o
		path := strings.Replace(tp, "://", "/", 1)
		serving := 0
		for _, b := range bc.brokers {
			select {
			case <-b.exited:
				continue
			default:
			}
			code, _, body := httpDo(bc.t, "GET", b.http+"/lookup/v2/topic/"+path, "", true)
			var ld struct {
				BrokerURL string `json:"brokerUrl"`
			}
			_ = json.Unmarshal(body, &ld)
			if lenient && code != 200 {
				continue
			}
			if code != 200 || ld.BrokerURL != o {
				bc.t.Fatalf("lookup of %s on %s: %d %s, want owner %s", tp, b.service, code, body, o)
			}
			if !stats {
				continue
			}
			if code, _, _ := httpDo(bc.t, "GET", b.http+"/admin/v2/"+path+"/stats", "", false); code == 200 {
				serving++
				if b.service != o {
					bc.t.Fatalf("%s serves %s, owned by %s", b.service, tp, o)
				}
			}
		}
		if stats && (serving > 1 || serving == 0 && !lenient) {
			bc.t.Fatalf("%s served by %d brokers, want exactly 1", tp, serving)
		}
	}
	return owners
}

// Three brokers, three bookies: clients given one broker's URL are
// redirected to the owners of a partitioned topic's partitions, spread
// over the brokers; each partition has exactly one serving owner; an
// unowned bundle's lookup on a follower redirects to the leader.
func TestClusterBrokersLookupRedirect(t *testing.T) {
	bc := startBrokerCluster(t, 3, 3, "--load-shedding-interval", "-1s")
	bc.createNamespace("public/spread", 16)
	const topic = "persistent://public/spread/orders"
	const parts = 12
	if code, _, body := httpDo(t, "PUT", bc.brokers[1].http+"/admin/v2/persistent/public/spread/orders/partitions", fmt.Sprint(parts), true); code != 204 {
		t.Fatalf("create partitioned topic: %d %s", code, body)
	}
	pc := newClusterClient(t, bc.brokers[0].service)
	cc := newClusterClient(t, bc.brokers[2].service)
	cons, err := cc.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	prod, err := pc.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	const n = 600
	for i := range n {
		if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(payload(i)), Key: fmt.Sprint(i)}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	seen := receiveUntil(t, cons, 60*time.Second, func(s map[string]int) bool { return len(s) == n })
	for i := range n {
		if seen[payload(i)] == 0 {
			t.Fatalf("message %d not received", i)
		}
	}
	var topics []string
	for i := range parts {
		topics = append(topics, fmt.Sprintf("%s-partition-%d", topic, i))
	}
	owners := bc.checkSingleOwner(topics)
	distinct := map[string]bool{}
	for _, o := range owners {
		distinct[o] = true
	}
	if len(distinct) < 2 {
		t.Fatalf("all %d partitions on one broker: %v", parts, owners)
	}
	// Topic admin calls on a broker that does not own the topic answer
	// 307 to the owner, as Pulsar's; followed, they reach its stats.
	for _, tp := range topics[:4] {
		owner := bc.byService(owners[tp])
		path := "/admin/v2/" + strings.Replace(tp, "://", "/", 1) + "/stats"
		for _, b := range bc.brokers {
			if b == owner {
				continue
			}
			code, hdr, body := httpDo(t, "GET", b.http+path, "", false)
			if code != 307 || !strings.HasPrefix(hdr.Get("Location"), owner.http+path) {
				t.Fatalf("stats of %s on non-owner %s: %d %q %s, want 307 to %s", tp, b.http, code, hdr.Get("Location"), body, owner.http)
			}
			code, _, body = httpDo(t, "GET", b.http+path, "", true)
			if code != 200 || !strings.Contains(string(body), `"subscriptions"`) {
				t.Fatalf("stats of %s through %s: %d %s", tp, b.http, code, body)
			}
		}
	}
	// The console follows ownership too: a topic page on a non-owner
	// redirects to the owner's console, which shows the topic; the
	// brokers page lists every broker and the bundles' owners.
	for _, tp := range topics[:2] {
		owner := bc.byService(owners[tp])
		page := "/console/topics/" + strings.Replace(tp, "://", "/", 1)
		for _, b := range bc.brokers {
			code, hdr, body := httpDo(t, "GET", b.http+page, "", false)
			switch {
			case b == owner && (code != 200 || !strings.Contains(string(body), tp)):
				t.Fatalf("console of %s on its owner: %d %.300s", tp, code, body)
			case b != owner && (code != 307 || hdr.Get("Location") != owner.http+page):
				t.Fatalf("console of %s on non-owner %s: %d %q, want 307 to %s", tp, b.http, code, hdr.Get("Location"), owner.http+page)
			}
		}
	}
	code, _, body := httpDo(t, "GET", bc.brokers[0].http+"/console/brokers", "", true)
	if code != 200 || strings.Count(string(body), "<tr data-broker=") != len(bc.brokers) || !strings.Contains(string(body), `id="bundles"`) {
		t.Fatalf("console brokers page: %d %.2000s", code, body)
	}
	for o := range distinct {
		if !strings.Contains(string(body), "<td>"+bc.byService(o).http+"</td>") {
			t.Fatalf("bundle owner %s not on the console's brokers page", bc.byService(o).http)
		}
	}
	// The partitioned topic's own calls are answered by any broker.
	for _, b := range bc.brokers {
		code, _, body := httpDo(t, "GET", b.http+"/admin/v2/persistent/public/spread/orders/partitions", "", false)
		if code != 200 || !strings.Contains(string(body), fmt.Sprintf(`"partitions":%d`, parts)) {
			t.Fatalf("partitions on %s: %d %s", b.http, code, body)
		}
	}

	// An unowned bundle: a follower redirects to the leader
	// (non-authoritative), which places the bundle and redirects to the
	// chosen broker (authoritative), which takes it.
	bc.createNamespace("public/fresh", 4)
	code, _, body = httpDo(t, "GET", bc.brokers[0].http+"/admin/v2/brokers/leaderBroker", "", true)
	var li struct {
		ServiceURL string `json:"serviceUrl"`
	}
	if code != 200 || json.Unmarshal(body, &li) != nil {
		t.Fatalf("leaderBroker: %d %s", code, body)
	}
	var follower *proc
	for _, b := range bc.brokers {
		if b.http != li.ServiceURL {
			follower = b
		}
	}
	code, hdr, body := httpDo(t, "GET", follower.http+"/lookup/v2/topic/persistent/public/fresh/t1", "", false)
	if code != 307 || !strings.HasPrefix(hdr.Get("Location"), li.ServiceURL+"/lookup/v2/topic/persistent/public/fresh/t1?authoritative=false") {
		t.Fatalf("follower lookup of an unowned bundle: %d %q %s, want 307 to leader %s", code, hdr.Get("Location"), body, li.ServiceURL)
	}
	code, _, body = httpDo(t, "GET", hdr.Get("Location"), "", true)
	if code != 200 || !strings.Contains(string(body), "pulsar://127.0.0.1:") {
		t.Fatalf("following the redirect: %d %s", code, body)
	}
	bc.checkOwners([]string{"persistent://public/fresh/t1"}, false, false)

	// Health (a real write and read through the bookies) and readiness.
	for _, b := range bc.brokers {
		for _, path := range []string{"/admin/v2/brokers/health", "/admin/v2/brokers/ready"} {
			if code, _, body := httpDo(t, "GET", b.http+path, "", true); code != 200 || string(body) != "ok" {
				t.Fatalf("%s on %s: %d %s", path, b.http, code, body)
			}
		}
	}
	// The admin CLI's cluster verbs.
	if out := runAdmin(t, bc.brokers[0], false, "brokers", "list", "magnetar"); strings.Count(out, "127.0.0.1:") != 3 {
		t.Fatalf("brokers list:\n%s", out)
	}
	if out := runAdmin(t, bc.brokers[0], false, "brokers", "leader-broker"); !strings.Contains(out, li.ServiceURL) {
		t.Fatalf("brokers leader-broker:\n%s", out)
	}
	if out := runAdmin(t, bc.brokers[1], false, "broker-stats", "load-report"); !strings.Contains(out, "pulsarServiceUrl") {
		t.Fatalf("broker-stats load-report:\n%s", out)
	}
	// Bundles and load reports.
	code, _, body = httpDo(t, "GET", bc.brokers[2].http+"/admin/v2/namespaces/public/spread/bundles", "", true)
	if code != 200 || !strings.Contains(string(body), `"numBundles":16`) {
		t.Fatalf("bundles: %d %s", code, body)
	}
	code, _, body = httpDo(t, "GET", bc.brokers[1].http+"/admin/v2/broker-stats/load-report", "", true)
	if code != 200 || !strings.Contains(string(body), `"loadReportType":"LocalBrokerData"`) {
		t.Fatalf("load report: %d %s", code, body)
	}
}

// ackedLog records what a producer had acknowledged, in order, and when
// and in which ledger each was acknowledged.
type ackedLog struct {
	mu    sync.Mutex
	acked map[string][]string // producer -> payloads in ack order
	times map[string][]ackAt  // producer -> one per acked, same order
	wake  chan struct{}       // made by waitAck, signalled by add
}

// ackAt is when (in the producer's process) a message was acknowledged,
// and the ledger of its message id.
type ackAt struct {
	at     time.Time
	ledger int64
}

func (a *ackedLog) add(prod, p string, at ackAt) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.acked[prod] = append(a.acked[prod], p)
	if a.times == nil {
		a.times = map[string][]ackAt{}
	}
	a.times[prod] = append(a.times[prod], at)
	if a.wake != nil {
		select {
		case a.wake <- struct{}{}:
		default:
		}
	}
}

func (a *ackedLog) total() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, l := range a.acked {
		n += len(l)
	}
	return n
}

// bodyOf is the payload of message i of producer name: recognisable
// bytes that differ per message.
func bodyOf(name string, i int) []byte {
	b := fmt.Appendf(nil, "%s-%08d-", name, i)
	for j := range 64 + i%200 {
		b = append(b, byte(i*31+j*7))
	}
	return b
}

// runProducers sends from each producer until stop closes, one message at
// a time (so per-producer order is the send order), recording acks.
func runProducers(t testing.TB, url string, topic string, names []string, stop <-chan struct{}, log *ackedLog) *sync.WaitGroup {
	return runProducersWindow(t, url, topic, names, 1, stop, log)
}

// runProducersWindow is runProducers with up to window sends of each
// producer in flight (asynchronous sends; the client acknowledges them in
// send order).
func runProducersWindow(t testing.TB, url string, topic string, names []string, window int, stop <-chan struct{}, log *ackedLog) *sync.WaitGroup {
	// The producers run in a child process (this test binary, see
	// runChildProducer): pulsar-client-go v0.19 races with itself when a
	// send meets a reconnect (producer_partition.go grabCnx), which the
	// race detector would report in this process while bundles move. The
	// child prints each acknowledged body; a failed send is a test error.
	var wg sync.WaitGroup
	for _, name := range names {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), childProducerEnv+"="+strings.Join([]string{url, topic, name, fmt.Sprint(window)}, "\x1f"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			stopped := make(chan struct{})
			go func() {
				select {
				case <-stop:
					cmd.Process.Signal(syscall.SIGTERM)
				case <-stopped:
				}
			}()
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				line := sc.Text()
				if rest, ok := strings.CutPrefix(line, "ACK "); ok {
					var h string
					var ledgerID, nanos int64
					_, serr := fmt.Sscan(rest, &h, &ledgerID, &nanos)
					body, err := hex.DecodeString(h)
					if serr != nil || err != nil {
						t.Errorf("producer %s: bad line %q", name, line)
						continue
					}
					log.add(name, string(body), ackAt{at: time.Unix(0, nanos), ledger: ledgerID})
				} else if msg, ok := strings.CutPrefix(line, "ERR "); ok {
					t.Errorf("producer %s: %s", name, msg)
				}
			}
			close(stopped)
			cmd.Wait()
		}()
	}
	return &wg
}

// childProducerEnv makes the test binary a producer child:
// "serviceURL\x1ftopic\x1fname\x1fwindow".
const childProducerEnv = "MAGNETAR_TEST_CHILD_PRODUCER"

// runChildProducer sends bodyOf(name, i) for i = 0, 1, ... until SIGTERM,
// up to window at a time, printing "ACK hex(body) ledgerId unixNanos"
// after each acknowledgement ("ERR ..." on failure).
func runChildProducer(spec string) int {
	f := strings.Split(spec, "\x1f")
	window, _ := strconv.Atoi(f[3])
	cl, err := pulsar.NewClient(pulsar.ClientOptions{URL: f[0], OperationTimeout: 60 * time.Second,
		ConnectionTimeout: 5 * time.Second, KeepAliveInterval: 2 * time.Second, Logger: plog.DefaultNopLogger()})
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	defer cl.Close()
	prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: f[1], Name: f[2], DisableBatching: true,
		SendTimeout: 60 * time.Second, MaxPendingMessages: 64})
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	defer prod.Close()
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	if window > 1 {
		return sendWindowed(prod, f[2], window, term, w)
	}
	for i := 0; ; i++ {
		select {
		case <-term:
			return 0
		default:
		}
		body := bodyOf(f[2], i)
		id, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: body})
		if err != nil {
			fmt.Fprintln(w, "ERR send", i, err)
			return 1
		}
		printAck(w, body, id)
	}
}

// printAck prints the ACK line of runChildProducer.
func printAck(w *bufio.Writer, body []byte, id pulsar.MessageID) {
	fmt.Fprintln(w, "ACK", hex.EncodeToString(body), id.LedgerID(), time.Now().UnixNano())
	w.Flush()
}

// sendWindowed is runChildProducer's loop with window sends in flight.
func sendWindowed(prod pulsar.Producer, name string, window int, term <-chan os.Signal, w *bufio.Writer) int {
	slots := make(chan struct{}, window)
	var mu sync.Mutex
	failed := make(chan struct{})
	var once sync.Once
	for i := 0; ; i++ {
		select {
		case <-term:
			_ = prod.FlushWithCtx(context.Background()) // the acks print from the callbacks
			return 0
		case <-failed:
			return 1
		case slots <- struct{}{}:
		}
		body := bodyOf(name, i)
		prod.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: body}, func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				fmt.Fprintln(w, "ERR send", i, err)
				w.Flush()
				once.Do(func() { close(failed) })
				return
			}
			printAck(w, body, id)
			<-slots
		})
	}
}

// checkDelivered reads the topic from the start and asserts that every
// acked message arrives byte for byte, each producer's in order; it
// returns the number of duplicates seen.
func checkDelivered(t testing.TB, cl pulsar.Client, topic, sub string, log *ackedLog) int {
	t.Helper()
	cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	want := map[string]bool{}
	for _, l := range log.acked {
		for _, p := range l {
			want[p] = true
		}
	}
	got := map[string]int{}
	order := map[string][]string{}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	missing := len(want)
	for missing > 0 {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("receive with %d acked messages missing: %v", missing, err)
		}
		p := string(m.Payload())
		if got[p] == 0 {
			name := p[:strings.IndexByte(p, '-')]
			order[name] = append(order[name], p)
			if want[p] {
				missing--
			}
		}
		got[p]++
		cons.Ack(m)
	}
	dups := 0
	for _, c := range got {
		dups += c - 1
	}
	for name, acked := range log.acked {
		// Acked messages appear in the producer's order among its
		// first deliveries (unacked ones may be interleaved).
		seq := order[name]
		j := 0
		for _, p := range seq {
			if j < len(acked) && p == acked[j] {
				j++
			}
		}
		if j != len(acked) {
			t.Fatalf("producer %s: acked messages out of order or lost: matched %d of %d in delivery order", name, j, len(acked))
		}
		// Byte for byte: payloads carry their index; the body must match.
		for i, p := range acked {
			if !bytes.Equal([]byte(p), bodyOf(name, i)) {
				t.Fatalf("producer %s acked message %d differs", name, i)
			}
		}
	}
	return dups
}

// waitAcked waits until log holds at least n acknowledged messages.
func waitAcked(t testing.TB, log *ackedLog, n int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for log.total() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d messages acknowledged after %v", log.total(), n, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (bc *brokerCluster) byService(url string) *proc {
	for _, b := range bc.brokers {
		if b.service == url {
			return b
		}
	}
	bc.t.Fatalf("no broker %s", url)
	return nil
}

// SIGKILL the owner of a topic while Go clients produce on it: they
// continue on another broker; every acknowledged message is delivered
// byte for byte, in each producer's order.
func TestClusterBrokerFailoverSIGKILL(t *testing.T) {
	bc := startBrokerCluster(t, 3, 3, "--load-shedding-interval", "-1s")
	bc.createNamespace("public/fo", 4)
	const topic = "persistent://public/fo/failover"
	cl := newClusterClient(t, bc.serviceURL())
	log := &ackedLog{acked: map[string][]string{}}
	stop := make(chan struct{})
	wg := runProducers(t, bc.serviceURL(), topic, []string{"pa", "pb"}, stop, log)
	waitAcked(t, log, 300, 60*time.Second)
	owner := bc.owner(topic)
	victim := bc.byService(owner)
	victim.kill()
	before := log.total()
	t0 := time.Now()
	waitAcked(t, log, before+300, 90*time.Second)
	t.Logf("failover: %d more acks %v after SIGKILL", log.total()-before, time.Since(t0))
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
	bc.checkSingleOwner([]string{topic})
}

var _ = slices.Contains[[]string]
