package admin

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/magnetar-mq/magnetar/broker/brokertest"
)

// TestPeekPartitionsOfNewPartitionedTopic: the partitions of a
// partitioned topic exist with it, as in Pulsar: a subscription created
// on the partitioned topic before any client used it lands on every
// partition, and peeking a partition answers its messages with the
// partition's index. Peeking the partitioned topic itself is 405.
func TestPeekPartitionsOfNewPartitionedTopic(t *testing.T) {
	tb, ac := startAdmin(t)
	topic := "persistent://public/default/" + uniqueName("peek-p")
	tn := mustTopic(t, topic)
	if err := ac.Topics().Create(tn, 2); err != nil {
		t.Fatal(err)
	}
	if err := ac.Subscriptions().Create(tn, "s", utils.Earliest); err != nil {
		t.Fatalf("subscription on a new partitioned topic: %v", err)
	}
	p := brokertest.Producer(t, tb.client(t), pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	for i := range 6 {
		if _, err := p.Send(ctxT(t), brokertest.Msg(i)); err != nil {
			t.Fatal(err)
		}
	}
	seen := 0
	for i := range 2 {
		part := mustTopic(t, fmt.Sprintf("%s-partition-%d", topic, i))
		st, err := ac.Topics().GetStats(part)
		if err != nil {
			t.Fatal(err)
		}
		backlog := int(st.Subscriptions["s"].MsgBacklog)
		seen += backlog
		if backlog == 0 {
			continue
		}
		msgs, err := ac.Subscriptions().PeekMessages(part, "s", backlog)
		if err != nil {
			t.Fatalf("peek %s: %v", part.String(), err)
		}
		if len(msgs) != backlog {
			t.Fatalf("peek %s: %d messages, want %d", part.String(), len(msgs), backlog)
		}
		for _, m := range msgs {
			if m.GetMessageID().PartitionIndex != i {
				t.Errorf("peek %s: message id %v", part.String(), m.GetMessageID())
			}
		}
	}
	if seen != 6 {
		t.Fatalf("the subscription's backlog over the partitions is %d, want 6", seen)
	}
	code, body := httpDo(t, tb, "GET", adminPath(topic)+"/subscription/s/position/1", "")
	if code != http.StatusMethodNotAllowed {
		t.Fatalf("peek of the partitioned topic: %d %s, want 405", code, body)
	}
}

// TestPeekCreatesSubscription: peeking a subscription that does not
// exist creates it at the earliest message, as Pulsar does, and answers
// the messages with their properties.
func TestPeekCreatesSubscription(t *testing.T) {
	tb, ac := startAdmin(t)
	topic := "persistent://public/default/" + uniqueName("peek-new")
	p := brokertest.Producer(t, tb.client(t), pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	props := map[string]string{"KeY3": "VaLuE3", "details=man": "x"}
	for i := range 3 {
		m := brokertest.Msg(i)
		m.Properties = props
		if _, err := p.Send(ctxT(t), m); err != nil {
			t.Fatal(err)
		}
	}
	tn := mustTopic(t, topic)
	msgs, err := ac.Subscriptions().PeekMessages(tn, "never-made", 2)
	if err != nil {
		t.Fatalf("peek of a new subscription: %v", err)
	}
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want 2", len(msgs))
	}
	for i, m := range msgs {
		if got := string(m.Payload); got != fmt.Sprintf("m-%d", i) {
			t.Errorf("message %d: payload %q", i, got)
		}
		if m.Properties["KeY3"] != "VaLuE3" || m.Properties["details=man"] != "x" || m.Properties["publish-time"] == "" {
			t.Errorf("message %d: properties %v", i, m.Properties)
		}
	}
	st, err := ac.Topics().GetStats(tn)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := st.Subscriptions["never-made"]; !ok || s.MsgBacklog != 3 {
		t.Fatalf("subscription after the peek: %+v (exists %v), want a backlog of 3", s, ok)
	}
}
