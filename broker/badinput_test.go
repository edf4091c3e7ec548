package broker

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// rawClient speaks the binary protocol directly, for malformed input.
type rawClient struct {
	t  testing.TB
	nc net.Conn
	fr *pulsarproto.FrameReader
}

func dialRaw(t testing.TB, tb *testBroker, connect bool) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", tb.ServiceAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	r := &rawClient{t: t, nc: nc, fr: pulsarproto.NewFrameReader(bufio.NewReader(nc), 0)}
	if connect {
		r.send(&pb.BaseCommand{Type: pb.BaseCommand_CONNECT.Enum(), Connect: &pb.CommandConnect{
			ClientVersion: ptr("raw-test"), ProtocolVersion: ptr(int32(20)),
		}})
		f := r.next()
		if f.Type != pb.BaseCommand_CONNECTED {
			t.Fatalf("handshake answer %s", f.Type)
		}
		if got := f.Cmd.Connected.GetMaxMessageSize(); got != int32(tb.cfg.MaxMessageSize) {
			t.Fatalf("max_message_size %d, want %d", got, tb.cfg.MaxMessageSize)
		}
	}
	return r
}

func (r *rawClient) send(cmd *pb.BaseCommand) {
	r.t.Helper()
	b, err := pulsarproto.AppendCommand(nil, cmd)
	if err != nil {
		r.t.Fatal(err)
	}
	r.write(b)
}

func (r *rawClient) write(b []byte) {
	r.t.Helper()
	if _, err := r.nc.Write(b); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

func (r *rawClient) next() pulsarproto.Frame {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	f, err := r.fr.Next()
	if err != nil {
		r.t.Fatalf("read frame: %v", err)
	}
	return f
}

// expectClosed reads until the broker closes the connection.
func (r *rawClient) expectClosed() {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, r.nc)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		r.t.Fatal("connection still open")
	}
}

// ping checks the connection is alive.
func (r *rawClient) ping() {
	r.t.Helper()
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}})
	for {
		f := r.next()
		if f.Type == pb.BaseCommand_PONG {
			return
		}
	}
}

func frame(cmd []byte, payload []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(4+len(cmd)+len(payload)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(cmd)))
	b = append(b, cmd...)
	return append(b, payload...)
}

func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	tb := startBroker(t, func(c *brokerconf.Config) { c.MaxMessageSize = 64 << 10 })
	healthy := dialRaw(t, tb, true)
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(rng.UintN(256))
	}
	pingCmd, _ := pulsarproto.AppendCommand(nil, &pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}})
	cases := []struct {
		name    string
		connect bool
		input   []byte
		closeW  bool // half-close after writing (truncation)
	}{
		{"random bytes", true, random, false},
		{"random before connect", false, random, false},
		{"truncated frame", true, pingCmd[:len(pingCmd)-1], true},
		{"truncated header", true, []byte{0, 0}, true},
		{"oversize frame", true, binary.BigEndian.AppendUint32(nil, 64<<10+pulsarproto.FramePadding+1), false},
		{"command size beyond frame", true, append(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 8), 100), 0, 0, 0, 0), false},
		{"malformed protobuf", true, frame([]byte{0xff, 0xff, 0xff}, nil), false},
		{"unknown command type", true, frame([]byte{0x08, 0xc8, 0x01}, nil), false},
		{"command before connect", false, pingCmd, false},
		{"broker-only command", true, mustCmd(t, &pb.BaseCommand{Type: pb.BaseCommand_SUCCESS.Enum(), Success: &pb.CommandSuccess{RequestId: ptr(uint64(1))}}), false},
		{"send payload without magic", true, frame(mustCmdBody(t, &pb.BaseCommand{Type: pb.BaseCommand_SEND.Enum(), Send: &pb.CommandSend{ProducerId: ptr(uint64(1)), SequenceId: ptr(uint64(0))}}), []byte("junk")), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := dialRaw(t, tb, tc.connect)
			r.write(tc.input)
			if tc.closeW {
				r.nc.(*net.TCPConn).CloseWrite()
			}
			r.expectClosed()
			healthy.ping()
		})
	}
	// A real client still works.
	cl := tb.client(t)
	topic := newTopicName("after-bad")
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic})
	sendAsyncAll(t, prod, 3, payloadMsg)
	receiveN(t, cons, 3)
}

