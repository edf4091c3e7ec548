package magnetartest_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-mq/magnetar/magnetartest"
)

// A produce/consume round trip with the Apache Pulsar Go client against
// an in-process server. In a test, magnetartest.Start(t) does the same
// and closes the server when the test ends.
func Example() {
	srv, err := magnetartest.New()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: srv.ServiceURL(), Logger: plog.DefaultNopLogger()})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	topic := "persistent://public/default/greetings"
	consumer, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "example"})
	if err != nil {
		log.Fatal(err)
	}
	defer consumer.Close()
	producer, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		log.Fatal(err)
	}
	defer producer.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := producer.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("hello, magnetar"), Key: "k1"}); err != nil {
		log.Fatal(err)
	}
	msg, err := consumer.Receive(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if err := consumer.Ack(msg); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s (key %s)\n", msg.Payload(), msg.Key())
	// Output: hello, magnetar (key k1)
}
