package admin

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/bookieinfo"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/dynconfig"
	"github.com/magnetar-mq/magnetar/internal/testenv"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/mledger/memstore"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/schemareg"
	"github.com/magnetar-mq/magnetar/txn/server"
)

// testBroker is a broker of the test kit (broker/brokertest) with the
// admin API, started in-process on 127.0.0.1:0 over an embedded metadata
// store and in-memory ledgers.
type testBroker struct {
	*broker.Broker
	kit     *brokertest.Broker
	factory *mledger.Factory
	schemas *schemareg.Registry
	url     string
	// web is the http:// base URL the tests' requests go to: a proxy in
	// front of the broker's HTTP listener that checks every error answer
	// (checkErrorBodies).
	web     string
	metaDir string
	// stop closes the broker, its ledgers and its metadata store (once;
	// also when the test ends).
	stop func()
}

type brokerOpts struct {
	cfg func(*brokerconf.Config)
	// txn turns transactions on (txn/server) with this config.
	txn *server.Config
	// noSchemas runs the broker without its schema registry.
	noSchemas bool
	mcfg      mledger.Config
	// ledgers hold the ledgers (default a new in-memory store).
	ledgers *memstore.Store
	bookies bookieinfo.Source
	metaDir string // the embedded metadata store's directory (default t.TempDir())
	// versionCheck is the file's clientLibraryVersionCheckEnabled.
	versionCheck bool
	// register declares more routes (console, function worker) before
	// the broker starts.
	register func(*broker.Broker, *embedded.Store)
}

func startBroker(t testing.TB, mut func(*brokerconf.Config)) *testBroker {
	t.Helper()
	return startBrokerOpts(t, brokerOpts{cfg: mut})
}

func startBrokerOpts(t testing.TB, o brokerOpts) *testBroker {
	t.Helper()
	tb := newTestBroker(t, o)
	if err := tb.kit.Run(); err != nil {
		t.Fatal(err)
	}
	tb.url = tb.kit.URL
	if tb.HTTPAddr() != "" {
		tb.web = checkErrorBodies(t, tb.HTTPAddr(), tb.metaDir)
	}
	return tb
}

// newTestBroker builds the broker of o (broker/brokertest) with the
// admin API's routes declared, not started; it is closed when the test
// ends.
func newTestBroker(t testing.TB, o brokerOpts) *testBroker {
	t.Helper()
	tb := &testBroker{}
	kit, err := brokertest.New(t, brokertest.Options{
		Config: o.cfg, Ledger: o.mcfg, Ledgers: o.ledgers, MetaDir: o.metaDir,
		Bookies: o.bookies, NoSchemas: o.noSchemas,
		Wire: func(b *brokertest.Broker) (func(), error) { return tb.wire(b, o) },
	})
	if err != nil {
		t.Fatal(err)
	}
	tb.kit, tb.Broker, tb.factory, tb.schemas = kit, kit.Broker, kit.Factory, kit.Schemas
	tb.metaDir = kit.MetaDir()
	tb.stop = func() { kit.Stop(t) }
	return tb
}

// wire declares the admin API (and o's transactions and routes) on b.
func (tb *testBroker) wire(b *brokertest.Broker, o brokerOpts) (func(), error) {
	deps := BrokerDeps(b.Broker)
	deps.Bookies = o.bookies
	deps.Offloads = b.Tiered
	if b.Schemas != nil {
		deps.Schemas = b.Schemas
	}
	if o.txn != nil {
		txs, err := server.Enable(b.Broker, *o.txn)
		if err != nil {
			return nil, err
		}
		deps.Coordinators, deps.Participants = txs, txs
	}
	dyn := dynconfig.New(b.Meta, b.Policies(), dynconfig.Options{})
	if err := dyn.Start(context.Background()); err != nil {
		return nil, err
	}
	deps.Config, deps.Quotas = dyn, cluster.NewQuotas(b.Meta)
	deps.ClientLibraryVersionCheck = o.versionCheck
	Register(b.Router(), deps)
	if o.register != nil {
		o.register(b.Broker, b.Meta.(*embedded.Store))
	}
	return dyn.Close, nil
}

// restartable is a broker whose metadata (an embedded store in its own
// directory) and ledgers (in memory) outlive it, so a restart keeps both.
type restartable struct {
	opts brokerOpts
	cur  *testBroker
}

func startRestartable(t *testing.T) (*restartable, *testBroker) {
	t.Helper()
	r := &restartable{opts: brokerOpts{metaDir: t.TempDir(), ledgers: memstore.New()}}
	r.cur = startBrokerOpts(t, r.opts)
	return r, r.cur
}

// restart stops the broker and starts another on the same metadata and
// ledgers.
func (r *restartable) restart(t *testing.T) *testBroker {
	t.Helper()
	r.cur.stop()
	r.cur = startBrokerOpts(t, r.opts)
	return r.cur
}

// AppliedPolicies returns the policy a topic enforces now (loading it),
// nil when it cannot be loaded.
func (tb *testBroker) AppliedPolicies(topic string) *policy.Resolved {
	t, err := tb.Topic(context.Background(), topic)
	if err != nil {
		return nil
	}
	return t.EffectivePolicy()
}

