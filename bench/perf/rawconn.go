package perf

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
	"github.com/magnetar-mq/magnetar/pulsarclient"
)

// rawClientVersion is what CONNECT announces.
const rawClientVersion = "magnetar-perf-raw"

// rawSetupTimeout bounds the handshake and each request of the setup
// (lookup, PRODUCER, SUBSCRIBE) and the close at the end of a run.
const rawSetupTimeout = 30 * time.Second

// Read buffer sizes: producers and setup connections read small frames;
// a consumer's buffer holds a whole default-size frame so that entries are
// decoded in place.
const (
	rawSmallReadBuffer    = 64 << 10
	rawConsumerReadBuffer = pulsarproto.DefaultMaxFrameSize
)

// rawConn is one TCP connection speaking the Pulsar protocol. During setup
// it is used synchronously (request); afterwards the producer or consumer
// that owns it reads frames with rd and writes with write.
type rawConn struct {
	nc  net.Conn
	rd  *rawReader
	wmu sync.Mutex // serialises writes (a producer's reader answers PINGs)
	// maxMessageSize is CONNECTED.max_message_size (or the default).
	maxMessageSize int
	nextReq        uint64
	wbuf           []byte
}

// dialRaw connects to a pulsar://host:port URL and does the CONNECT /
// CONNECTED handshake.
//
// readBuffer is the size of the connection's read buffer: frames up to
// that size are decoded in place (see rawReader).
func dialRaw(ctx context.Context, serviceURL string, readBuffer int) (*rawConn, error) {
	hostport, ok := strings.CutPrefix(serviceURL, "pulsar://")
	if !ok {
		return nil, invalid("raw mode needs a pulsar:// service URL, got %q", serviceURL)
	}
	hostport = strings.TrimRight(hostport, "/")
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, rawSetupTimeout)
	defer cancel()
	nc, err := d.DialContext(dctx, "tcp", hostport)
	if err != nil {
		return nil, fmt.Errorf("perf: raw: dial %s: %w", hostport, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	c := &rawConn{
		nc:             nc,
		rd:             newRawReader(bufio.NewReaderSize(nc, readBuffer), pulsarproto.DefaultMaxFrameSize),
		maxMessageSize: pulsarproto.DefaultMaxMessageSize,
	}
	c.nc.SetDeadline(time.Now().Add(rawSetupTimeout))
	err = c.writeCmd(&pb.BaseCommand{Type: pb.BaseCommand_CONNECT.Enum(), Connect: &pb.CommandConnect{
		ClientVersion:   proto.String(rawClientVersion),
		ProtocolVersion: proto.Int32(int32(pb.ProtocolVersion_v20)),
	}})
	if err == nil {
		var f *rawFrame
		f, err = c.rd.next()
		switch {
		case err != nil:
		case f.Type == pb.BaseCommand_CONNECTED:
			if m := f.Cmd.GetConnected().GetMaxMessageSize(); m > 0 {
				c.maxMessageSize = int(m)
			}
		case f.Type == pb.BaseCommand_ERROR:
			err = fmt.Errorf("%s: %s", f.Cmd.GetError().GetError(), f.Cmd.GetError().GetMessage())
		default:
			err = fmt.Errorf("unexpected %s", f.Type)
		}
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("perf: raw: connect to %s: %w", hostport, err)
	}
	c.rd.setMax(c.maxMessageSize + pulsarproto.FramePadding)
	c.nc.SetDeadline(time.Time{})
	return c, nil
}

func (c *rawConn) close() { c.nc.Close() }

// write writes b (whole frames) under the write lock.
func (c *rawConn) write(b []byte) error {
	c.wmu.Lock()
	_, err := c.nc.Write(b)
	c.wmu.Unlock()
	return err
}

// writeCmd encodes and writes a control command (not for hot paths: the
// generated code allocates).
func (c *rawConn) writeCmd(cmd *pb.BaseCommand) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	b, err := pulsarproto.AppendCommand(c.wbuf[:0], cmd)
	if err != nil {
		return err
	}
	c.wbuf = b
	_, err = c.nc.Write(b)
	return err
}

func (c *rawConn) reqID() uint64 {
	c.nextReq++
	return c.nextReq
}

// requestID returns the request_id of a response-type command, or false.
func requestID(cmd *pb.BaseCommand) (uint64, bool) {
	switch {
	case cmd.Success != nil:
		return cmd.Success.GetRequestId(), true
	case cmd.Error != nil:
		return cmd.Error.GetRequestId(), true
	case cmd.ProducerSuccess != nil:
		return cmd.ProducerSuccess.GetRequestId(), true
	case cmd.LookupTopicResponse != nil:
		return cmd.LookupTopicResponse.GetRequestId(), true
	case cmd.PartitionMetadataResponse != nil:
		return cmd.PartitionMetadataResponse.GetRequestId(), true
	}
	return 0, false
}

