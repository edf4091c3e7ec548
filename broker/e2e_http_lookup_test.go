package broker

import (
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
)

// TestE2EHTTPServiceURL runs the client with an http:// service URL: it
// looks topics up and reads partition metadata over HTTP, then talks the
// binary protocol to the broker URL the lookup returned.
func TestE2EHTTPServiceURL(t *testing.T) {
	tb := startBroker(t, nil)
	cl, err := pulsar.NewClient(pulsar.ClientOptions{
		URL:              "http://" + tb.HTTPAddr(),
		OperationTimeout: 5 * time.Second,
		Logger:           plog.DefaultNopLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topic := newTopicName("httplookup")
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic})
	sendAsyncAll(t, prod, 3, payloadMsg)
	for _, m := range receiveN(t, cons, 3) {
		cons.Ack(m)
	}
}
