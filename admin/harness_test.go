package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/mledger/memstore"
)

// testBroker is a broker with the admin API, started in-process on
// 127.0.0.1:0 over an embedded metadata store and in-memory ledgers.
type testBroker struct {
	*broker.Broker
	factory *mledger.Factory
	url     string
}

type brokerOpts struct {
	cfg     func(*broker.Config)
	mcfg    mledger.Config
	bookies broker.BookieInfo
}

func startBroker(t testing.TB, mut func(*broker.Config)) *testBroker {
	t.Helper()
	return startBrokerOpts(t, brokerOpts{cfg: mut})
}

func startBrokerOpts(t testing.TB, o brokerOpts) *testBroker {
	t.Helper()
	meta, err := embedded.Open(filepath.Join(t.TempDir(), "meta"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := mledger.NewFactory(mledger.Options{Ledgers: memstore.New(), Metadata: meta})
	if err != nil {
		t.Fatal(err)
	}
	level := slog.LevelWarn
	if os.Getenv("BROKER_DEBUG") != "" {
		level = slog.LevelDebug
	}
	cfg := broker.Config{
		ServiceAddr:    "127.0.0.1:0",
		HTTPAddr:       "127.0.0.1:0",
		AdvertisedHost: "127.0.0.1",
		MaxMessageSize: 1 << 20,
		Logger:         slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
	}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	b, err := broker.New(cfg, broker.Deps{Metadata: meta, OpenLedger: broker.LedgerOpener(f, o.mcfg), Bookies: o.bookies})
	if err != nil {
		t.Fatal(err)
	}
	Register(b.Router(), b)
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("broker close: %v", err)
		}
		f.Close()
		meta.Close()
	})
	return &testBroker{Broker: b, factory: f, url: "pulsar://" + b.ServiceAddr()}
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

func adminClient(t testing.TB, tb *testBroker) pulsaradmin.Client {
	t.Helper()
	c, err := pulsaradmin.NewClient(&pulsaradmin.Config{WebServiceURL: "http://" + tb.HTTPAddr()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func httpDo(t testing.TB, tb *testBroker, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+tb.HTTPAddr()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var topicSeq int

func newTopicName(prefix string) string {
	topicSeq++
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1000000, topicSeq)
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
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func mustTopic(t testing.TB, s string) utils.TopicName {
	t.Helper()
	tn, err := utils.GetTopicName(s)
	if err != nil {
		t.Fatal(err)
	}
	return *tn
}

func mustNS(t testing.TB, s string) utils.NameSpaceName {
	t.Helper()
	ns, err := utils.GetNamespaceName(s)
	if err != nil {
		t.Fatal(err)
	}
	return *ns
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