// HeldSends returns the number of SENDs a backlog quota holds on a
// topic (0 when it cannot be loaded).
func (tb *testBroker) HeldSends(topic string) int {
	t, err := tb.Topic(context.Background(), topic)
	if err != nil {
		return 0
	}
	return t.HeldSends()
}

func (tb *testBroker) client(t testing.TB) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{
		URL:               tb.url,
		OperationTimeout:  5 * time.Second,
		ConnectionTimeout: 5 * time.Second,
		Logger:            plog.DefaultNopLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// startAdmin starts a broker with the default configuration and returns
// it with a pulsaradmin client on its admin API: how most tests begin.
func startAdmin(t testing.TB) (*testBroker, pulsaradmin.Client) {
	t.Helper()
	tb := startBroker(t, nil)
	return tb, adminClient(t, tb)
}

func adminClient(t testing.TB, tb *testBroker) pulsaradmin.Client {
	t.Helper()
	c, err := pulsaradmin.NewClient(&pulsaradmin.Config{WebServiceURL: tb.web})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func httpDo(t testing.TB, tb *testBroker, method, path, body string) (int, string) {
	t.Helper()
	return httpDoAs(t, tb, "", method, path, body)
}

// httpDoAs is httpDo with an Authorization header ("": none); a body is
// sent as JSON.
func httpDoAs(t testing.TB, tb *testBroker, authz, method, path, body string) (int, string) {
	t.Helper()
	var h http.Header
	if authz != "" {
		h = http.Header{"Authorization": {authz}}
	}
	return httpDoAt(t, tb.web, h, method, path, body)
}

// httpDirect is httpDo to the broker's own listener, not through the
// checking proxy: for tests of what the HTTP server itself refuses (the
// proxy would answer for it).
func httpDirect(t testing.TB, tb *testBroker, method, path, body string) (int, string) {
	t.Helper()
	return httpDoAt(t, "http://"+tb.HTTPAddr(), nil, method, path, body)
}

// httpDoAt sends a request to the server at base with the headers h (a
// header set to "" is not sent: User-Agent ""); a body is sent as JSON.
func httpDoAt(t testing.TB, base string, h http.Header, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var nameSeq atomic.Int64

// uniqueName is prefix made unique in the test binary's run.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1000000, nameSeq.Add(1))
}

// mustHTTP runs a request and fails unless it answers want.
func mustHTTP(t testing.TB, tb *testBroker, method, path, body string, want int) string {
	t.Helper()
	code, out := httpDo(t, tb, method, path, body)
	if code != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, code, out, want)
	}
	return out
}

// adminPath is the admin API's path of a topic:
// persistent://t/ns/x is /admin/v2/persistent/t/ns/x.
func adminPath(topic string) string {
	domain, rest, _ := strings.Cut(topic, "://")
	return "/admin/v2/" + domain + "/" + rest
}

// newTopic creates persistent://public/default/<prefix, made unique>
// and returns its name and admin path.
func newTopic(t testing.TB, tb *testBroker, prefix string) (topic, path string) {
	t.Helper()
	topic = "persistent://public/default/" + uniqueName(prefix)
	mustHTTP(t, tb, "PUT", adminPath(topic), "", http.StatusNoContent)
	return topic, adminPath(topic)
}

// newNamespace creates public/<unique> and returns it.
func newNamespace(t testing.TB, tb *testBroker) string {
	t.Helper()
	ns := "public/" + uniqueName("ns")
	mustHTTP(t, tb, "PUT", "/admin/v2/namespaces/"+ns, "", http.StatusNoContent)
	return ns
}

// within reports whether got is want within the fraction tol.
func within(got, want, tol float64) bool {
	return got >= want*(1-tol) && got <= want*(1+tol)
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func receiveN(t testing.TB, c pulsar.Consumer, n int) []pulsar.Message {
	t.Helper()
	ctx := ctxT(t)
	var out []pulsar.Message
	for len(out) < n {
		m, err := c.Receive(ctx)
		if err != nil {
			t.Fatalf("receive %d/%d: %v", len(out), n, err)
		}
		out = append(out, m)
	}
	return out
}

// waitUntil polls cond (a state observation, not a timer) until it holds.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, 0, what, cond)
}

func mustTopic(t testing.TB, s string) utils.TopicName {
	t.Helper()
	tn, err := utils.GetTopicName(s)
	return deref(t, tn, err)
}

func mustNS(t testing.TB, s string) utils.NameSpaceName {
	t.Helper()
	ns, err := utils.GetNamespaceName(s)
	return deref(t, ns, err)
}

// deref returns *v, failing the test on err.
func deref[T any](t testing.TB, v *T, err error) T {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return *v
}

