package broker

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// replProducer is the replicator's producer on a remote cluster: one
// connection speaking the Pulsar binary protocol (CONNECT, LOOKUP,
// PRODUCER, SEND), enough to push stored entries as they are. It never
// batches or re-frames: one local entry is one SEND. Receipts arrive on
// receipts in send order; the connection's end closes done (err holds the
// reason).
type replProducer struct {
	conn     net.Conn
	addr     string
	tls      bool // redirects go to brokerServiceUrlTls
	since    time.Time
	receipts chan replReceipt
	done     chan struct{}

	fr *pulsarproto.FrameReader // used by one goroutine at a time

	wmu sync.Mutex // the writer
	w   *bufio.Writer
	buf []byte

	once sync.Once
	err  error
}

type replReceipt struct {
	seq uint64
	pos position
}

// replProtocolVersion is the protocol version the replicator announces.
const replProtocolVersion = 19

// replMaxLookupRedirects bounds the LOOKUP redirects followed.
const replMaxLookupRedirects = 8

// replAuth is the authentication the replicator presents to a remote
// cluster (from its ClusterData): method "" for none.
type replAuth struct {
	method string
	data   []byte
}

// replAuthFrom maps ClusterData's authenticationPlugin and
// authenticationParameters to a CONNECT authentication: token plugins
// ("...AuthenticationToken", "token") with parameters "token:XYZ" or a
// bare token.
func replAuthFrom(plugin, params string) (replAuth, error) {
	if plugin == "" {
		return replAuth{}, nil
	}
	lp := strings.ToLower(plugin)
	switch {
	case strings.HasSuffix(lp, "authenticationtoken") || lp == "token":
		tok := strings.TrimPrefix(params, "token:")
		return replAuth{method: "token", data: []byte(tok)}, nil
	case strings.HasSuffix(lp, "authenticationtls") || lp == "tls":
		// The identity is the TLS client certificate.
		return replAuth{method: "tls"}, nil
	}
	return replAuth{}, fmt.Errorf("replication: authentication plugin %q is not supported (token or tls)", plugin)
}

// replTarget is how a replicator reaches a remote cluster: the service
// URL, TLS (nil: plaintext) and the CONNECT authentication.
type replTarget struct {
	url  string
	tls  *tls.Config
	auth replAuth
}

// replTargetOf reads the remote cluster's ClusterData as Pulsar's
// replicator does: with brokerClientTlsEnabled it dials
// brokerServiceUrlTls, trusting brokerClientTrustCertsFilePath (the
// system roots when empty; nothing checked with
// tlsAllowInsecureConnection) and presenting
// brokerClientCertificateFilePath / brokerClientKeyFilePath when set;
// otherwise brokerServiceUrl in plaintext.
func replTargetOf(name string, cd policy.ClusterData) (replTarget, error) {
	a, err := replAuthFrom(cd.AuthenticationPlugin, cd.AuthenticationParameters)
	if err != nil {
		return replTarget{}, err
	}
	if !cd.BrokerClientTLSEnabled {
		if cd.BrokerServiceURL == "" {
			return replTarget{}, errors.New("replication: cluster " + name + " has no brokerServiceUrl (and brokerClientTlsEnabled is false)")
		}
		if a.method == "tls" {
			return replTarget{}, errors.New("replication: cluster " + name + ": TLS authentication needs brokerClientTlsEnabled")
		}
		return replTarget{url: cd.BrokerServiceURL, auth: a}, nil
	}
	if cd.BrokerClientTLSEnabledWithKeyStore {
		return replTarget{}, errors.New("replication: cluster " + name + ": key stores are not supported; give brokerClientTrustCertsFilePath and PEM files")
	}
	if cd.BrokerServiceURLTLS == "" {
		return replTarget{}, errors.New("replication: cluster " + name + " has brokerClientTlsEnabled but no brokerServiceUrlTls")
	}
	tc, err := auth.ClientTLS(cd.BrokerClientTrustCertsFilePath, cd.BrokerClientCertificateFilePath, cd.BrokerClientKeyFilePath, cd.TLSAllowInsecureConnection)
	if err != nil {
		return replTarget{}, fmt.Errorf("replication: cluster %s: %w", name, err)
	}
	if a.method == "tls" && len(tc.Certificates) == 0 {
		return replTarget{}, errors.New("replication: cluster " + name + ": TLS authentication needs brokerClientCertificateFilePath and brokerClientKeyFilePath")
	}
	return replTarget{url: cd.BrokerServiceURLTLS, tls: tc, auth: a}, nil
}

