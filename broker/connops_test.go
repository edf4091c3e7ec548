package broker

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/mledger/memstore"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// gatedLedgers is a ledger store whose next armed Creates wait until
// released: a topic load that is slow in the store.
type gatedLedgers struct {
	mledger.LedgerStore
	mu      sync.Mutex
	hold    int           // Creates still to hold
	release chan struct{} // closed to let the held Creates through
	held    chan struct{} // a token per Create held
}

func newGatedLedgers() *gatedLedgers {
	return &gatedLedgers{LedgerStore: memstore.New(), held: make(chan struct{}, 1024)}
}

// arm holds the next n Creates and returns the function that releases
// them.
func (g *gatedLedgers) arm(n int) (release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hold = n
	rel := make(chan struct{})
	g.release = rel
	var once sync.Once
	return func() { once.Do(func() { close(rel) }) }
}

func (g *gatedLedgers) Create(ctx context.Context) (mledger.WriteLedger, error) {
	g.mu.Lock()
	hold := g.hold > 0
	if hold {
		g.hold--
	}
	rel := g.release
	g.mu.Unlock()
	if hold {
		g.held <- struct{}{}
		select {
		case <-rel:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.LedgerStore.Create(ctx)
}

// awaitHeld waits until n more Creates are held.
func (g *gatedLedgers) awaitHeld(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-g.held:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d ledger creates held", i, n)
		}
	}
}

func startGated(t *testing.T) (*testBroker, *gatedLedgers) {
	g := newGatedLedgers()
	return startBrokerOpts(t, brokerOpts{ledgers: g}), g
}

// expect reads the next frame and checks its type and request id.
func (r *rawClient) expect(typ pb.BaseCommand_Type, rid uint64) pulsarproto.Frame {
	r.t.Helper()
	f := r.next()
	if f.Type != typ {
		r.t.Fatalf("got %s (%v), want %s for request %d", f.Type, f.Cmd, typ, rid)
	}
	var got uint64
	switch typ {
	case pb.BaseCommand_SUCCESS:
		got = f.Cmd.Success.GetRequestId()
	case pb.BaseCommand_ERROR:
		got = f.Cmd.Error.GetRequestId()
	case pb.BaseCommand_PRODUCER_SUCCESS:
		got = f.Cmd.ProducerSuccess.GetRequestId()
	case pb.BaseCommand_SEND_RECEIPT:
		got = f.Cmd.SendReceipt.GetSequenceId()
	case pb.BaseCommand_PONG:
		got = rid
	}
	if got != rid {
		r.t.Fatalf("%s for request %d, want %d", typ, got, rid)
	}
	return f
}

func subscribeCmd(topic string, cid, rid uint64) *pb.BaseCommand {
	return &pb.BaseCommand{Type: pb.BaseCommand_SUBSCRIBE.Enum(), Subscribe: &pb.CommandSubscribe{
		Topic: ptr(topic), Subscription: ptr("s"), SubType: pb.CommandSubscribe_Exclusive.Enum(),
		ConsumerId: ptr(cid), RequestId: ptr(rid),
	}}
}

func producerCmd(topic string, pid, rid uint64) *pb.BaseCommand {
	return &pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{
		Topic: ptr(topic), ProducerId: ptr(pid), RequestId: ptr(rid), ProducerName: ptr("p"),
	}}
}

var pingCmd = &pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}}

// topicCounts returns the producers and the consumers of subscription s
// connected to topic.
func topicCounts(t *testing.T, tb *testBroker, topic string) (producers, consumers int) {
	t.Helper()
	v, err := tb.Topic(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	st := v.Snapshot(false)
	if ss, ok := st.Subscriptions["s"]; ok {
		consumers = len(ss.Consumers)
	}
	return len(st.Publishers), consumers
}

// TestSlowTopicLoadOffReader: while a SUBSCRIBE waits for its topic's
// ledger, the same connection answers a PING and creates a producer on
// another topic; once the ledger comes, the SUBSCRIBE succeeds and the
// consumer gets what is published.
func TestSlowTopicLoadOffReader(t *testing.T) {
	tb, g := startGated(t)
	r := dialRaw(t, tb, true)
	release := g.arm(1)
	defer release()
	r.send(subscribeCmd("slow-a", 1, 1))
	g.awaitHeld(t, 1)
	r.send(pingCmd)
	r.expect(pb.BaseCommand_PONG, 0)
	r.send(producerCmd("slow-b", 1, 2))
	r.expect(pb.BaseCommand_PRODUCER_SUCCESS, 2)
	release()
	r.expect(pb.BaseCommand_SUCCESS, 1)
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_FLOW.Enum(), Flow: &pb.CommandFlow{ConsumerId: ptr(uint64(1)), MessagePermits: ptr(uint32(10))}})
	r.send(producerCmd("slow-a", 2, 3))
	r.expect(pb.BaseCommand_PRODUCER_SUCCESS, 3)
	want := testEntry(0, "a")
	r.write(pulsarproto.AppendSend(nil, &pulsarproto.SendHeader{ProducerID: 2, SequenceID: 0}, want))
	var gotReceipt, gotMessage bool
	for !gotReceipt || !gotMessage {
		f := r.next()
		switch f.Type {
		case pb.BaseCommand_SEND_RECEIPT:
			gotReceipt = true
		case pb.BaseCommand_MESSAGE:
			gotMessage = f.Cmd.Message.GetConsumerId() == 1
		default:
			t.Fatalf("unexpected %s", f.Type)
		}
	}
}

