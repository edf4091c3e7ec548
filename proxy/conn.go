package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// clientIdentity is who a client connection authenticated as.
type clientIdentity struct {
	role   string // "" when authentication is off
	method string
	data   []byte
}

// preConnectMaxFrame bounds the CONNECT frame (a token is a few KiB).
const preConnectMaxFrame = 64 << 10

// maxRedirects bounds the lookup redirects the proxy follows.
const maxRedirects = 10

// clientConn is one client connection and its stats.
type clientConn struct {
	p      *Proxy
	nc     net.Conn
	br     *bufio.Reader
	log    *slog.Logger
	remote string
	since  time.Time

	role     atomic.Pointer[string]
	kind     atomic.Pointer[string] // "lookup" or "relay"
	broker   atomic.Pointer[string] // relay target
	bytesIn  atomic.Int64           // client → broker
	bytesOut atomic.Int64           // broker → client

	wmu sync.Mutex // lookup connections: serializes writes
}

func (p *Proxy) serveConn(nc net.Conn) {
	defer p.wg.Done()
	c := &clientConn{p: p, nc: nc, br: bufio.NewReaderSize(nc, 32<<10), remote: nc.RemoteAddr().String(), since: time.Now()}
	c.log = p.log.With("remote", c.remote)
	empty := ""
	c.role.Store(&empty)
	c.broker.Store(&empty)
	kind := "connecting"
	c.kind.Store(&kind)
	p.track(c, true)
	defer p.track(c, false)
	defer nc.Close()
	if err := c.serve(); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		c.log.Debug("client connection closed", "err", err)
	}
}

func (c *clientConn) writeCmd(cmd *pb.BaseCommand) error {
	b, err := pulsarproto.AppendCommand(nil, cmd)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
	_, err = c.nc.Write(b)
	return err
}

func (c *clientConn) sendError(rid uint64, code pb.ServerError, msg string) error {
	return c.writeCmd(&pb.BaseCommand{Type: pb.BaseCommand_ERROR.Enum(), Error: &pb.CommandError{
		RequestId: proto.Uint64(rid), Error: code.Enum(), Message: proto.String(msg),
	}})
}

// serve reads CONNECT, authenticates the client and runs the connection
// as a lookup connection or a relay.
func (c *clientConn) serve() error {
	p := c.p
	_ = c.nc.SetDeadline(time.Now().Add(p.cfg.ConnectTimeout))
	fr := pulsarproto.NewFrameReader(c.br, preConnectMaxFrame)
	f, err := fr.Next()
	if err != nil {
		return err
	}
	if f.Type != pb.BaseCommand_CONNECT || f.Cmd.Connect == nil {
		p.m.rejected.Inc()
		return fmt.Errorf("proxy: %s before CONNECT", f.Type)
	}
	m := proto.Clone(f.Cmd.Connect).(*pb.CommandConnect)
	cl := clientIdentity{method: pulsarproto.ConnectAuthMethod(m), data: m.GetAuthData()}
	if m.OriginalPrincipal != nil || m.OriginalAuthData != nil || m.OriginalAuthMethod != nil {
		// Only the proxy names an original principal; a client naming
		// one is trying to pass for someone else.
		p.m.rejected.Inc()
		c.log.Warn("client sent an original principal: refused", "original_principal", m.GetOriginalPrincipal())
		_ = c.sendError(math.MaxUint64, pb.ServerError_AuthorizationError, "Invalid roles.")
		return errors.New("proxy: client sent original_principal")
	}
	if s := p.cfg.Security; s.Enabled() {
		id, err := s.AuthenticateConnect(cl.method, cl.data, auth.ConnTLS(c.nc), "/"+c.remote)
		if err != nil {
			p.m.rejected.Inc()
			_ = c.sendError(math.MaxUint64, pb.ServerError_AuthenticationError, "Failed to authenticate")
			return fmt.Errorf("proxy: CONNECT: %w", err)
		}
		cl.role = id.Role
		c.role.Store(&id.Role)
	}
	if m.ProxyToBrokerUrl != nil {
		return c.relay(m, cl)
	}
	return c.serveLookups(fr, m, cl)
}

// ---- lookup connections ----