func mustCmd(t testing.TB, cmd *pb.BaseCommand) []byte {
	b, err := pulsarproto.AppendCommand(nil, cmd)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustCmdBody(t testing.TB, cmd *pb.BaseCommand) []byte { return mustCmd(t, cmd)[8:] }

// rawProducer creates a producer on a raw connection and returns its id.
func (r *rawClient) producer(topic string) uint64 {
	r.t.Helper()
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{
		Topic: ptr(topic), ProducerId: ptr(uint64(1)), RequestId: ptr(uint64(1)),
	}})
	f := r.next()
	if f.Type != pb.BaseCommand_PRODUCER_SUCCESS {
		r.t.Fatalf("PRODUCER answered %s", f.Type)
	}
	return 1
}

func testEntry(seq uint64, payload string) []byte {
	md := &pb.MessageMetadata{ProducerName: ptr("raw"), SequenceId: &seq, PublishTime: ptr(uint64(time.Now().UnixMilli()))}
	mb, err := protoMarshal(md)
	if err != nil {
		panic(err)
	}
	return pulsarproto.AppendEntry(nil, mb, []byte(payload))
}

func TestBadChecksumSendError(t *testing.T) {
	tb := startBroker(t, nil)
	r := dialRaw(t, tb, true)
	pid := r.producer("bad-crc")
	e := testEntry(0, "hello")
	e[len(e)-1] ^= 0xff // corrupt the payload: CRC mismatch
	r.write(pulsarproto.AppendSend(nil, &pulsarproto.SendHeader{ProducerID: pid, SequenceID: 0}, e))
	f := r.next()
	if f.Type != pb.BaseCommand_SEND_ERROR || f.Cmd.SendError.GetError() != pb.ServerError_ChecksumError {
		t.Fatalf("corrupt SEND answered %s %v", f.Type, f.Cmd.SendError)
	}
	// A good send on the same connection still works.
	r.write(pulsarproto.AppendSend(nil, &pulsarproto.SendHeader{ProducerID: pid, SequenceID: 1}, testEntry(1, "ok")))
	f = r.next()
	if f.Type != pb.BaseCommand_SEND_RECEIPT || f.Cmd.SendReceipt.GetSequenceId() != 1 {
		t.Fatalf("good SEND answered %s", f.Type)
	}
}

func TestPipelinedSendsReceiptsInOrder(t *testing.T) {
	tb := startBroker(t, nil)
	r := dialRaw(t, tb, true)
	pid := r.producer("pipelined")
	var buf []byte
	const n = 500
	for i := uint64(0); i < n; i++ {
		buf = pulsarproto.AppendSend(buf, &pulsarproto.SendHeader{ProducerID: pid, SequenceID: i}, testEntry(i, fmt.Sprint(i)))
	}
	r.write(buf) // all at once: the broker must not wait for one persist per frame
	var lastEntry int64 = -1
	for i := uint64(0); i < n; i++ {
		f := r.next()
		if f.Type != pb.BaseCommand_SEND_RECEIPT {
			t.Fatalf("answer %d: %s", i, f.Type)
		}
		rc := f.Cmd.SendReceipt
		if rc.GetSequenceId() != i {
			t.Fatalf("receipt %d has sequence id %d", i, rc.GetSequenceId())
		}
		if e := int64(rc.GetMessageId().GetEntryId()); e <= lastEntry {
			t.Fatalf("receipt %d entry id %d not after %d", i, e, lastEntry)
		} else {
			lastEntry = e
		}
	}
}

