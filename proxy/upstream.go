package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/internal/tlsconn"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// protocolVersion is the protocol version the proxy speaks on its own
// connections (lookup connections and the broker pool).
const protocolVersion = 20

// clientVersion is the CONNECT.client_version of the proxy's broker
// connections, as Pulsar's proxy sends it.
const clientVersion = "Pulsar proxy"

// errUpstreamClosed is returned for requests on a broken broker
// connection.
var errUpstreamClosed = errors.New("proxy: broker connection closed")

// brokerConnect builds the CONNECT the proxy sends a broker: its own
// credentials, the client's role as original principal and, with
// forwardAuthorizationCredentials, the client's credentials.
func (p *Proxy) brokerConnect(cl clientIdentity, pv int32, flags *pb.FeatureFlags) (*pb.CommandConnect, error) {
	m := &pb.CommandConnect{
		ClientVersion:   proto.String(clientVersion),
		ProtocolVersion: proto.Int32(pv),
		AuthMethodName:  proto.String(""),
		FeatureFlags:    flags,
	}
	if a := p.cfg.BrokerClientAuth; a != nil {
		d, err := a.Data()
		if err != nil {
			return nil, fmt.Errorf("proxy: broker client credentials: %w", err)
		}
		m.AuthMethodName, m.AuthData = proto.String(a.Method), d
	}
	if cl.role != "" {
		m.OriginalPrincipal = proto.String(cl.role)
		if p.cfg.ForwardAuthorizationCredentials {
			m.OriginalAuthMethod = proto.String(cl.method)
			m.OriginalAuthData = proto.String(string(cl.data))
		}
	}
	return m, nil
}

