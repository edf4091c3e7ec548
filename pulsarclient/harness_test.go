package pulsarclient_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/admin"
	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/pulsarclient"
)

// testBroker is a broker of the test kit (broker/brokertest): in-process
// on 127.0.0.1:0 over an embedded metadata store and in-memory ledgers;
// restart keeps both and the address. Its HTTP port serves the admin API
// and HTTP lookup, as the binary wires them (package admin), for clients
// given an http:// service URL.
type testBroker struct {
	*brokertest.Broker
	url string
}

func startBroker(t testing.TB, mut func(*brokerconf.Config)) *testBroker {
	t.Helper()
	return kitBroker(brokertest.Start(t, brokertest.Options{Config: mut, Wire: wireAdmin}))
}

func kitBroker(b *brokertest.Broker) *testBroker { return &testBroker{Broker: b, url: b.URL} }

// wireAdmin declares the admin API's routes on b.
func wireAdmin(b *brokertest.Broker) (func(), error) {
	deps := admin.BrokerDeps(b.Broker)
	if b.Schemas != nil {
		deps.Schemas = b.Schemas
	}
	admin.Register(b.Router(), deps)
	return nil, nil
}

// restart stops the broker and starts a new one on the same address over
// the same stores.
func (tb *testBroker) restart(t testing.TB) *testBroker {
	t.Helper()
	nb := kitBroker(tb.Restart(t))
	*tb = *nb
	return tb
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
