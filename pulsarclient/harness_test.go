package pulsarclient_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/admin"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/mledger/memstore"
	"github.com/magnetar-mq/magnetar/pulsarclient"
)

// testBroker is a broker started in-process on 127.0.0.1:0 over an
// embedded metadata store and in-memory ledgers; restart keeps both. Its
// HTTP port serves the admin API and HTTP lookup, as the binary wires
// them (package admin), for clients given an http:// service URL.
type testBroker struct {
	*broker.Broker
	meta    *embedded.Store
	ledgers *memstore.Store
	factory *mledger.Factory
	mut     func(*broker.Config)
	url     string
}

func startBroker(t testing.TB, mut func(*broker.Config)) *testBroker {
	t.Helper()
	meta, err := embedded.Open(filepath.Join(t.TempDir(), "meta.db"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	return startOn(t, mut, meta, memstore.New(), "127.0.0.1:0")
}

func startOn(t testing.TB, mut func(*broker.Config), meta *embedded.Store, ledgers *memstore.Store, addr string) *testBroker {
	t.Helper()
	tb, err := tryStart(t, mut, meta, ledgers, addr)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func tryStart(t testing.TB, mut func(*broker.Config), meta *embedded.Store, ledgers *memstore.Store, addr string) (*testBroker, error) {
	f, err := mledger.NewFactory(mledger.Options{Ledgers: ledgers, Metadata: meta})
	if err != nil {
		return nil, err
	}
	level := slog.LevelWarn
	if os.Getenv("BROKER_DEBUG") != "" {
		level = slog.LevelDebug
	}
	cfg := broker.Config{
		ServiceAddr:    addr,
		HTTPAddr:       "127.0.0.1:0",
		AdvertisedHost: "127.0.0.1",
		MaxMessageSize: 1 << 20,
		Logger:         slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
	}
	if mut != nil {
		mut(&cfg)
	}
	b, err := broker.New(cfg, broker.Deps{Metadata: meta, OpenLedger: broker.LedgerOpener(f, mledger.Config{})})
	if err != nil {
		f.Close()
		return nil, err
	}
	admin.Register(b.Router(), admin.BrokerDeps(b))
	if err := b.Start(context.Background()); err != nil {
		b.Close()
		f.Close()
		return nil, err
	}
	tb := &testBroker{Broker: b, meta: meta, ledgers: ledgers, factory: f, mut: mut, url: "pulsar://" + b.ServiceAddr()}
	t.Cleanup(func() { tb.stop() })
	return tb, nil
}

func (tb *testBroker) stop() {
	if tb.Broker == nil {
		return
	}
	tb.Broker.Close()
	tb.factory.Close()
	tb.Broker = nil
}

// restart stops the broker and starts a new one on the same address over
// the same stores (retrying while the port is still held).
func (tb *testBroker) restart(t testing.TB) *testBroker {
	t.Helper()
	addr := tb.ServiceAddr()
	tb.stop()
	deadline := time.Now().Add(10 * time.Second)
	for {
		nb, err := tryStart(t, tb.mut, tb.meta, tb.ledgers, addr)
		if err == nil {
			return nb
		}
		if time.Now().After(deadline) {
			t.Fatalf("restart on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
func (tb *testBroker) client(t testing.TB, mut func(*pulsarclient.ClientOptions)) *pulsarclient.Client {
	t.Helper()
	o := pulsarclient.ClientOptions{URL: tb.url, OperationTimeout: 10 * time.Second, ConnectionTimeout: 5 * time.Second}
	if mut != nil {
		mut(&o)
	}
	c, err := pulsarclient.NewClient(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

var topicSeq atomic.Int64

func newTopic(prefix string) string {
	return fmt.Sprintf("persistent://public/default/%s-%d-%d", prefix, time.Now().UnixNano()%1e6, topicSeq.Add(1))
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
