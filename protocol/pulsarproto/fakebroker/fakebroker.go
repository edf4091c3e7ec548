package fakebroker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/internal/acceptloop"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// Options configures a fake broker; the zero value is a broker that
// answers the handshake, lookups, producers and subscriptions.
type Options struct {
	// Connected is the answer to CONNECT (nil: server "fake", protocol
	// 20, 5 MiB messages).
	Connected *pb.CommandConnected
	// OnConnect sees each connection's CONNECT frame before the answer.
	OnConnect func(f pulsarproto.Frame)
	// Echo, if it reports true for a connection's CONNECT, makes that
	// connection echo every byte after CONNECTED.
	Echo func(m *pb.CommandConnect) bool
	// Lookup answers LOOKUP (nil: Connect to this broker, authoritative).
	Lookup func(m *pb.CommandLookupTopic) *pb.CommandLookupTopicResponse
	// Topic sees the topic of each PARTITIONED_METADATA, LOOKUP,
	// PRODUCER and SUBSCRIBE before the answer; an error ends the
	// connection.
	Topic func(name string) error
	// MaxFrameSize bounds the frames read (0: pulsarproto's default).
	MaxFrameSize int
	// Handler makes the handler of a connection's other frames (nil:
	// they are ignored). A handler's error ends the connection.
	Handler func(c *Conn) func(f pulsarproto.Frame) error
}

// Broker is a running fake broker.
type Broker struct {
	// URL is its pulsar:// service URL.
	URL string

	o    Options
	ln   net.Listener
	wg   sync.WaitGroup
	once sync.Once

	mu       sync.Mutex
	conns    []net.Conn
	errs     []error
	connects []*pb.CommandConnect
}

// Conn is one client connection of a fake broker.
type Conn struct {
	// Connect is the connection's CONNECT command.
	Connect *pb.CommandConnect

	nc  net.Conn
	mu  sync.Mutex
	buf []byte
}

// Send writes cmd (a frame without payload).
func (c *Conn) Send(cmd *pb.BaseCommand) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, err := pulsarproto.AppendCommand(c.buf[:0], cmd)
	if err != nil {
		return err
	}
	c.buf = b
	_, err = c.nc.Write(b)
	return err
}

// Write writes bytes already framed (a MESSAGE, a SEND_RECEIPT).
func (c *Conn) Write(b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.nc.Write(b)
	return err
}

// Start starts a fake broker on 127.0.0.1:0; it is closed when the test
// ends.
func Start(t testing.TB, o Options) *Broker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &Broker{o: o, ln: ln, URL: "pulsar://" + ln.Addr().String()}
	b.wg.Add(1)
	go b.accept()
	t.Cleanup(b.Close)
	return b
}

// Close stops accepting, closes every connection and waits for their
// goroutines.
func (b *Broker) Close() {
	b.once.Do(func() {
		b.ln.Close()
		b.mu.Lock()
		for _, c := range b.conns {
			c.Close()
		}
		b.mu.Unlock()
		b.wg.Wait()
	})
}

// Addr is the broker's host:port.
func (b *Broker) Addr() string { return b.ln.Addr().String() }

// Errors returns the errors that ended connections.
func (b *Broker) Errors() []error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]error(nil), b.errs...)
}

// Connects returns the CONNECT commands received, in order.
func (b *Broker) Connects() []*pb.CommandConnect {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*pb.CommandConnect(nil), b.connects...)
}

func (b *Broker) accept() {
	defer b.wg.Done()
	acceptloop.Run(b.ln, nil, nil, func(nc net.Conn) bool {
		b.mu.Lock()
		b.conns = append(b.conns, nc)
		b.mu.Unlock()
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer nc.Close()
			if err := b.serve(nc); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				b.mu.Lock()
				b.errs = append(b.errs, err)
				b.mu.Unlock()
			}
		}()
		return true
	})
}

