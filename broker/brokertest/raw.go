package brokertest

import (
	"bufio"
	"net"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// Raw is a binary-protocol client without a library: a test writes the
// frames it wants (ones pulsar-client-go never sends, or sends
// differently) and reads the broker's answers frame by frame.
type Raw struct {
	t    testing.TB
	Conn net.Conn
	fr   *pulsarproto.FrameReader
}

// Dial connects to b's service port and completes CONNECT.
func Dial(t testing.TB, b *Broker) *Raw {
	t.Helper()
	r := DialAddr(t, b.ServiceAddr())
	r.Send(&pb.BaseCommand{Type: pb.BaseCommand_CONNECT.Enum(), Connect: &pb.CommandConnect{
		ClientVersion: proto.String("raw-test"), ProtocolVersion: proto.Int32(20),
	}})
	if f := r.Next(); f.Type != pb.BaseCommand_CONNECTED {
		t.Fatalf("handshake answer %s", f.Type)
	}
	return r
}

// DialAddr connects to addr without a handshake; the connection is
// closed when the test ends.
func DialAddr(t testing.TB, addr string) *Raw {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &Raw{t: t, Conn: nc, fr: pulsarproto.NewFrameReader(bufio.NewReader(nc), 0)}
}

// Send writes a payload-less command.
func (r *Raw) Send(cmd *pb.BaseCommand) {
	r.t.Helper()
	b, err := pulsarproto.AppendCommand(nil, cmd)
	if err != nil {
		r.t.Fatal(err)
	}
	r.Write(b)
}

// Write writes raw bytes (whole frames, or not).
func (r *Raw) Write(b []byte) {
	r.t.Helper()
	if _, err := r.Conn.Write(b); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// Next reads the next frame, failing the test after 5 s.
func (r *Raw) Next() pulsarproto.Frame {
	r.t.Helper()
	_ = r.Conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	f, err := r.ReadFrame()
	if err != nil {
		r.t.Fatalf("read frame: %v", err)
	}
	return f
}

// ReadFrame reads the next frame with the connection's current read
// deadline (none: a reader goroutine waits as long as it must).
func (r *Raw) ReadFrame() (pulsarproto.Frame, error) { return r.fr.Next() }

// Producer creates producer id on topic and waits for its success.
func (r *Raw) Producer(topic string, id uint64) {
	r.t.Helper()
	r.Send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{
		Topic: proto.String(topic), ProducerId: proto.Uint64(id), RequestId: proto.Uint64(id),
	}})
	if f := r.Next(); f.Type != pb.BaseCommand_PRODUCER_SUCCESS {
		r.t.Fatalf("PRODUCER answered %s %v", f.Type, f.Cmd.Error)
	}
}

// Entry is a one-message entry of producer "raw" with sequence id seq.
func Entry(seq uint64, payload string) []byte {
	md := &pb.MessageMetadata{ProducerName: proto.String("raw"), SequenceId: &seq, PublishTime: proto.Uint64(uint64(time.Now().UnixMilli()))}
	mb, err := proto.Marshal(md)
	if err != nil {
		panic("BUG: " + err.Error())
	}
	return pulsarproto.AppendEntry(nil, mb, []byte(payload))
}