// request sends cmd (whose request_id is rid) and returns the response
// with that request_id, a deep copy. It answers PINGs while it waits and
// must only be used while nobody else reads the connection. A producer
// that is not ready yet (PRODUCER_SUCCESS with producer_ready=false) is
// waited for.
func (c *rawConn) request(ctx context.Context, cmd *pb.BaseCommand, rid uint64) (*pb.BaseCommand, error) {
	deadline := time.Now().Add(rawSetupTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.nc.SetDeadline(deadline)
	defer c.nc.SetDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Now()) })
	defer stop()
	if err := c.writeCmd(cmd); err != nil {
		return nil, err
	}
	for {
		f, err := c.rd.next()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		if f.Type == pb.BaseCommand_PING {
			if err := c.write(pongFrame); err != nil {
				return nil, err
			}
			continue
		}
		if f.Cmd == nil {
			continue
		}
		if id, ok := requestID(f.Cmd); ok && id == rid {
			if ps := f.Cmd.ProducerSuccess; ps != nil && !ps.GetProducerReady() {
				continue
			}
			resp := proto.Clone(f.Cmd).(*pb.BaseCommand)
			if e := resp.Error; e != nil {
				return nil, fmt.Errorf("%s: %s", e.GetError(), e.GetMessage())
			}
			return resp, nil
		}
	}
}

// errLookupRedirect is returned when a lookup does not answer Connect.
var errLookupRedirect = errors.New("perf: raw: lookup redirected to another broker (not supported in raw mode)")

// lookup asks the broker which broker serves topic. Connect is the only
// answer raw mode accepts: it then keeps using this connection to the
// service URL, as for a single broker or a proxy (it does not dial the
// returned broker URL). Redirect and Failed are errors.
func (c *rawConn) lookup(ctx context.Context, topic string) error {
	rid := c.reqID()
	resp, err := c.request(ctx, &pb.BaseCommand{Type: pb.BaseCommand_LOOKUP.Enum(), LookupTopic: &pb.CommandLookupTopic{
		Topic: proto.String(topic), RequestId: proto.Uint64(rid),
	}}, rid)
	if err != nil {
		return fmt.Errorf("perf: raw: lookup %s: %w", topic, err)
	}
	lr := resp.GetLookupTopicResponse()
	if lr == nil {
		return fmt.Errorf("perf: raw: lookup %s: unexpected %s", topic, resp.GetType())
	}
	switch lr.GetResponse() {
	case pb.CommandLookupTopicResponse_Connect:
		return nil
	case pb.CommandLookupTopicResponse_Redirect:
		return fmt.Errorf("%w: %s -> %s", errLookupRedirect, topic, lr.GetBrokerServiceUrl())
	default:
		return fmt.Errorf("perf: raw: lookup %s failed: %s: %s", topic, lr.GetError(), lr.GetMessage())
	}
}

// resolveTopics canonicalises the topics and expands partitioned ones into
// their partitions, asking the broker with pulsarclient (partitioned
// metadata is the same question whichever client asks it).
func resolveTopics(ctx context.Context, c *Common) ([]string, error) {
	cl, err := pulsarclient.NewClient(pulsarclient.ClientOptions{URL: c.ServiceURL, OperationTimeout: rawSetupTimeout})
	if err != nil {
		return nil, invalid("%v", err)
	}
	defer cl.Close()
	var out []string
	for _, t := range c.Topics {
		if _, err := pulsarproto.ParseTopicName(strings.TrimSpace(t)); err != nil {
			return nil, invalid("topic %q: %v", t, err)
		}
		parts, err := cl.TopicPartitions(ctx, strings.TrimSpace(t))
		if err != nil {
			return nil, fmt.Errorf("perf: raw: %w", err)
		}
		out = append(out, parts...)
	}
	return out, nil
}

// closeHandle sends a CLOSE_PRODUCER or CLOSE_CONSUMER and waits (bounded)
// for its SUCCESS, reading and dropping whatever else arrives. It must only
// be used by the connection's sole reader.
func (c *rawConn) closeHandle(ctx context.Context, cmd *pb.BaseCommand, rid uint64) error {
	_, err := c.request(context.WithoutCancel(ctx), cmd, rid)
	return err
}
