package broker

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/memmeta"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/mledger/memstore"
)

// testBroker is a broker started in-process on 127.0.0.1:0 over the
// in-memory ledger store.
type testBroker struct {
	*Broker
	meta    *memmeta.Store
	ledgers *memstore.Store
	mut     func(*Config)
	factory *mledger.Factory
	mlc     mledger.Config // managed ledger settings (zero: defaults)
	url     string
}

func startBroker(t testing.TB, mut func(*Config)) *testBroker {
	t.Helper()
	return startBrokerOn(t, mut, memmeta.New(), memstore.New())
}

// restart closes tb and starts a new broker over the same stores.
func (tb *testBroker) restart(t testing.TB) *testBroker {
	t.Helper()
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tb.factory.Close(); err != nil {
		t.Fatal(err)
	}
	if tb.mlc != (mledger.Config{}) {
		return startBrokerMLC(t, tb.mut, tb.meta, tb.ledgers, tb.mlc)
	}
	return startBrokerOn(t, tb.mut, tb.meta, tb.ledgers)
}

// startBrokerMLC starts a broker over ledgers whose managed ledgers use
// mlc (e.g. a small MaxEntriesPerLedger to force rollovers); restart
// keeps mlc.
func startBrokerMLC(t testing.TB, mut func(*Config), meta *memmeta.Store, ledgers *memstore.Store, mlc mledger.Config) *testBroker {
	t.Helper()
	tb := startBrokerFull(t, mut, meta, ledgers, 0, mlc)
	tb.ledgers, tb.mlc = ledgers, mlc
	return tb
}

func startBrokerOn(t testing.TB, mut func(*Config), meta *memmeta.Store, ledgers *memstore.Store) *testBroker {
	t.Helper()
	tb := startBrokerStore(t, mut, meta, ledgers, 0)
	tb.ledgers = ledgers
	return tb
}

// startBrokerStore starts a broker whose managed ledgers live in store,
// with an entry cache of cacheSize bytes (0: the default).
func startBrokerStore(t testing.TB, mut func(*Config), meta *memmeta.Store, store mledger.LedgerStore, cacheSize int64) *testBroker {
	t.Helper()
	return startBrokerFull(t, mut, meta, store, cacheSize, mledger.Config{})
}

func startBrokerFull(t testing.TB, mut func(*Config), meta *memmeta.Store, store mledger.LedgerStore, cacheSize int64, mlc mledger.Config) *testBroker {
	t.Helper()
	tb := startBrokerMeta(t, mut, meta, store, cacheSize, mlc)
	tb.meta = meta
	return tb
}

// startBrokerMeta is startBrokerFull over any metadata store (tb.meta
// stays nil); use registers features before Start.
func startBrokerMeta(t testing.TB, mut func(*Config), meta metadata.Store, store mledger.LedgerStore, cacheSize int64, mlc mledger.Config, use ...func(*Broker) error) *testBroker {
	t.Helper()
	f, err := mledger.NewFactory(mledger.Options{Ledgers: store, Metadata: meta, CacheSize: cacheSize})
	if err != nil {
		t.Fatal(err)
	}
	level := slog.LevelWarn
	if os.Getenv("BROKER_DEBUG") != "" {
		level = slog.LevelDebug
	}
	cfg := Config{
		ServiceAddr:    "127.0.0.1:0",
		HTTPAddr:       "127.0.0.1:0",
		AdvertisedHost: "127.0.0.1",
		MaxMessageSize: 1 << 20,
		Logger:         slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
	}
	if mut != nil {
		mut(&cfg)
	}
	b, err := New(cfg, Deps{Metadata: meta, OpenLedger: LedgerOpener(f, mlc)})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range use {
		if err := u(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	tb := &testBroker{Broker: b, mut: mut, factory: f, url: "pulsar://" + b.ServiceAddr()}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("broker close: %v", err)
		}
		f.Close()
	})
	return tb
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

func TestE2EProduceConsume(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("basic")
	cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx := ctxT(t)
	var ids []pulsar.MessageID
	for i := 0; i < 10; i++ {
		id, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("m-%d", i)), Key: "k"})
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		ids = append(ids, id)
	}
	msgs := receiveN(t, cons, 10)
	for i, m := range msgs {
		if got, want := string(m.Payload()), fmt.Sprintf("m-%d", i); got != want {
			t.Fatalf("message %d = %q, want %q", i, got, want)
		}
		if m.ID().LedgerID() != ids[i].LedgerID() || m.ID().EntryID() != ids[i].EntryID() {
			t.Fatalf("message %d id %v, send receipt id %v", i, m.ID(), ids[i])
		}
		if m.Key() != "k" {
			t.Fatalf("key = %q", m.Key())
		}
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
}
