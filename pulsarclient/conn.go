package pulsarclient

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/internal/tlsconn"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// clientVersion is what CONNECT announces.
const clientVersion = "magnetar-pulsarclient"

// keepAliveInterval is how often an idle connection sends PING; a
// connection that read nothing for two intervals is closed.
const keepAliveInterval = 30 * time.Second

// producerHandler receives what the broker sends to one producer. The
// methods run on the connection's reader goroutine and must not block on
// the network.
type producerHandler interface {
	receipt(seq, highest uint64, id MessageID)
	sendError(seq uint64, err error)
	// connectionClosed is called (on its own goroutine) when the
	// connection ends or the broker closes the producer.
	connectionClosed(c *conn)
}

// consumerHandler receives what the broker sends to one consumer.
type consumerHandler interface {
	// message gets a MESSAGE; payload is only valid during the call.
	message(cmd *pb.CommandMessage, payload []byte)
	connectionClosed(c *conn)
}

// conn is one connection to a broker (or to a proxy in front of one). A
// reader goroutine dispatches responses by request id, receipts by
// producer id and messages by consumer id; a writer goroutine writes the
// queued frames, coalescing them.
type conn struct {
	cl       *Client
	key      string // pool key
	logical  string // broker URL (proxy_to_broker_url when proxied)
	nc       net.Conn
	maxMsg   int
	out      chan []byte
	done     chan struct{}
	lastRead atomic.Int64 // unix nanos

	mu        sync.Mutex // guards the fields below
	closed    bool
	err       error
	pending   map[uint64]chan *pb.BaseCommand
	producers map[uint64]producerHandler
	consumers map[uint64]consumerHandler
}

// dialConn connects to physical (a broker or proxy URL) and handshakes;
// logical, when it differs, is announced as proxy_to_broker_url.
func (cl *Client) dialConn(ctx context.Context, key, logical, physical string) (*conn, error) {
	u, err := parseServiceURL(physical)
	if err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, cl.opts.ConnectionTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(dctx, "tcp", u.hosts[0])
	if err != nil {
		return nil, fmt.Errorf("pulsarclient: dial %s: %w", u.hosts[0], err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	if u.tls {
		cfg, err := cl.tlsConfig(u.hosts[0])
		if err != nil {
			nc.Close()
			return nil, err
		}
		tc, err := tlsconn.Client(dctx, nc, u.hosts[0], cfg)
		if err != nil {
			return nil, fmt.Errorf("pulsarclient: tls handshake with %s: %w", u.hosts[0], err)
		}
		nc = tc
	}
	c := &conn{cl: cl, key: key, logical: logical, nc: nc, maxMsg: pulsarproto.DefaultMaxMessageSize,
		out: make(chan []byte, 1024), done: make(chan struct{}), pending: map[uint64]chan *pb.BaseCommand{},
		producers: map[uint64]producerHandler{}, consumers: map[uint64]consumerHandler{}}
	br := bufio.NewReaderSize(nc, 64<<10)
	fr := pulsarproto.NewFrameReader(br, pulsarproto.DefaultMaxFrameSize)
	if err := c.handshake(dctx, fr, logical != physical); err != nil {
		nc.Close()
		return nil, err
	}
	fr.SetMaxFrameSize(c.maxMsg + pulsarproto.FramePadding)
	c.lastRead.Store(time.Now().UnixNano())
	go c.writeLoop()
	go c.readLoop(fr)
	go c.keepAlive()
	return c, nil
}

func (cl *Client) tlsConfig(hostport string) (*tls.Config, error) {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	cfg := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	var roots *x509.CertPool
	if p := cl.opts.TLSTrustCertsFilePath; p != "" {
		pem, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("pulsarclient: trust certs: %w", err)
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("pulsarclient: trust certs %s: no PEM certificate", p)
		}
		cfg.RootCAs = roots
	}
	if a, ok := cl.opts.Authentication.(tlsCertProvider); ok {
		cert, err := a.certificate()
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{*cert}
	}
	switch {
	case cl.opts.TLSAllowInsecureConnection:
		cfg.InsecureSkipVerify = true
	case !cl.opts.TLSValidateHostname:
		// Verify the chain but not the name, as Pulsar clients do unless
		// hostname verification is on.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("pulsarclient: broker sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			return err
		}
	}
	return cfg, nil
}