// TestSendBehindPendingProducer: SENDs written right behind their
// PRODUCER (before its answer) are published after PRODUCER_SUCCESS, in
// order, whether the topic loads fast or slowly.
func TestSendBehindPendingProducer(t *testing.T) {
	tb, g := startGated(t)
	for _, slow := range []bool{false, true} {
		r := dialRaw(t, tb, true)
		topic := "pipelined-fast"
		var release func()
		if slow {
			topic = "pipelined-slow"
			release = g.arm(1)
		}
		b := mustCmd(t, producerCmd(topic, 7, 1))
		for i := uint64(0); i < 3; i++ {
			b = pulsarproto.AppendSend(b, &pulsarproto.SendHeader{ProducerID: 7, SequenceID: i}, testEntry(i, "x"))
		}
		r.write(b)
		if slow {
			g.awaitHeld(t, 1)
			release()
		}
		r.expect(pb.BaseCommand_PRODUCER_SUCCESS, 1)
		for i := uint64(0); i < 3; i++ {
			r.expect(pb.BaseCommand_SEND_RECEIPT, i)
		}
	}
}

// TestCloseDuringPendingCreate: CLOSE_PRODUCER and CLOSE_CONSUMER for a
// creation still loading its topic are answered at once; the creation
// then attaches nothing and answers its request with an error, and the
// same producer name and Exclusive subscription are free again.
func TestCloseDuringPendingCreate(t *testing.T) {
	tb, g := startGated(t)
	r := dialRaw(t, tb, true)
	release := g.arm(2)
	defer release()
	r.send(producerCmd("cancel-p", 1, 1))
	r.send(subscribeCmd("cancel-c", 1, 2))
	g.awaitHeld(t, 2)
	// A second creation for a pending id is refused as Pulsar does.
	r.send(producerCmd("cancel-p", 1, 3))
	if f := r.expect(pb.BaseCommand_ERROR, 3); f.Cmd.Error.GetError() != pb.ServerError_ServiceNotReady {
		t.Fatalf("duplicate PRODUCER: %v", f.Cmd.Error)
	}
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_CLOSE_PRODUCER.Enum(), CloseProducer: &pb.CommandCloseProducer{ProducerId: ptr(uint64(1)), RequestId: ptr(uint64(4))}})
	r.expect(pb.BaseCommand_SUCCESS, 4)
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_CLOSE_CONSUMER.Enum(), CloseConsumer: &pb.CommandCloseConsumer{ConsumerId: ptr(uint64(1)), RequestId: ptr(uint64(5))}})
	r.expect(pb.BaseCommand_SUCCESS, 5)
	release()
	errs := map[uint64]bool{}
	for len(errs) < 2 {
		f := r.next()
		if f.Type != pb.BaseCommand_ERROR {
			t.Fatalf("cancelled creation answered %s", f.Type)
		}
		errs[f.Cmd.Error.GetRequestId()] = true
	}
	if !errs[1] || !errs[2] {
		t.Fatalf("errors for requests %v, want 1 and 2", errs)
	}
	if p, _ := topicCounts(t, tb, "cancel-p"); p != 0 {
		t.Fatalf("%d producers on cancel-p after the cancelled creation", p)
	}
	if _, c := topicCounts(t, tb, "cancel-c"); c != 0 {
		t.Fatalf("%d consumers on cancel-c after the cancelled creation", c)
	}
	// Nothing of the cancelled creations is left on the connection.
	r.send(producerCmd("cancel-p", 1, 6))
	r.expect(pb.BaseCommand_PRODUCER_SUCCESS, 6)
	r.send(subscribeCmd("cancel-c", 1, 7))
	r.expect(pb.BaseCommand_SUCCESS, 7)
}

// TestConnClosedDuringPendingCreate: a connection that goes away while
// its creations load leaves nothing attached once they complete.
func TestConnClosedDuringPendingCreate(t *testing.T) {
	tb, g := startGated(t)
	r := dialRaw(t, tb, true)
	release := g.arm(2)
	defer release()
	r.send(producerCmd("gone-p", 1, 1))
	r.send(subscribeCmd("gone-c", 1, 2))
	g.awaitHeld(t, 2)
	r.nc.Close()
	release()
	waitUntil(t, "creations of a closed connection detached", func() bool {
		v1, err1 := tb.Topic(context.Background(), "gone-p")
		v2, err2 := tb.Topic(context.Background(), "gone-c")
		if err1 != nil || err2 != nil {
			return false
		}
		ss := v2.Snapshot(false).Subscriptions["s"]
		return len(v1.Snapshot(false).Publishers) == 0 && len(ss.Consumers) == 0
	})
}

// TestConnOpsBounded: a connection runs at most maxConnOps slow commands
// at once; the next one waits (and the reader with it) until one ends.
func TestConnOpsBounded(t *testing.T) {
	old := maxConnOps
	maxConnOps = 3
	defer func() { maxConnOps = old }()
	tb, g := startGated(t)
	r := dialRaw(t, tb, true)
	release := g.arm(maxConnOps + 1)
	defer release()
	for i := 0; i <= maxConnOps; i++ {
		r.send(subscribeCmd("bounded-"+string(rune('a'+i)), uint64(i), uint64(i)))
	}
	g.awaitHeld(t, maxConnOps)
	r.send(pingCmd)
	// The reader waits for a slot: neither a fourth load nor the PONG.
	_ = r.nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if f, err := r.fr.Next(); err == nil {
		t.Fatalf("answered %s with every op slot taken", f.Type)
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatal(err)
	}
	select {
	case <-g.held:
		t.Fatal("a load beyond the bound started")
	default:
	}
	release()
	got := map[uint64]bool{}
	pong := false
	for len(got) <= maxConnOps || !pong {
		f := r.next()
		switch f.Type {
		case pb.BaseCommand_SUCCESS:
			got[f.Cmd.Success.GetRequestId()] = true
		case pb.BaseCommand_PONG:
			pong = true
		default:
			t.Fatalf("unexpected %s", f.Type)
		}
	}
}
