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

	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/memmeta"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/mledger/memstore"
)

// testBroker is a broker started in-process on 127.0.0.1:0 over
// in-memory stores (by default).
type testBroker struct {
	*Broker
	opts    brokerOpts
	meta    metadata.Store
	ledgers mledger.LedgerStore
	factory *mledger.Factory
	url     string
}

// brokerOpts configures a test broker; the zero value runs the defaults
// over a new in-memory metadata store and ledger store.
type brokerOpts struct {
	cfg       func(*brokerconf.Config)
	meta      metadata.Store      // default memmeta.New()
	ledgers   mledger.LedgerStore // default memstore.New()
	cacheSize int64               // the entry cache's bytes (0: the default)
	mlc       mledger.Config      // managed ledger settings (e.g. a small MaxEntriesPerLedger)
	use       []func(*Broker) error
}

func startBroker(t testing.TB, mut func(*brokerconf.Config)) *testBroker {
	t.Helper()
	return startBrokerOpts(t, brokerOpts{cfg: mut})
}

// restart closes tb and starts a new broker over the same stores with
// the same options.
func (tb *testBroker) restart(t testing.TB) *testBroker {
	t.Helper()
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tb.factory.Close(); err != nil {
		t.Fatal(err)
	}
	return startBrokerOpts(t, tb.opts)
}

// startBrokerOpts starts the broker o describes; o.use registers
// features before Start.
func startBrokerOpts(t testing.TB, o brokerOpts) *testBroker {
	t.Helper()
	if o.meta == nil {
		o.meta = memmeta.New()
	}
	if o.ledgers == nil {
		o.ledgers = memstore.New()
	}
	f, err := mledger.NewFactory(mledger.Options{Ledgers: o.ledgers, Metadata: o.meta, CacheSize: o.cacheSize})
	if err != nil {
		t.Fatal(err)
	}
	level := slog.LevelWarn
	if os.Getenv("BROKER_DEBUG") != "" {
		level = slog.LevelDebug
	}
	cfg := brokerconf.Config{
		ServiceAddr:    "127.0.0.1:0",
		HTTPAddr:       "127.0.0.1:0",
		AdvertisedHost: "127.0.0.1",
		MaxMessageSize: 1 << 20,
		Logger:         slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
	}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	b, err := New(cfg, Deps{Metadata: o.meta, OpenLedger: storage.Opener(f, o.mlc)})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range o.use {
		if err := u(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	tb := &testBroker{Broker: b, opts: o, meta: o.meta, ledgers: o.ledgers, factory: f, url: "pulsar://" + b.ServiceAddr()}
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