func (c *conn) handshake(ctx context.Context, fr *pulsarproto.FrameReader, proxied bool) error {
	if d, ok := ctx.Deadline(); ok {
		c.nc.SetDeadline(d)
		defer c.nc.SetDeadline(time.Time{})
	}
	cc := &pb.CommandConnect{
		ClientVersion:   proto.String(clientVersion),
		ProtocolVersion: proto.Int32(int32(pb.ProtocolVersion_v20)),
		FeatureFlags:    &pb.FeatureFlags{SupportsAuthRefresh: proto.Bool(true)},
	}
	if proxied {
		cc.ProxyToBrokerUrl = proto.String(c.logical)
	}
	if a := c.cl.opts.Authentication; a != nil {
		data, err := a.Data()
		if err != nil {
			return err
		}
		cc.AuthMethodName = proto.String(a.Name())
		cc.AuthData = data
	}
	if err := c.writeDirect(&pb.BaseCommand{Type: pb.BaseCommand_CONNECT.Enum(), Connect: cc}); err != nil {
		return fmt.Errorf("pulsarclient: connect: %w", err)
	}
	for {
		f, err := fr.Next()
		if err != nil {
			return fmt.Errorf("pulsarclient: connect: %w", err)
		}
		switch f.Type {
		case pb.BaseCommand_CONNECTED:
			if m := f.Cmd.GetConnected().GetMaxMessageSize(); m > 0 {
				c.maxMsg = int(m)
			}
			return nil
		case pb.BaseCommand_AUTH_CHALLENGE:
			if err := c.writeDirect(c.authResponse()); err != nil {
				return err
			}
		case pb.BaseCommand_ERROR:
			e := f.Cmd.GetError()
			return &ServerError{Code: e.GetError(), Message: e.GetMessage()}
		case pb.BaseCommand_PING:
			if err := c.writeDirect(&pb.BaseCommand{Type: pb.BaseCommand_PONG.Enum(), Pong: &pb.CommandPong{}}); err != nil {
				return err
			}
		default:
			return fmt.Errorf("pulsarclient: connect: unexpected %s", f.Type)
		}
	}
}

func (c *conn) authResponse() *pb.BaseCommand {
	r := &pb.CommandAuthResponse{ClientVersion: proto.String(clientVersion),
		ProtocolVersion: proto.Int32(int32(pb.ProtocolVersion_v20))}
	if a := c.cl.opts.Authentication; a != nil {
		data, _ := a.Data() // an error sends empty data: the broker refuses it
		r.Response = &pb.AuthData{AuthMethodName: proto.String(a.Name()), AuthData: data}
	}
	return &pb.BaseCommand{Type: pb.BaseCommand_AUTH_RESPONSE.Enum(), AuthResponse: r}
}

// writeDirect writes cmd before the writer goroutine runs.
func (c *conn) writeDirect(cmd *pb.BaseCommand) error {
	b, err := pulsarproto.AppendCommand(nil, cmd)
	if err != nil {
		return err
	}
	_, err = c.nc.Write(b)
	return err
}

// send queues whole frames b for writing; false when the connection is
// closed (the frames are dropped).
func (c *conn) send(b []byte) bool {
	select {
	case <-c.done:
		return false
	default:
	}
	select {
	case c.out <- b:
		return true
	case <-c.done:
		return false
	}
}

// sendCmd encodes and queues a control command.
func (c *conn) sendCmd(cmd *pb.BaseCommand) bool {
	b, err := pulsarproto.AppendCommand(nil, cmd)
	if err != nil {
		return false
	}
	return c.send(b)
}

func (c *conn) writeLoop() {
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	for {
		select {
		case b := <-c.out:
			if _, err := bw.Write(b); err != nil {
				c.close(err)
				return
			}
			for more := true; more; {
				select {
				case b := <-c.out:
					if _, err := bw.Write(b); err != nil {
						c.close(err)
						return
					}
				default:
					more = false
				}
			}
			if err := bw.Flush(); err != nil {
				c.close(err)
				return
			}
		case <-c.done:
			return
		}
	}
}

func (c *conn) keepAlive() {
	t := time.NewTicker(keepAliveInterval)
	defer t.Stop()
	ping := &pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}}
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			if time.Since(time.Unix(0, c.lastRead.Load())) > 2*keepAliveInterval {
				c.close(errors.New("pulsarclient: keepalive timeout"))
				return
			}
			c.sendCmd(ping)
		}
	}
}

var pongCmd = &pb.BaseCommand{Type: pb.BaseCommand_PONG.Enum(), Pong: &pb.CommandPong{}}