func TestSlowConsumerDisconnected(t *testing.T) {
	tb := startBroker(t, func(c *brokerconf.Config) {
		c.MaxMessageSize = 32 << 10
		c.MaxOutboundBytes = 256 << 10
		c.WriteTimeout = 200 * time.Millisecond
	})
	topic := newTopicName("slow")
	r := dialRaw(t, tb, true)
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_SUBSCRIBE.Enum(), Subscribe: &pb.CommandSubscribe{
		Topic: ptr(topic), Subscription: ptr("s"), SubType: pb.CommandSubscribe_Exclusive.Enum(),
		ConsumerId: ptr(uint64(1)), RequestId: ptr(uint64(1)),
	}})
	if f := r.next(); f.Type != pb.BaseCommand_SUCCESS {
		t.Fatalf("SUBSCRIBE answered %s", f.Type)
	}
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_FLOW.Enum(), Flow: &pb.CommandFlow{ConsumerId: ptr(uint64(1)), MessagePermits: ptr(uint32(1 << 30))}})
	// From here on the raw client reads nothing.
	cl := tb.client(t)
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	payload := strings.Repeat("x", 30<<10)
	closed := func() bool {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		for c := range tb.mu.conns {
			if *c.clientVersion.Load() == "raw-test" {
				return false
			}
		}
		return true
	}
	for i := 0; i < 2000 && !closed(); i++ {
		sendAsyncAll(t, prod, 10, func(int) *pulsar.ProducerMessage { return &pulsar.ProducerMessage{Payload: []byte(payload)} })
		if i > 10 {
			// The socket buffers are full by now; give the write timeout
			// a chance.
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !closed() {
		t.Fatal("slow consumer's connection was not closed")
	}
	// The broker carries on.
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "other", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	receiveN(t, cons, 5)
}

func TestIdleConnectionPingedThenClosed(t *testing.T) {
	tb := startBroker(t, func(c *brokerconf.Config) {
		c.KeepAliveInterval = 50 * time.Millisecond
		c.IdleTimeout = 500 * time.Millisecond
	})
	r := dialRaw(t, tb, true)
	if f := r.next(); f.Type != pb.BaseCommand_PING {
		t.Fatalf("idle connection got %s, want PING", f.Type)
	}
	r.expectClosed()
	// A peer that keeps talking stays connected past the idle timeout
	// (three times over; the timeout leaves room for a scheduling gap
	// between two pings on a loaded machine).
	r2 := dialRaw(t, tb, true)
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		r2.ping()
	}
}

// TestKeepAliveOff: a negative KeepAliveInterval (Pulsar's
// keepAliveIntervalSeconds=0) sends no pings and closes no idle
// connection.
func TestKeepAliveOff(t *testing.T) {
	tb := startBroker(t, func(c *brokerconf.Config) { c.KeepAliveInterval = -1 })
	if tb.cfg.IdleTimeout != 0 {
		t.Fatalf("IdleTimeout %v with keep-alive off", tb.cfg.IdleTimeout)
	}
	r := dialRaw(t, tb, true)
	_ = r.nc.SetReadDeadline(time.Now().Add(time.Second))
	if f, err := r.fr.Next(); err == nil {
		t.Fatalf("idle connection got %s with keep-alive off", f.Type)
	}
	r.ping() // still open
}

func TestBrokerInitiatedCloseOnUnload(t *testing.T) {
	tb := startBroker(t, nil)
	topic := newTopicName("unload-raw")
	r := dialRaw(t, tb, true)
	pid := r.producer(topic)
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_SUBSCRIBE.Enum(), Subscribe: &pb.CommandSubscribe{
		Topic: ptr(topic), Subscription: ptr("s"), SubType: pb.CommandSubscribe_Shared.Enum(),
		ConsumerId: ptr(uint64(9)), RequestId: ptr(uint64(2)),
	}})
	if f := r.next(); f.Type != pb.BaseCommand_SUCCESS {
		t.Fatalf("SUBSCRIBE answered %s", f.Type)
	}
	tb.UnloadTopic(topic)
	got := map[pb.BaseCommand_Type]uint64{}
	for len(got) < 2 {
		f := r.next()
		switch f.Type {
		case pb.BaseCommand_CLOSE_PRODUCER:
			got[f.Type] = f.Cmd.CloseProducer.GetProducerId()
		case pb.BaseCommand_CLOSE_CONSUMER:
			got[f.Type] = f.Cmd.CloseConsumer.GetConsumerId()
		}
	}
	if got[pb.BaseCommand_CLOSE_PRODUCER] != pid || got[pb.BaseCommand_CLOSE_CONSUMER] != 9 {
		t.Fatalf("closes %v", got)
	}
	// The ids are free again: re-create both on the same connection.
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{
		Topic: ptr(topic), ProducerId: ptr(pid), RequestId: ptr(uint64(3)),
	}})
	if f := r.next(); f.Type != pb.BaseCommand_PRODUCER_SUCCESS {
		t.Fatalf("PRODUCER after unload answered %s", f.Type)
	}
}
