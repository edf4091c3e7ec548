package server

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
	"github.com/magnetar-mq/magnetar/txn"
	"github.com/magnetar-mq/magnetar/txn/coordinator"
)

// The tests run brokers from broker/brokertest with transactions on;
// testBroker adds the Server the broker registered.

type position = storage.Position

type testBroker struct {
	*brokertest.Broker
	txs    *Server
	url    string
	holder *serverHolder
}

// serverHolder receives the Server each (re)start registers.
type serverHolder struct{ s *Server }

func startTxnBroker(t testing.TB, o brokertest.Options, cfg Config) *testBroker {
	t.Helper()
	h := &serverHolder{}
	o.Features = func(b *broker.Broker) error {
		s, err := Enable(b, cfg)
		h.s = s
		return err
	}
	b := brokertest.Start(t, o)
	return &testBroker{Broker: b, txs: h.s, url: b.URL, holder: h}
}

func txnBroker(t testing.TB, tcs int) *testBroker {
	t.Helper()
	return startTxnBroker(t, brokertest.Options{}, Config{Coordinators: tcs})
}

// restart closes tb and starts a broker over the same stores.
func (tb *testBroker) restart(t testing.TB) *testBroker {
	t.Helper()
	b := tb.Broker.Restart(t)
	return &testBroker{Broker: b, txs: tb.holder.s, url: b.URL, holder: tb.holder}
}

func (tb *testBroker) client(t testing.TB) pulsar.Client { return tb.Client(t) }

func (tb *testBroker) txnClient(t testing.TB) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{
		URL: tb.url, OperationTimeout: 10 * time.Second, ConnectionTimeout: 5 * time.Second,
		Logger: plog.DefaultNopLogger(), EnableTransaction: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func (tb *testBroker) txnInfo(t testing.TB, id pulsar.TxnID) (coordinator.Info, error) {
	t.Helper()
	co, err := tb.txs.TxnCoordinator(ctxT(t), id.MostSigBits)
	if err != nil {
		t.Fatal(err)
	}
	return co.Txn(txn.ID{Most: id.MostSigBits, Least: id.LeastSigBits})
}

func (tb *testBroker) EndOnPartition(ctx context.Context, topic string, id txn.ID, a txn.Action) error {
	return tb.txs.EndOnPartition(ctx, topic, id, a)
}

func (tb *testBroker) EndOnSubscription(ctx context.Context, topic, sub string, id txn.ID, a txn.Action) error {
	return tb.txs.EndOnSubscription(ctx, topic, sub, id, a)
}

func (tb *testBroker) TxnCoordinator(ctx context.Context, id uint64) (*coordinator.Coordinator, error) {
	return tb.txs.TxnCoordinator(ctx, id)
}

func (tb *testBroker) TxnCoordinatorCount() int { return tb.txs.TxnCoordinatorCount() }

// rawClient is brokertest.Raw with the short names the tests use.
type rawClient struct {
	*brokertest.Raw
	nc net.Conn
}

func dialRaw(t testing.TB, tb *testBroker, connect bool) *rawClient {
	t.Helper()
	var r *brokertest.Raw
	if connect {
		r = brokertest.Dial(t, tb.Broker)
	} else {
		r = brokertest.DialAddr(t, tb.ServiceAddr())
	}
	return &rawClient{Raw: r, nc: r.Conn}
}

func (r *rawClient) send(cmd *pb.BaseCommand) { r.Send(cmd) }
func (r *rawClient) write(b []byte)           { r.Write(b) }
func (r *rawClient) next() pulsarproto.Frame  { return r.Next() }

// producer creates producer 1 on topic.
func (r *rawClient) producer(topic string) uint64 {
	r.Producer(topic, 1)
	return 1
}

func testEntry(seq uint64, payload string) []byte { return brokertest.Entry(seq, payload) }

func mustProducer(t testing.TB, cl pulsar.Client, o pulsar.ProducerOptions) pulsar.Producer {
	t.Helper()
	return brokertest.Producer(t, cl, o)
}

func mustConsumer(t testing.TB, cl pulsar.Client, o pulsar.ConsumerOptions) pulsar.Consumer {
	t.Helper()
	return brokertest.Consumer(t, cl, o)
}

func receiveN(t testing.TB, c pulsar.Consumer, n int) []pulsar.Message {
	t.Helper()
	return brokertest.Receive(t, c, n)
}

func ctxT(t testing.TB) context.Context { return brokertest.Ctx(t) }

func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	brokertest.WaitFor(t, what, cond)
}

// newTopicName returns a fresh local topic name.
func newTopicName(prefix string) string {
	tn, err := broker.ParseTopicName(brokertest.Topic(prefix))
	if err != nil {
		panic(err)
	}
	return tn.Local
}

func ptr[T any](v T) *T { return &v }