// hostOf returns the first host:port of a pulsar:// or pulsar+ssl://
// service URL.
func hostOf(serviceURL string) (string, error) {
	rest, ok := strings.CutPrefix(serviceURL, "pulsar://")
	if !ok {
		rest, ok = strings.CutPrefix(serviceURL, "pulsar+ssl://")
	}
	if !ok {
		return "", fmt.Errorf("replication: broker service URL %q is not pulsar:// or pulsar+ssl://", serviceURL)
	}
	host, _, _ := strings.Cut(rest, ",")
	host = strings.TrimSuffix(host, "/")
	if host == "" {
		return "", fmt.Errorf("replication: broker service URL %q has no host", serviceURL)
	}
	return host, nil
}

// dialReplProducer connects to the cluster at serviceURL, looks topic up
// (following redirects) and creates producer name on it.
func dialReplProducer(ctx context.Context, to replTarget, topic, name string, maxFrame int) (*replProducer, error) {
	addr, err := hostOf(to.url)
	if err != nil {
		return nil, err
	}
	for range replMaxLookupRedirects {
		p, err := replConnect(ctx, addr, to, maxFrame)
		if err != nil {
			return nil, err
		}
		next, err := p.lookup(ctx, topic)
		if err != nil {
			p.close(err)
			return nil, err
		}
		if next == "" {
			if err := p.createProducer(ctx, topic, name); err != nil {
				p.close(err)
				return nil, err
			}
			go p.readLoop()
			return p, nil
		}
		p.close(errors.New("redirected"))
		addr = next
	}
	return nil, fmt.Errorf("replication: lookup of %s: too many redirects", topic)
}

// replConnect dials addr (over TLS when to says so) and completes
// CONNECT.
func replConnect(ctx context.Context, addr string, to replTarget, maxFrame int) (*replProducer, error) {
	var conn net.Conn
	var err error
	if to.tls != nil {
		// The server name is addr's host unless verification is off.
		d := tls.Dialer{Config: to.tls}
		conn, err = d.DialContext(ctx, "tcp", addr)
	} else {
		var d net.Dialer
		conn, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	auth := to.auth
	p := &replProducer{conn: conn, addr: addr, tls: to.tls != nil, since: time.Now(), w: bufio.NewWriterSize(conn, 64<<10),
		receipts: make(chan replReceipt, 1024), done: make(chan struct{})}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	c := &pb.CommandConnect{ClientVersion: ptr("magnetar-replicator"), ProtocolVersion: ptr(int32(replProtocolVersion))}
	if auth.method != "" {
		c.AuthMethodName = ptr(auth.method)
		c.AuthData = auth.data
	}
	if err := p.write(&pb.BaseCommand{Type: pb.BaseCommand_CONNECT.Enum(), Connect: c}); err != nil {
		conn.Close()
		return nil, err
	}
	fr := pulsarproto.NewFrameReader(bufio.NewReader(conn), maxFrame)
	p.fr = fr
	for {
		f, err := fr.Next()
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("replication: connect to %s: %w", addr, err)
		}
		switch f.Type {
		case pb.BaseCommand_CONNECTED:
			return p, nil
		case pb.BaseCommand_ERROR:
			conn.Close()
			return nil, fmt.Errorf("replication: connect to %s: %s", addr, f.Cmd.GetError().GetMessage())
		case pb.BaseCommand_PING:
			_ = p.write(&pb.BaseCommand{Type: pb.BaseCommand_PONG.Enum(), Pong: &pb.CommandPong{}})
		}
	}
}

// lookup asks where topic is served: "" when here.
func (p *replProducer) lookup(_ context.Context, topic string) (next string, err error) {
	rid := uint64(1)
	if err := p.write(&pb.BaseCommand{Type: pb.BaseCommand_LOOKUP.Enum(), LookupTopic: &pb.CommandLookupTopic{
		Topic: ptr(topic), RequestId: &rid, Authoritative: ptr(false)}}); err != nil {
		return "", err
	}
	for {
		f, err := p.fr.Next()
		if err != nil {
			return "", err
		}
		switch f.Type {
		case pb.BaseCommand_LOOKUP_RESPONSE:
			r := f.Cmd.GetLookupTopicResponse()
			switch r.GetResponse() {
			case pb.CommandLookupTopicResponse_Failed:
				return "", fmt.Errorf("replication: lookup %s on %s: %s %s", topic, p.addr, r.GetError(), r.GetMessage())
			case pb.CommandLookupTopicResponse_Redirect, pb.CommandLookupTopicResponse_Connect:
				u := r.GetBrokerServiceUrl()
				if p.tls {
					u = r.GetBrokerServiceUrlTls()
				}
				h, err := hostOf(u)
				if err != nil {
					return "", err
				}
				if r.GetProxyThroughServiceUrl() || h == p.addr {
					return "", nil
				}
				return h, nil
			}
		case pb.BaseCommand_PING:
			_ = p.write(&pb.BaseCommand{Type: pb.BaseCommand_PONG.Enum(), Pong: &pb.CommandPong{}})
		}
	}
}