// subscribedTopic creates the non-partitioned topic with a durable
// subscription sub at the earliest message.
func subscribedTopic(t testing.TB, ac pulsaradmin.Client, topic, sub string) utils.TopicName {
	t.Helper()
	tn := mustTopic(t, topic)
	if err := ac.Topics().Create(tn, 0); err != nil {
		t.Fatal(err)
	}
	if err := ac.Subscriptions().Create(tn, sub, utils.Earliest); err != nil {
		t.Fatal(err)
	}
	return tn
}

// reasonOf decodes Pulsar's {"reason": ...} error body.
func reasonOf(t testing.TB, body string) string {
	t.Helper()
	var e struct {
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Reason == "" {
		t.Fatalf("error body %q is not {\"reason\":...}", body)
	}
	return e.Reason
}

// tokenSecurity is the security of the secured test brokers: token
// authentication with key k, authorization, superuser root.
func tokenSecurity(k []byte) *auth.Config {
	sc := auth.DefaultConfig()
	sc.AuthenticationEnabled, sc.AuthorizationEnabled = true, true
	sc.AuthenticationProviders = []string{"token"}
	sc.TokenSecretKey = "data:;base64," + base64.StdEncoding.EncodeToString(k)
	sc.SuperUserRoles = []string{"root"}
	return &sc
}

// fillPattern puts values into a route pattern's wildcards (others get
// def).
func fillPattern(pattern string, values map[string]string, def string) string {
	segs := strings.Split(pattern, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, "{") {
			v, ok := values[strings.TrimSuffix(strings.Trim(s, "{}"), "...")]
			if !ok {
				v = def
			}
			segs[i] = v
		}
	}
	return strings.Join(segs, "/")
}

// checkErrorBodies starts a reverse proxy to the HTTP listener at addr
// and returns its base URL. Every answer of status 400 or more that
// passes through it is checked for internal text (internalTextIn, with
// the broker's metadata directory metaDir); the test fails, when it
// ends, naming each request whose answer had some (issue 31 item 6: the
// internal details of an error stay in the broker's log). Requests the
// tests send through the harness (httpDo, httpDoAs, mustHTTP,
// adminClient, web) all pass through it, so a leak on any route any
// test reaches fails a test.
func checkErrorBodies(t testing.TB, addr, metaDir string) string {
	t.Helper()
	ec, err := newErrorCheck(addr, metaDir)
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last first: the proxy stops, then the leaks are told.
	t.Cleanup(func() {
		for _, l := range ec.leaks() {
			t.Errorf("error answer with internal text: %s", l)
		}
	})
	t.Cleanup(func() { ec.srv.Close() })
	return ec.url
}

// errorCheck is the checking proxy of checkErrorBodies.
type errorCheck struct {
	url string
	srv *http.Server
	mu  sync.Mutex
	got []string
}

func newErrorCheck(addr, metaDir string) (*errorCheck, error) {
	target := &url.URL{Scheme: "http", Host: addr}
	ec := &errorCheck{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host // the broker judges origins by the address the client used
		},
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode < 400 {
				return nil
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return err
			}
			if what := internalTextIn(string(b), metaDir); what != "" {
				ec.mu.Lock()
				ec.got = append(ec.got, fmt.Sprintf("%s %.120s: %d names %s: %.300s", resp.Request.Method, resp.Request.URL.RequestURI(), resp.StatusCode, what, b))
				ec.mu.Unlock()
			}
			resp.Body = io.NopCloser(bytes.NewReader(b))
			resp.ContentLength = int64(len(b))
			resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
			return nil
		},
		ErrorLog: log.New(io.Discard, "", 0),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ec.srv = &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	go ec.srv.Serve(ln)
	ec.url = "http://" + ln.Addr().String()
	return ec, nil
}

// leaks returns the answers found with internal text so far.
func (ec *errorCheck) leaks() []string {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	return slices.Clone(ec.got)
}

// metadataPaths are the roots of the metadata store's paths.
var metadataPaths = []string{"/admin/policies", "/admin/topics", "/admin/partitioned-topics", "/schemas/",
	"/managed-ledgers", "/ledgers/", "/loadbalance", "/namespace/", "/admin/clusters"}

// internalMarkers are text only internal errors carry: the error
// prefixes of the storage and metadata packages, and a Go panic's.
var internalMarkers = []string{"mledger: ", "ledger: ", "metadata: ", "memstore: ", "embedded: ", "zookeeper: ",
	"goroutine ", "runtime error", "panic:"}

// metadataPathIn returns the first metadata path root body names ("" if
// none).
func metadataPathIn(body string) string {
	for _, p := range metadataPaths {
		if strings.Contains(body, p) {
			return p
		}
	}
	return ""
}

// internalTextIn returns what internal text body holds ("" if none): a
// metadata path, the metadata store's directory dir (when not empty), or
// an internal error's marker.
func internalTextIn(body, dir string) string {
	if p := metadataPathIn(body); p != "" {
		return "metadata path " + p
	}
	if dir != "" && strings.Contains(body, dir) {
		return "the metadata directory"
	}
	for _, m := range internalMarkers {
		if strings.Contains(body, m) {
			return "internal error text " + strconv.Quote(m)
		}
	}
	return ""
}