func (c *conn) readLoop(fr *pulsarproto.FrameReader) {
	for {
		f, err := fr.Next()
		if err != nil {
			c.close(err)
			return
		}
		c.lastRead.Store(time.Now().UnixNano())
		cmd := f.Cmd
		switch f.Type {
		case pb.BaseCommand_PING:
			c.sendCmd(pongCmd)
		case pb.BaseCommand_PONG:
		case pb.BaseCommand_SEND_RECEIPT:
			r := cmd.GetSendReceipt()
			if h := c.producer(r.GetProducerId()); h != nil {
				mid := r.GetMessageId()
				h.receipt(r.GetSequenceId(), r.GetHighestSequenceId(), MessageID{Ledger: int64(mid.GetLedgerId()),
					Entry: int64(mid.GetEntryId()), BatchIndex: -1, Partition: -1})
			}
		case pb.BaseCommand_SEND_ERROR:
			e := cmd.GetSendError()
			if h := c.producer(e.GetProducerId()); h != nil {
				h.sendError(e.GetSequenceId(), &ServerError{Code: e.GetError(), Message: e.GetMessage()})
			}
		case pb.BaseCommand_MESSAGE:
			m := cmd.GetMessage()
			if h := c.consumer(m.GetConsumerId()); h != nil {
				h.message(m, f.Payload)
			}
		case pb.BaseCommand_CLOSE_PRODUCER:
			id := cmd.GetCloseProducer().GetProducerId()
			c.mu.Lock()
			h := c.producers[id]
			delete(c.producers, id)
			c.mu.Unlock()
			if h != nil {
				go h.connectionClosed(c)
			}
		case pb.BaseCommand_CLOSE_CONSUMER:
			id := cmd.GetCloseConsumer().GetConsumerId()
			c.mu.Lock()
			h := c.consumers[id]
			delete(c.consumers, id)
			c.mu.Unlock()
			if h != nil {
				go h.connectionClosed(c)
			}
		case pb.BaseCommand_AUTH_CHALLENGE:
			c.sendCmd(c.authResponse())
		default:
			rid, ok := pulsarproto.ResponseRequestID(cmd)
			if !ok {
				continue // ACTIVE_CONSUMER_CHANGE, REACHED_END_OF_TOPIC, ...
			}
			if ps := cmd.ProducerSuccess; ps != nil && ps.ProducerReady != nil && !ps.GetProducerReady() {
				continue // queued behind an exclusive producer: wait for the next one
			}
			c.mu.Lock()
			ch := c.pending[rid]
			delete(c.pending, rid)
			c.mu.Unlock()
			if ch != nil {
				ch <- proto.Clone(cmd).(*pb.BaseCommand)
			}
		}
	}
}

func (c *conn) producer(id uint64) producerHandler {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.producers[id]
}

func (c *conn) consumer(id uint64) consumerHandler {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.consumers[id]
}

// register adds a handler; false when the connection is closed.
func (c *conn) addProducer(id uint64, h producerHandler) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.producers[id] = h
	return true
}

func (c *conn) addConsumer(id uint64, h consumerHandler) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.consumers[id] = h
	return true
}

func (c *conn) removeProducer(id uint64) {
	c.mu.Lock()
	delete(c.producers, id)
	c.mu.Unlock()
}

func (c *conn) removeConsumer(id uint64) {
	c.mu.Lock()
	delete(c.consumers, id)
	c.mu.Unlock()
}

// request sends cmd, whose request id is rid, and waits for the response
// with that id. An ERROR response is returned as *ServerError.
func (c *conn) request(ctx context.Context, rid uint64, cmd *pb.BaseCommand) (*pb.BaseCommand, error) {
	ch := make(chan *pb.BaseCommand, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrConnectionClosed
	}
	c.pending[rid] = ch
	c.mu.Unlock()
	if !c.sendCmd(cmd) {
		return nil, ErrConnectionClosed
	}
	tctx, cancel := context.WithTimeout(ctx, c.cl.opts.OperationTimeout)
	defer cancel()
	select {
	case resp := <-ch:
		if e := resp.Error; e != nil {
			return nil, &ServerError{Code: e.GetError(), Message: e.GetMessage()}
		}
		return resp, nil
	case <-c.done:
		return nil, ErrConnectionClosed
	case <-tctx.Done():
		c.mu.Lock()
		delete(c.pending, rid)
		c.mu.Unlock()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("pulsarclient: %s: no answer within %s: %w", cmd.GetType(), c.cl.opts.OperationTimeout, context.DeadlineExceeded)
	}
}

// close ends the connection once and tells every handler.
func (c *conn) close(err error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed, c.err = true, err
	producers, consumers := c.producers, c.consumers
	c.producers, c.consumers = map[uint64]producerHandler{}, map[uint64]consumerHandler{}
	c.pending = map[uint64]chan *pb.BaseCommand{}
	c.mu.Unlock()
	close(c.done)
	c.nc.Close()
	c.cl.dropConn(c)
	for _, h := range producers {
		go h.connectionClosed(c)
	}
	for _, h := range consumers {
		go h.connectionClosed(c)
	}
}