// dialBroker connects to broker hp (host:port), sends connect and reads
// the broker's answer. It returns the connection, a reader positioned
// after that answer, the answer as received and its type.
func (p *Proxy) dialBroker(ctx context.Context, hp string, connect *pb.CommandConnect) (net.Conn, *bufio.Reader, []byte, pb.BaseCommand_Type, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.ConnectTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", hp)
	if err != nil {
		return nil, nil, nil, 0, fmt.Errorf("proxy: dial broker %s: %w", hp, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if c := p.cfg.BrokerClientTLS; c != nil {
		tc, err := tlsconn.Client(ctx, nc, hp, c)
		if err != nil {
			return nil, nil, nil, 0, fmt.Errorf("proxy: TLS to broker %s: %w", hp, err)
		}
		nc = tc
	}
	dl, _ := ctx.Deadline()
	_ = nc.SetDeadline(dl)
	frame, err := pulsarproto.AppendCommand(nil, &pb.BaseCommand{Type: pb.BaseCommand_CONNECT.Enum(), Connect: connect})
	if err == nil {
		_, err = nc.Write(frame)
	}
	br := bufio.NewReaderSize(nc, 32<<10)
	var raw []byte
	if err == nil {
		raw, err = pulsarproto.ReadFrame(br, 64<<10, nil)
	}
	var f pulsarproto.Frame
	if err == nil {
		var dec pulsarproto.Decoder
		_, f, err = dec.Decode(raw)
	}
	if err != nil {
		nc.Close()
		return nil, nil, nil, 0, fmt.Errorf("proxy: CONNECT to broker %s: %w", hp, err)
	}
	_ = nc.SetDeadline(time.Time{})
	return nc, br, raw, f.Type, nil
}

// upstream is a pooled broker connection that carries the proxy's own
// requests (lookups, partitioned metadata, topic lists, schemas) for
// one original principal. Requests get the proxy's request ids; the
// reader goroutine hands each response to its waiter.
type upstream struct {
	nc       net.Conn
	wmu      sync.Mutex
	nextID   atomic.Uint64
	lastUsed atomic.Int64
	done     chan struct{}

	mu struct {
		sync.Mutex
		pending map[uint64]chan *pb.BaseCommand
		err     error
	}
}

func (p *Proxy) newUpstream(ctx context.Context, hp string, cl clientIdentity) (*upstream, error) {
	connect, err := p.brokerConnect(cl, protocolVersion, &pb.FeatureFlags{})
	if err != nil {
		return nil, err
	}
	nc, br, raw, typ, err := p.dialBroker(ctx, hp, connect)
	if err != nil {
		return nil, err
	}
	if typ != pb.BaseCommand_CONNECTED {
		nc.Close()
		return nil, fmt.Errorf("proxy: broker %s refused CONNECT: %s", hp, describeError(raw))
	}
	u := &upstream{nc: nc, done: make(chan struct{})}
	u.mu.pending = map[uint64]chan *pb.BaseCommand{}
	u.lastUsed.Store(time.Now().UnixNano())
	go u.readLoop(br)
	return u, nil
}

// describeError renders an ERROR frame for logs.
func describeError(raw []byte) string {
	var dec pulsarproto.Decoder
	_, f, err := dec.Decode(raw)
	if err != nil {
		return err.Error()
	}
	if f.Cmd.Error != nil {
		return f.Cmd.Error.GetError().String() + ": " + f.Cmd.Error.GetMessage()
	}
	return f.Type.String()
}

func (u *upstream) readLoop(br *bufio.Reader) {
	fr := pulsarproto.NewFrameReader(br, 0)
	var err error
	for {
		var f pulsarproto.Frame
		f, err = fr.Next()
		if err != nil {
			break
		}
		var rid uint64
		c := f.Cmd
		switch f.Type {
		case pb.BaseCommand_PING:
			u.write(&pb.BaseCommand{Type: pb.BaseCommand_PONG.Enum(), Pong: &pb.CommandPong{}})
			continue
		case pb.BaseCommand_LOOKUP_RESPONSE:
			rid = c.GetLookupTopicResponse().GetRequestId()
		case pb.BaseCommand_PARTITIONED_METADATA_RESPONSE:
			rid = c.GetPartitionMetadataResponse().GetRequestId()
		case pb.BaseCommand_GET_TOPICS_OF_NAMESPACE_RESPONSE:
			rid = c.GetGetTopicsOfNamespaceResponse().GetRequestId()
		case pb.BaseCommand_GET_SCHEMA_RESPONSE:
			rid = c.GetGetSchemaResponse().GetRequestId()
		case pb.BaseCommand_ERROR:
			rid = c.GetError().GetRequestId()
		default:
			continue // PONG, AUTH_CHALLENGE (the pool's connections do not refresh) ...
		}
		u.mu.Lock()
		ch := u.mu.pending[rid]
		delete(u.mu.pending, rid)
		u.mu.Unlock()
		if ch != nil {
			ch <- proto.Clone(c).(*pb.BaseCommand)
		}
	}
	u.fail(err)
}

// fail closes u and wakes every waiter.
func (u *upstream) fail(err error) {
	u.mu.Lock()
	if u.mu.err != nil {
		u.mu.Unlock()
		return
	}
	if err == nil {
		err = errUpstreamClosed
	}
	u.mu.err = fmt.Errorf("%w: %w", errUpstreamClosed, err)
	pending := u.mu.pending
	u.mu.pending = nil
	u.mu.Unlock()
	u.nc.Close()
	close(u.done)
	for _, ch := range pending {
		close(ch)
	}
}

func (u *upstream) broken() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.mu.err != nil
}

func (u *upstream) write(cmd *pb.BaseCommand) error {
	b, err := pulsarproto.AppendCommand(nil, cmd)
	if err != nil {
		return err
	}
	u.wmu.Lock()
	defer u.wmu.Unlock()
	_ = u.nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
	_, err = u.nc.Write(b)
	if err != nil {
		go u.fail(err)
	}
	return err
}

// request sends cmd after setID stamped it with a fresh request id and
// waits for the response.
func (u *upstream) request(ctx context.Context, cmd *pb.BaseCommand, setID func(uint64)) (*pb.BaseCommand, error) {
	u.lastUsed.Store(time.Now().UnixNano())
	id := u.nextID.Add(1)
	setID(id)
	ch := make(chan *pb.BaseCommand, 1)
	u.mu.Lock()
	if u.mu.err != nil {
		err := u.mu.err
		u.mu.Unlock()
		return nil, err
	}
	u.mu.pending[id] = ch
	u.mu.Unlock()
	if err := u.write(cmd); err != nil {
		return nil, fmt.Errorf("%w: %w", errUpstreamClosed, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, errUpstreamClosed
		}
		return r, nil
	case <-ctx.Done():
		u.mu.Lock()
		if u.mu.pending != nil {
			delete(u.mu.pending, id)
		}
		u.mu.Unlock()
		return nil, ctx.Err()
	}
}

// poolKey names a pooled connection: broker and the identity it acts for.
type poolKey struct {
	hp                             string
	principal, method, forwardData string
}

type poolEntry struct {
	mu sync.Mutex
	u  *upstream
}

// pool holds the proxy's own broker connections. Idle ones are closed
// by sweep.
type pool struct {
	p  *Proxy
	mu sync.Mutex
	m  map[poolKey]*poolEntry
}

func (pl *pool) get(ctx context.Context, hp string, cl clientIdentity) (*upstream, error) {
	k := poolKey{hp: hp, principal: cl.role}
	if pl.p.cfg.ForwardAuthorizationCredentials {
		k.method, k.forwardData = cl.method, string(cl.data)
	}
	pl.mu.Lock()
	e := pl.m[k]
	if e == nil {
		e = &poolEntry{}
		pl.m[k] = e
	}
	pl.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.u != nil && !e.u.broken() {
		return e.u, nil
	}
	u, err := pl.p.newUpstream(ctx, hp, cl)
	if err != nil {
		return nil, err
	}
	e.u = u
	return u, nil
}

// sweep closes connections idle for longer than idle.
func (pl *pool) sweep(idle time.Duration) {
	cut := time.Now().Add(-idle).UnixNano()
	pl.mu.Lock()
	defer pl.mu.Unlock()
	for k, e := range pl.m {
		if !e.mu.TryLock() {
			continue
		}
		if e.u == nil || e.u.broken() || e.u.lastUsed.Load() < cut {
			if e.u != nil {
				e.u.fail(errors.New("idle"))
			}
			delete(pl.m, k)
		}
		e.mu.Unlock()
	}
}

func (pl *pool) closeAll() {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	for k, e := range pl.m {
		e.mu.Lock()
		if e.u != nil {
			e.u.fail(errors.New("proxy closing"))
		}
		e.mu.Unlock()
		delete(pl.m, k)
	}
}
