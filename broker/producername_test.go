package broker

import (
	"testing"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// rawNamedProducer creates producer pid on topic with name (empty: let
// the broker generate one) and returns the name the broker answered.
func (r *rawClient) rawNamedProducer(topic string, pid uint64, name string) string {
	r.t.Helper()
	cmd := &pb.CommandProducer{Topic: ptr(topic), ProducerId: ptr(pid), RequestId: ptr(pid)}
	if name != "" {
		cmd.ProducerName = ptr(name)
	}
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: cmd})
	f := r.next()
	if f.Type != pb.BaseCommand_PRODUCER_SUCCESS {
		r.t.Fatalf("PRODUCER %q answered %s %v", name, f.Type, f.Cmd.Error)
	}
	return f.Cmd.ProducerSuccess.GetProducerName()
}

func (r *rawClient) sendOK(pid, seq uint64) {
	r.t.Helper()
	r.write(pulsarproto.AppendSend(nil, &pulsarproto.SendHeader{ProducerID: pid, SequenceID: seq}, testEntry(seq, "x")))
	if f := r.next(); f.Type != pb.BaseCommand_SEND_RECEIPT {
		r.t.Fatalf("SEND of producer %d answered %s", pid, f.Type)
	}
}

// TestGeneratedProducerNamesUnique: generated names differ between two
// brokers on one metadata store and across a restart, so after a restart
// a new producer does not take the name of one that reconnects: both
// work.
func TestGeneratedProducerNamesUnique(t *testing.T) {
	const topic = "persistent://public/default/names"
	tb1 := startBroker(t, nil)
	name1 := dialRaw(t, tb1, true).rawNamedProducer(topic, 1, "")
	tb2 := startBrokerOpts(t, brokerOpts{meta: tb1.meta, ledgers: tb1.ledgers})
	name2 := dialRaw(t, tb2, true).rawNamedProducer(topic+"-2", 1, "")
	if name1 == name2 {
		t.Fatalf("two brokers generated the same name %q", name1)
	}
	tb3 := tb1.restart(t)
	r := dialRaw(t, tb3, true)
	fresh := r.rawNamedProducer(topic, 1, "")
	if fresh == name1 || fresh == name2 {
		t.Fatalf("name %q after a restart repeats an earlier one (%q, %q)", fresh, name1, name2)
	}
	// The producer from before the restart reconnects with its name.
	old := dialRaw(t, tb3, true)
	if got := old.rawNamedProducer(topic, 7, name1); got != name1 {
		t.Fatalf("reconnecting producer got name %q, want %q", got, name1)
	}
	r.sendOK(1, 0)
	old.sendOK(7, 0)
}