// serveLookups answers CONNECTED itself, then LOOKUP (following
// redirects), PARTITIONED_METADATA, GET_TOPICS_OF_NAMESPACE and
// GET_SCHEMA through the proxy's broker connections.
func (c *clientConn) serveLookups(fr *pulsarproto.FrameReader, m *pb.CommandConnect, cl clientIdentity) error {
	p := c.p
	kind := "lookup"
	c.kind.Store(&kind)
	pv := min(m.GetProtocolVersion(), protocolVersion)
	if err := c.writeCmd(&pb.BaseCommand{Type: pb.BaseCommand_CONNECTED.Enum(), Connected: &pb.CommandConnected{
		ServerVersion: proto.String(clientVersion), ProtocolVersion: &pv,
		MaxMessageSize: proto.Int32(int32(p.cfg.MaxMessageSize)), FeatureFlags: &pb.FeatureFlags{},
	}}); err != nil {
		return err
	}
	fr.SetMaxFrameSize(p.cfg.MaxMessageSize + pulsarproto.FramePadding)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel() // requests in flight end now: their client is gone
		wg.Wait()
	}()
	var lastRead atomic.Int64
	lastRead.Store(time.Now().UnixNano())
	if p.cfg.KeepAlive > 0 {
		go c.keepAlive(ctx, &lastRead)
	}
	for {
		if p.cfg.KeepAlive > 0 {
			_ = c.nc.SetReadDeadline(time.Now().Add(p.cfg.KeepAlive * 5 / 2))
		}
		f, err := fr.Next()
		if err != nil {
			return err
		}
		lastRead.Store(time.Now().UnixNano())
		cmd := f.Cmd
		switch f.Type {
		case pb.BaseCommand_PING:
			_ = c.writeCmd(&pb.BaseCommand{Type: pb.BaseCommand_PONG.Enum(), Pong: &pb.CommandPong{}})
		case pb.BaseCommand_PONG:
		case pb.BaseCommand_LOOKUP:
			if cmd.LookupTopic == nil {
				return errors.New("proxy: LOOKUP without body")
			}
			lk := proto.Clone(cmd.LookupTopic).(*pb.CommandLookupTopic)
			if !p.lookupSem.tryAcquire() {
				p.m.lookupFailures.Inc()
				_ = c.writeLookup(failedLookup(lk.GetRequestId(), pb.ServerError_TooManyRequests, "Failed due to too many pending lookup requests"))
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer p.lookupSem.release()
				_ = c.writeLookup(p.lookup(ctx, lk, cl))
			}()
		case pb.BaseCommand_PARTITIONED_METADATA, pb.BaseCommand_GET_TOPICS_OF_NAMESPACE, pb.BaseCommand_GET_SCHEMA:
			fwd := proto.Clone(cmd).(*pb.BaseCommand)
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = c.writeCmd(p.forward(ctx, fwd, cl))
			}()
		default:
			// Topic traffic belongs on a relayed connection
			// (CONNECT with proxy_to_broker_url).
			return fmt.Errorf("proxy: %s on a lookup connection", f.Type)
		}
	}
}

// keepAlive pings the client when it has been silent for an interval.
func (c *clientConn) keepAlive(ctx context.Context, lastRead *atomic.Int64) {
	t := time.NewTicker(c.p.cfg.KeepAlive)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if now.Sub(time.Unix(0, lastRead.Load())) >= c.p.cfg.KeepAlive {
				_ = c.writeCmd(&pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}})
			}
		}
	}
}

func (c *clientConn) writeLookup(r *pb.CommandLookupTopicResponse) error {
	return c.writeCmd(&pb.BaseCommand{Type: pb.BaseCommand_LOOKUP_RESPONSE.Enum(), LookupTopicResponse: r})
}

func failedLookup(rid uint64, code pb.ServerError, msg string) *pb.CommandLookupTopicResponse {
	return &pb.CommandLookupTopicResponse{RequestId: proto.Uint64(rid), Response: pb.CommandLookupTopicResponse_Failed.Enum(),
		Error: code.Enum(), Message: proto.String(msg)}
}

// requestTimeout bounds one lookup or forwarded request.
const requestTimeout = 30 * time.Second