func (b *Broker) serve(nc net.Conn) error {
	br := bufio.NewReader(nc)
	fr := pulsarproto.NewFrameReader(br, b.o.MaxFrameSize)
	f, err := fr.Next()
	if err != nil {
		return err
	}
	if f.Type != pb.BaseCommand_CONNECT {
		return fmt.Errorf("fake broker: first command %v, want CONNECT", f.Type)
	}
	c := &Conn{nc: nc, Connect: proto.Clone(f.Cmd.GetConnect()).(*pb.CommandConnect)}
	b.mu.Lock()
	b.connects = append(b.connects, c.Connect)
	b.mu.Unlock()
	if b.o.OnConnect != nil {
		b.o.OnConnect(f)
	}
	connected := b.o.Connected
	if connected == nil {
		connected = &pb.CommandConnected{ServerVersion: proto.String("fake"), ProtocolVersion: proto.Int32(20), MaxMessageSize: proto.Int32(5 << 20)}
	}
	if err := c.Send(&pb.BaseCommand{Type: pb.BaseCommand_CONNECTED.Enum(), Connected: connected}); err != nil {
		return err
	}
	if b.o.Echo != nil && b.o.Echo(c.Connect) {
		_, err := io.Copy(nc, br)
		return err
	}
	var handle func(pulsarproto.Frame) error
	if b.o.Handler != nil {
		handle = b.o.Handler(c)
	}
	for {
		f, err := fr.Next()
		if err != nil {
			return err
		}
		if err := b.answer(c, f, handle); err != nil {
			return err
		}
	}
}

// answer answers f itself or hands it to handle.
func (b *Broker) answer(c *Conn, f pulsarproto.Frame, handle func(pulsarproto.Frame) error) error {
	cmd, u := f.Cmd, proto.Uint64
	topic := func(name string) error {
		if b.o.Topic != nil {
			return b.o.Topic(name)
		}
		return nil
	}
	success := func(rid uint64) error {
		return c.Send(&pb.BaseCommand{Type: pb.BaseCommand_SUCCESS.Enum(), Success: &pb.CommandSuccess{RequestId: u(rid)}})
	}
	switch f.Type {
	case pb.BaseCommand_PING:
		return c.Send(&pb.BaseCommand{Type: pb.BaseCommand_PONG.Enum(), Pong: &pb.CommandPong{}})
	case pb.BaseCommand_PARTITIONED_METADATA:
		m := cmd.GetPartitionMetadata()
		if err := topic(m.GetTopic()); err != nil {
			return err
		}
		return c.Send(&pb.BaseCommand{Type: pb.BaseCommand_PARTITIONED_METADATA_RESPONSE.Enum(), PartitionMetadataResponse: &pb.CommandPartitionedTopicMetadataResponse{
			RequestId: u(m.GetRequestId()), Partitions: proto.Uint32(0), Response: pb.CommandPartitionedTopicMetadataResponse_Success.Enum()}})
	case pb.BaseCommand_LOOKUP:
		m := cmd.GetLookupTopic()
		if err := topic(m.GetTopic()); err != nil {
			return err
		}
		resp := &pb.CommandLookupTopicResponse{RequestId: u(m.GetRequestId()), BrokerServiceUrl: proto.String(b.URL),
			Response: pb.CommandLookupTopicResponse_Connect.Enum(), Authoritative: proto.Bool(true), ProxyThroughServiceUrl: proto.Bool(false)}
		if b.o.Lookup != nil {
			resp = b.o.Lookup(m)
		}
		return c.Send(&pb.BaseCommand{Type: pb.BaseCommand_LOOKUP_RESPONSE.Enum(), LookupTopicResponse: resp})
	case pb.BaseCommand_PRODUCER:
		m := cmd.GetProducer()
		if err := topic(m.GetTopic()); err != nil {
			return err
		}
		return c.Send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER_SUCCESS.Enum(), ProducerSuccess: &pb.CommandProducerSuccess{
			RequestId: u(m.GetRequestId()), ProducerName: proto.String(fmt.Sprintf("standalone-0-%d", m.GetProducerId())), LastSequenceId: proto.Int64(-1)}})
	case pb.BaseCommand_SUBSCRIBE:
		m := cmd.GetSubscribe()
		if err := topic(m.GetTopic()); err != nil {
			return err
		}
		return success(m.GetRequestId())
	}
	if handle != nil {
		if err := handle(f); err != nil {
			return err
		}
	}
	switch f.Type {
	case pb.BaseCommand_CLOSE_PRODUCER:
		return success(cmd.GetCloseProducer().GetRequestId())
	case pb.BaseCommand_CLOSE_CONSUMER:
		return success(cmd.GetCloseConsumer().GetRequestId())
	}
	return nil
}
