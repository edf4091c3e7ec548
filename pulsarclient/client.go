package pulsarclient

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// maxRedirects bounds the LOOKUP redirects followed for one lookup.
const maxRedirects = 20

// ClientOptions configure a Client. Only URL is required.
type ClientOptions struct {
	// URL is the service URL: pulsar://host:port or pulsar+ssl://host:port
	// (several hosts separated by commas are tried in turn).
	URL string
	// Authentication presented in CONNECT; nil for none.
	Authentication Authentication
	// TLSTrustCertsFilePath is a PEM bundle of CAs that verify the
	// broker's certificate (default: the system roots).
	TLSTrustCertsFilePath string
	// TLSAllowInsecureConnection skips certificate verification.
	TLSAllowInsecureConnection bool
	// TLSValidateHostname also checks the broker certificate's name.
	TLSValidateHostname bool
	// OperationTimeout bounds each request (lookup, create producer,
	// subscribe, close); default 30s. Reconnects retry for this long.
	OperationTimeout time.Duration
	// ConnectionTimeout bounds dial and handshake; default 10s.
	ConnectionTimeout time.Duration
	// MemoryLimitBytes bounds the payload bytes of all producers' sends
	// awaiting a receipt; a send beyond it blocks (one send always
	// passes). 0 means 64 MiB, negative no limit.
	MemoryLimitBytes int64
}

// Client is a connection pool to a Pulsar service. It is safe for
// concurrent use.
type Client struct {
	opts    ClientOptions
	service serviceURL
	nextID  atomic.Uint64 // request, producer and consumer ids
	mem     memLimit

	mu      sync.Mutex // guards the fields below
	closed  bool
	conns   map[string]*conn
	dialing map[string]*dialCall
	closers map[closer]struct{}
}

// closer is a producer, consumer or reader the client closes on Close.
type closer interface{ Close() }

type dialCall struct {
	done chan struct{}
	c    *conn
	err  error
}

type serviceURL struct {
	tls   bool // pulsar+ssl:// (binary connections use TLS)
	http  bool // http:// or https://: lookups over HTTP (httplookup.go)
	https bool
	hosts []string
	raw   string
}

func parseServiceURL(s string) (serviceURL, error) {
	var u serviceURL
	var rest string
	var ok bool
	for _, sc := range []struct {
		prefix           string
		tls, http, https bool
	}{{"pulsar://", false, false, false}, {"pulsar+ssl://", true, false, false}, {"http://", false, true, false}, {"https://", true, true, true}} {
		if rest, ok = strings.CutPrefix(s, sc.prefix); ok {
			u.tls, u.http, u.https = sc.tls, sc.http, sc.https
			break
		}
	}
	if !ok {
		return u, fmt.Errorf("%w: %q (want pulsar://, pulsar+ssl://, http:// or https://host:port)", ErrInvalidURL, s)
	}
	rest = strings.TrimRight(rest, "/")
	for _, h := range strings.Split(rest, ",") {
		if h = strings.TrimSpace(h); h != "" {
			if !strings.Contains(h, ":") {
				h += map[[2]bool]string{{false, false}: ":6650", {true, false}: ":6651", {false, true}: ":8080", {true, true}: ":8443"}[[2]bool{u.tls, u.http}]
			}
			u.hosts = append(u.hosts, h)
		}
	}
	if len(u.hosts) == 0 {
		return u, fmt.Errorf("%w: %q has no host", ErrInvalidURL, s)
	}
	u.raw = s
	return u, nil
}

// NewClient checks the options; connections are made when needed.
func NewClient(opts ClientOptions) (*Client, error) {
	u, err := parseServiceURL(opts.URL)
	if err != nil {
		return nil, err
	}
	if opts.OperationTimeout <= 0 {
		opts.OperationTimeout = 30 * time.Second
	}
	if opts.ConnectionTimeout <= 0 {
		opts.ConnectionTimeout = 10 * time.Second
	}
	if opts.MemoryLimitBytes == 0 {
		opts.MemoryLimitBytes = 64 << 20
	}
	if _, ok := opts.Authentication.(*tlsAuth); ok && !u.tls {
		return nil, fmt.Errorf("%w: TLS authentication needs a pulsar+ssl:// URL", ErrInvalidURL)
	}
	return &Client{opts: opts, service: u, conns: map[string]*conn{}, dialing: map[string]*dialCall{},
		closers: map[closer]struct{}{}, mem: memLimit{limit: opts.MemoryLimitBytes, changed: make(chan struct{})}}, nil
}

func (cl *Client) id() uint64 { return cl.nextID.Add(1) }