// brokerRequest sends cmd to a broker chosen by discovery (another one
// when the first cannot be reached), through the pool.
func (p *Proxy) brokerRequest(ctx context.Context, hp string, cmd *pb.BaseCommand, setID func(uint64), cl clientIdentity) (*pb.BaseCommand, error) {
	tries := 1
	if hp == "" {
		bs, _ := p.disc.brokers(ctx, false)
		tries = max(1, min(len(bs), 3))
	}
	var lastErr error
	for range tries {
		target := hp
		if target == "" {
			b, err := p.disc.next(ctx)
			if err != nil {
				return nil, err
			}
			target = hostOf(b.binaryURL(p.disc.tls))
		}
		u, err := p.pool.get(ctx, target, cl)
		if err != nil {
			lastErr = err
			continue
		}
		r, err := u.request(ctx, cmd, setID)
		if err == nil {
			return r, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

// lookup resolves the owner of a topic for the client, following the
// brokers' redirects itself, and answers Connect to the owner with
// proxy_through_service_url set: the client then connects to the proxy
// again, naming the owner in proxy_to_broker_url.
func (p *Proxy) lookup(ctx context.Context, lk *pb.CommandLookupTopic, cl clientIdentity) *pb.CommandLookupTopicResponse {
	p.m.lookups.Inc()
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	rid := lk.GetRequestId()
	q := &pb.CommandLookupTopic{Topic: lk.Topic, Authoritative: lk.Authoritative, AdvertisedListenerName: lk.AdvertisedListenerName}
	cmd := &pb.BaseCommand{Type: pb.BaseCommand_LOOKUP.Enum(), LookupTopic: q}
	setID := func(id uint64) { q.RequestId = proto.Uint64(id) }
	hp := ""
	for range maxRedirects {
		r, err := p.brokerRequest(ctx, hp, cmd, setID, cl)
		if err != nil {
			p.m.lookupFailures.Inc()
			p.log.Info("lookup failed", "topic", lk.GetTopic(), "err", err)
			return failedLookup(rid, pb.ServerError_ServiceNotReady, "Failed to look up topic through the proxy: "+err.Error())
		}
		if r.GetType() == pb.BaseCommand_ERROR {
			p.m.lookupFailures.Inc()
			return failedLookup(rid, r.GetError().GetError(), r.GetError().GetMessage())
		}
		lr := r.GetLookupTopicResponse()
		switch lr.GetResponse() {
		case pb.CommandLookupTopicResponse_Failed:
			p.m.lookupFailures.Inc()
			lr.RequestId = proto.Uint64(rid)
			return lr
		case pb.CommandLookupTopicResponse_Redirect:
			u := p.pickURL(lr)
			if u == "" {
				break
			}
			hp = hostOf(u)
			q.Authoritative = proto.Bool(lr.GetAuthoritative())
			continue
		case pb.CommandLookupTopicResponse_Connect:
			u := p.pickURL(lr)
			if u == "" {
				break
			}
			p.disc.learn(u)
			return &pb.CommandLookupTopicResponse{RequestId: proto.Uint64(rid), Response: pb.CommandLookupTopicResponse_Connect.Enum(),
				BrokerServiceUrl: proto.String(u), BrokerServiceUrlTls: proto.String(u),
				Authoritative: proto.Bool(true), ProxyThroughServiceUrl: proto.Bool(true)}
		}
		p.m.lookupFailures.Inc()
		return failedLookup(rid, pb.ServerError_ServiceNotReady, "broker answered the lookup without a URL the proxy can use")
	}
	p.m.lookupFailures.Inc()
	return failedLookup(rid, pb.ServerError_ServiceNotReady, "Reached max number of redirections")
}

// pickURL is the broker URL of a lookup answer for the proxy's transport.
func (p *Proxy) pickURL(lr *pb.CommandLookupTopicResponse) string {
	if p.disc.tls {
		return lr.GetBrokerServiceUrlTls()
	}
	return lr.GetBrokerServiceUrl()
}

// forward sends PARTITIONED_METADATA, GET_TOPICS_OF_NAMESPACE or
// GET_SCHEMA to a broker and returns the answer under the client's
// request id.
func (p *Proxy) forward(ctx context.Context, cmd *pb.BaseCommand, cl clientIdentity) *pb.BaseCommand {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var rid uint64
	var setID func(uint64)
	switch cmd.GetType() {
	case pb.BaseCommand_PARTITIONED_METADATA:
		p.m.partitionLookups.Inc()
		m := cmd.PartitionMetadata
		rid = m.GetRequestId()
		m.OriginalPrincipal, m.OriginalAuthData, m.OriginalAuthMethod = nil, nil, nil
		setID = func(id uint64) { m.RequestId = proto.Uint64(id) }
	case pb.BaseCommand_GET_TOPICS_OF_NAMESPACE:
		m := cmd.GetTopicsOfNamespace
		rid = m.GetRequestId()
		setID = func(id uint64) { m.RequestId = proto.Uint64(id) }
	case pb.BaseCommand_GET_SCHEMA:
		m := cmd.GetSchema
		rid = m.GetRequestId()
		setID = func(id uint64) { m.RequestId = proto.Uint64(id) }
	}
	r, err := p.brokerRequest(ctx, "", cmd, setID, cl)
	if err != nil {
		p.log.Info("forwarded request failed", "type", cmd.GetType(), "err", err)
		if cmd.GetType() == pb.BaseCommand_PARTITIONED_METADATA {
			return &pb.BaseCommand{Type: pb.BaseCommand_PARTITIONED_METADATA_RESPONSE.Enum(), PartitionMetadataResponse: &pb.CommandPartitionedTopicMetadataResponse{
				RequestId: proto.Uint64(rid), Response: pb.CommandPartitionedTopicMetadataResponse_Failed.Enum(),
				Error: pb.ServerError_ServiceNotReady.Enum(), Message: proto.String(err.Error())}}
		}
		return &pb.BaseCommand{Type: pb.BaseCommand_ERROR.Enum(), Error: &pb.CommandError{
			RequestId: proto.Uint64(rid), Error: pb.ServerError_ServiceNotReady.Enum(), Message: proto.String(err.Error())}}
	}
	switch r.GetType() {
	case pb.BaseCommand_PARTITIONED_METADATA_RESPONSE:
		r.PartitionMetadataResponse.RequestId = proto.Uint64(rid)
	case pb.BaseCommand_GET_TOPICS_OF_NAMESPACE_RESPONSE:
		r.GetTopicsOfNamespaceResponse.RequestId = proto.Uint64(rid)
	case pb.BaseCommand_GET_SCHEMA_RESPONSE:
		r.GetSchemaResponse.RequestId = proto.Uint64(rid)
	case pb.BaseCommand_ERROR:
		r.Error.RequestId = proto.Uint64(rid)
	}
	return r
}

// ---- relayed connections ----

// relay connects the client to the broker it named in
// proxy_to_broker_url and copies bytes both ways until either side
// closes. Frames are not decoded after the handshake.
func (c *clientConn) relay(m *pb.CommandConnect, cl clientIdentity) error {
	p := c.p
	kind := "relay"
	c.kind.Store(&kind)
	target := m.GetProxyToBrokerUrl()
	if _, rest, ok := strings.Cut(target, "://"); ok {
		target = rest
	}
	target = strings.TrimSuffix(target, "/")
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.ConnectTimeout)
	defer cancel()
	if !p.disc.validTarget(ctx, target) {
		p.m.rejected.Inc()
		c.log.Warn("relay refused: not a known broker", "target", target)
		_ = c.sendError(math.MaxUint64, pb.ServerError_ServiceNotReady, "Target broker cannot be validated.")
		return fmt.Errorf("proxy: unknown target %q", target)
	}
	c.broker.Store(&target)
	connect, err := p.brokerConnect(cl, m.GetProtocolVersion(), m.GetFeatureFlags())
	if err != nil {
		_ = c.sendError(math.MaxUint64, pb.ServerError_ServiceNotReady, "proxy has no usable broker credentials")
		return err
	}
	bc, bbr, raw, typ, err := p.dialBroker(ctx, target, connect)
	if err != nil {
		p.m.brokerConnectFailures.Inc()
		_ = c.sendError(math.MaxUint64, pb.ServerError_ServiceNotReady, "Failed to connect to broker "+target)
		return err
	}
	defer bc.Close()
	_ = c.nc.SetDeadline(time.Time{})
	if _, err := c.nc.Write(raw); err != nil {
		return err
	}
	if typ != pb.BaseCommand_CONNECTED {
		c.log.Info("broker refused the relayed CONNECT", "target", target, "answer", describeError(raw))
		return fmt.Errorf("proxy: broker %s answered %s", target, typ)
	}
	p.m.relays.Inc()
	defer p.m.relays.Dec()
	errc := make(chan error, 2)
	go func() { errc <- p.pipe(bc, c.nc, c.br, &c.bytesIn, p.m.bytesIn) }()
	go func() { errc <- p.pipe(c.nc, bc, bbr, &c.bytesOut, p.m.bytesOut) }()
	err = <-errc
	// Either side gone: close both, the other copy ends too.
	c.nc.Close()
	bc.Close()
	<-errc
	return err
}