func (p *replProducer) createProducer(_ context.Context, topic, name string) error {
	rid, pid := uint64(2), uint64(replProducerID)
	if err := p.write(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{
		Topic: ptr(topic), ProducerId: &pid, RequestId: &rid, ProducerName: ptr(name)}}); err != nil {
		return err
	}
	for {
		f, err := p.fr.Next()
		if err != nil {
			return err
		}
		switch f.Type {
		case pb.BaseCommand_PRODUCER_SUCCESS:
			if f.Cmd.GetProducerSuccess().ProducerReady != nil && !f.Cmd.GetProducerSuccess().GetProducerReady() {
				continue // waiting for exclusive access: not used here
			}
			_ = p.conn.SetDeadline(time.Time{})
			return nil
		case pb.BaseCommand_ERROR:
			e := f.Cmd.GetError()
			return fmt.Errorf("replication: producer on %s at %s: %s: %s", topic, p.addr, e.GetError(), e.GetMessage())
		case pb.BaseCommand_PING:
			_ = p.write(&pb.BaseCommand{Type: pb.BaseCommand_PONG.Enum(), Pong: &pb.CommandPong{}})
		}
	}
}

// replProducerID is the producer id of the one producer on a replicator
// connection.
const replProducerID = 1

// readLoop delivers receipts and answers pings until the connection
// ends.
func (p *replProducer) readLoop() {
	for {
		f, err := p.fr.Next()
		if err != nil {
			p.close(fmt.Errorf("replication: connection to %s: %w", p.addr, err))
			return
		}
		switch f.Type {
		case pb.BaseCommand_SEND_RECEIPT:
			r := f.Cmd.GetSendReceipt()
			id := r.GetMessageId()
			rc := replReceipt{seq: r.GetSequenceId(), pos: position{LedgerID: int64(id.GetLedgerId()), EntryID: int64(id.GetEntryId())}}
			select {
			case p.receipts <- rc:
			case <-p.done:
				return
			}
		case pb.BaseCommand_SEND_ERROR:
			e := f.Cmd.GetSendError()
			p.close(fmt.Errorf("replication: send to %s failed: %s: %s", p.addr, e.GetError(), e.GetMessage()))
			return
		case pb.BaseCommand_CLOSE_PRODUCER:
			p.close(fmt.Errorf("replication: %s closed the producer", p.addr))
			return
		case pb.BaseCommand_PING:
			if err := p.write(&pb.BaseCommand{Type: pb.BaseCommand_PONG.Enum(), Pong: &pb.CommandPong{}}); err != nil {
				p.close(err)
				return
			}
		}
	}
}

func (p *replProducer) write(cmd *pb.BaseCommand) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	var err error
	p.buf, err = pulsarproto.AppendCommand(p.buf[:0], cmd)
	if err != nil {
		return err
	}
	if _, err = p.w.Write(p.buf); err != nil {
		return err
	}
	return p.w.Flush()
}

// send writes a SEND of entry (a complete payload section); flush sends
// the buffered frames.
func (p *replProducer) send(h *pulsarproto.SendHeader, entry []byte, flush bool) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	h.ProducerID = replProducerID
	p.buf = pulsarproto.AppendSend(p.buf[:0], h, entry)
	if _, err := p.w.Write(p.buf); err != nil {
		return err
	}
	if cap(p.buf) > 1<<20 {
		p.buf = nil
	}
	if flush {
		return p.w.Flush()
	}
	return nil
}

func (p *replProducer) flush() error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	return p.w.Flush()
}

// close ends the connection once; err is why.
func (p *replProducer) close(err error) {
	p.once.Do(func() {
		p.err = err
		close(p.done)
		p.conn.Close()
	})
}