// serviceHost returns the service URL for one of its hosts, rotating.
func (cl *Client) serviceHost() string {
	h := cl.service.hosts[rand.IntN(len(cl.service.hosts))]
	if cl.service.tls {
		return "pulsar+ssl://" + h
	}
	return "pulsar://" + h
}

// getConn returns a pooled connection to logical reached through
// physical (equal unless proxied), dialing one if needed.
func (cl *Client) getConn(ctx context.Context, logical, physical string) (*conn, error) {
	key := logical + "|" + physical
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		return nil, ErrClosed
	}
	if c := cl.conns[key]; c != nil {
		cl.mu.Unlock()
		return c, nil
	}
	if d := cl.dialing[key]; d != nil {
		cl.mu.Unlock()
		select {
		case <-d.done:
			return d.c, d.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	d := &dialCall{done: make(chan struct{})}
	cl.dialing[key] = d
	cl.mu.Unlock()
	d.c, d.err = cl.dialConn(ctx, key, logical, physical)
	cl.mu.Lock()
	delete(cl.dialing, key)
	var late *conn // dialed after Close: closed below, outside the lock (close takes it)
	if d.err == nil {
		if cl.closed {
			late = d.c
			d.c, d.err = nil, ErrClosed
		} else {
			cl.conns[key] = d.c
		}
	}
	cl.mu.Unlock()
	if late != nil {
		late.close(ErrClosed)
	}
	close(d.done)
	return d.c, d.err
}

func (cl *Client) dropConn(c *conn) {
	cl.mu.Lock()
	if cl.conns[c.key] == c {
		delete(cl.conns, c.key)
	}
	cl.mu.Unlock()
}

// serviceConn returns a connection to the service URL.
func (cl *Client) serviceConn(ctx context.Context) (*conn, error) {
	h := cl.serviceHost()
	return cl.getConn(ctx, h, h)
}

// lookup finds the broker serving topic, following redirects, and
// returns a connection to it.
func (cl *Client) lookup(ctx context.Context, topic string) (*conn, error) {
	if cl.service.http {
		return cl.httpLookup(ctx, topic)
	}
	c, err := cl.serviceConn(ctx)
	if err != nil {
		return nil, err
	}
	authoritative := false
	for range maxRedirects {
		rid := cl.id()
		resp, err := c.request(ctx, rid, &pb.BaseCommand{Type: pb.BaseCommand_LOOKUP.Enum(), LookupTopic: &pb.CommandLookupTopic{
			Topic: proto.String(topic), RequestId: proto.Uint64(rid), Authoritative: proto.Bool(authoritative)}})
		if err != nil {
			return nil, fmt.Errorf("pulsarclient: lookup %s: %w", topic, err)
		}
		lr := resp.GetLookupTopicResponse()
		if lr == nil {
			return nil, fmt.Errorf("pulsarclient: lookup %s: unexpected %s", topic, resp.GetType())
		}
		if lr.GetResponse() == pb.CommandLookupTopicResponse_Failed {
			return nil, fmt.Errorf("pulsarclient: lookup %s: %w", topic, &ServerError{Code: lr.GetError(), Message: lr.GetMessage()})
		}
		broker := lr.GetBrokerServiceUrl()
		if cl.service.tls {
			broker = lr.GetBrokerServiceUrlTls()
		}
		physical := broker
		if lr.GetProxyThroughServiceUrl() {
			physical = cl.serviceHost()
		}
		if broker == "" {
			broker, physical = c.logical, c.logical
		}
		if c, err = cl.getConn(ctx, broker, physical); err != nil {
			return nil, err
		}
		if lr.GetResponse() == pb.CommandLookupTopicResponse_Connect {
			return c, nil
		}
		authoritative = lr.GetAuthoritative()
	}
	return nil, fmt.Errorf("pulsarclient: lookup %s: %w", topic, ErrTooManyRedirects)
}

// partitions returns the number of partitions of topic (0: not
// partitioned).
func (cl *Client) partitions(ctx context.Context, topic string) (int, error) {
	var n int
	err := cl.retry(ctx, func() error {
		var c *conn
		var err error
		if cl.service.http {
			c, err = cl.httpLookup(ctx, topic) // any broker answers; ask the one found
		} else {
			c, err = cl.serviceConn(ctx)
		}
		if err != nil {
			return err
		}
		rid := cl.id()
		resp, err := c.request(ctx, rid, &pb.BaseCommand{Type: pb.BaseCommand_PARTITIONED_METADATA.Enum(),
			PartitionMetadata: &pb.CommandPartitionedTopicMetadata{Topic: proto.String(topic), RequestId: proto.Uint64(rid)}})
		if err != nil {
			return err
		}
		pr := resp.GetPartitionMetadataResponse()
		if pr == nil {
			return fmt.Errorf("unexpected %s", resp.GetType())
		}
		if pr.GetResponse() == pb.CommandPartitionedTopicMetadataResponse_Failed {
			return &ServerError{Code: pr.GetError(), Message: pr.GetMessage()}
		}
		n = int(pr.GetPartitions())
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("pulsarclient: partitioned metadata of %s: %w", topic, err)
	}
	return n, nil
}

// TopicPartitions returns the topic's partition names (the topic itself
// when it is not partitioned), canonicalised.
func (cl *Client) TopicPartitions(ctx context.Context, topic string) ([]string, error) {
	tn, err := pulsarproto.ParseTopicName(topic)
	if err != nil {
		return nil, fmt.Errorf("pulsarclient: topic %q: %w", topic, err)
	}
	n, err := cl.partitions(ctx, tn.String())
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return []string{tn.String()}, nil
	}
	out := make([]string, n)
	for i := range n {
		out[i] = tn.Partition(i).String()
	}
	return out, nil
}

// topicsOfNamespace lists the persistent topics (partitions) of ns.
func (cl *Client) topicsOfNamespace(ctx context.Context, ns string) ([]string, error) {
	if cl.service.http {
		return cl.httpTopicsOfNamespace(ctx, ns)
	}
	var out []string
	err := cl.retry(ctx, func() error {
		c, err := cl.serviceConn(ctx)
		if err != nil {
			return err
		}
		rid := cl.id()
		resp, err := c.request(ctx, rid, &pb.BaseCommand{Type: pb.BaseCommand_GET_TOPICS_OF_NAMESPACE.Enum(),
			GetTopicsOfNamespace: &pb.CommandGetTopicsOfNamespace{RequestId: proto.Uint64(rid), Namespace: proto.String(ns),
				Mode: pb.CommandGetTopicsOfNamespace_PERSISTENT.Enum()}})
		if err != nil {
			return err
		}
		out = resp.GetGetTopicsOfNamespaceResponse().GetTopics()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pulsarclient: topics of %s: %w", ns, err)
	}
	return out, nil
}

// retry runs op until it succeeds, fails with a final error or
// OperationTimeout passes, backing off between tries.
func (cl *Client) retry(ctx context.Context, op func() error) error {
	deadline := time.Now().Add(cl.opts.OperationTimeout)
	backoff := 50 * time.Millisecond
	for {
		err := op()
		if err == nil || !retriable(err) || time.Now().Add(backoff).After(deadline) || errors.Is(err, ErrClosed) {
			return err
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return ctx.Err()
		}
		backoff = min(2*backoff, time.Second)
	}
}

func (cl *Client) track(c closer) error {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.closed {
		return ErrClosed
	}
	cl.closers[c] = struct{}{}
	return nil
}

func (cl *Client) untrack(c closer) {
	cl.mu.Lock()
	delete(cl.closers, c)
	cl.mu.Unlock()
}

// Close closes every producer, consumer and reader the client made, then
// its connections.
func (cl *Client) Close() {
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		return
	}
	var cs []closer
	for c := range cl.closers {
		cs = append(cs, c)
	}
	cl.mu.Unlock()
	for _, c := range cs {
		c.Close()
	}
	cl.mu.Lock()
	cl.closed = true
	conns := cl.conns
	cl.conns = map[string]*conn{}
	cl.mu.Unlock()
	for _, c := range conns {
		c.close(ErrClosed)
	}
}

// memLimit is a byte budget shared by a client's producers.
type memLimit struct {
	limit   int64 // <= 0: none
	mu      sync.Mutex
	used    int64
	waiters int
	changed chan struct{} // closed and replaced on a release while someone waits
}

// acquire takes n bytes, waiting for room (a single oversized request
// passes when nothing else is held).
func (m *memLimit) acquire(ctx context.Context, n int64, stop <-chan struct{}) error {
	if m.limit <= 0 {
		return nil
	}
	for {
		m.mu.Lock()
		if m.used == 0 || m.used+n <= m.limit {
			m.used += n
			m.mu.Unlock()
			return nil
		}
		ch := m.changed
		m.waiters++
		m.mu.Unlock()
		var err error
		select {
		case <-ch:
		case <-ctx.Done():
			err = ctx.Err()
		case <-stop:
			err = ErrClosed
		}
		m.mu.Lock()
		m.waiters--
		m.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

func (m *memLimit) release(n int64) {
	if m.limit <= 0 || n == 0 {
		return
	}
	m.mu.Lock()
	m.used -= n
	if m.waiters > 0 {
		close(m.changed)
		m.changed = make(chan struct{})
	}
	m.mu.Unlock()
}
