package admin

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// TestDynamicConfigurationTakesEffect: allowAutoSubscriptionCreation,
// allowAutoTopicCreation and maxTopicsPerNamespace updated through
// pulsaradmin apply to the running broker at once, and deleting the
// override brings the configuration's value back. A boolean key takes
// any value, as Pulsar's does: it is stored and answered as given, and
// only "true" (in any case) is true.
func TestDynamicConfigurationTakesEffect(t *testing.T) {
	tb, ac := startAdmin(t)
	ns := newNamespace(t, tb)
	c := tb.client(t)
	ctx := context.Background()
	update := func(name, value string) {
		t.Helper()
		if err := ac.Brokers().UpdateDynamicConfiguration(name, value); err != nil {
			t.Fatalf("update %s=%s: %v", name, value, err)
		}
	}
	subscribe := func(topic, sub string) error {
		cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub})
		if err == nil {
			cons.Close()
		}
		return err
	}

	// allowAutoSubscriptionCreation: a durable subscribe to a missing
	// subscription is refused while it is false.
	topic := "persistent://" + ns + "/subs"
	mustHTTP(t, tb, "PUT", adminPath(topic), "", http.StatusNoContent)
	const odd = `{"key/123":"https://example.com/"}`
	// pulsaradmin does not escape a value; the client's own test sends
	// this one escaped, and Pulsar answers 200.
	mustHTTP(t, tb, "POST", "/admin/v2/brokers/configuration/allowAutoSubscriptionCreation/"+url.PathEscape(odd), "", http.StatusOK)
	if v, err := ac.Brokers().GetAllDynamicConfigurations(); err != nil || v["allowAutoSubscriptionCreation"] != odd {
		t.Fatalf("stored values: %v %v", v, err)
	}
	if err := subscribe(topic, "new-1"); err == nil {
		t.Fatal("subscribed to a missing subscription with allowAutoSubscriptionCreation off")
	}
	update("allowAutoSubscriptionCreation", "TRUE")
	if err := subscribe(topic, "new-2"); err != nil {
		t.Fatalf("subscribe with allowAutoSubscriptionCreation on: %v", err)
	}

	// allowAutoTopicCreation: a producer to a missing topic fails while it
	// is false; the broker's default (true) is back once deleted.
	update("allowAutoTopicCreation", "false")
	if p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://" + ns + "/auto-off", SendTimeout: 5 * time.Second}); err == nil {
		p.Close()
		t.Fatal("a producer auto-created a topic with allowAutoTopicCreation off")
	}
	if err := ac.Brokers().DeleteDynamicConfiguration("allowAutoTopicCreation"); err != nil {
		t.Fatal(err)
	}
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://" + ns + "/auto-on"})
	if err != nil {
		t.Fatalf("producer after the override was deleted: %v", err)
	}
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	p.Close()

	// maxTopicsPerNamespace: the namespace holds subs and auto-on now.
	update("maxTopicsPerNamespace", "2")
	code, body := httpDo(t, tb, "PUT", adminPath("persistent://"+ns+"/third"), "")
	if code != http.StatusPreconditionFailed {
		t.Fatalf("a third topic over maxTopicsPerNamespace=2: %d %s", code, body)
	}
	update("maxTopicsPerNamespace", "0")
	mustHTTP(t, tb, "PUT", adminPath("persistent://"+ns+"/third"), "", http.StatusNoContent)
}
