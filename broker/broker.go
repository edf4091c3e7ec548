package broker

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/internal/acceptloop"
	"github.com/magnetar-mq/magnetar/internal/inflight"
	"github.com/magnetar-mq/magnetar/topicreg"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/internal/ratelog"
	"github.com/magnetar-mq/magnetar/internal/shrink"
	"github.com/magnetar-mq/magnetar/policy"
)

// Broker serves the Pulsar binary protocol and the admin HTTP API over a
// set of topics. Create it with New, then Start; Close stops it.
//
// All methods are safe for concurrent use.
type Broker struct {
	cfg     brokerconf.Config
	deps    Deps
	log     *slog.Logger
	reg     *topicreg.Registry
	sec     *auth.Security // TLS, authentication, authorization; nil when off (security.go)
	net     listeners      // bound sockets and the HTTP server (listeners.go)
	cluster clusterMember  // ownership.go
	tun     tunables       // Config values changed at run time (tunables.go)
	// policies holds tenants, namespaces and their policies; a topic
	// resolves its policy from it when it loads (policy.go).
	policies *policy.Store
	// connBytesIn counts the bytes read from client connections
	// (magnetar_connection_in_bytes_total).
	connBytesIn atomic.Int64
	heldCount   atomic.Int64 // held sends over all topics (skip dropHeld at 0)
	// walks counts the walks over the loaded topics in flight (the
	// background loops and the metrics scrape; everyLoaded, walk.go). A
	// walk holds a list of the topics it started with, and so keeps an
	// unloaded topic's memory reachable until it ends; the idle sweep's
	// release waits for the walks in flight before it collects
	// (idleunload.go).
	walks inflight.Counter

	mu struct {
		sync.Mutex
		topics  map[string]*topicLoad
		shrink  shrink.Tracker // deletes from topics (internal/shrink)
		conns   map[*conn]struct{}
		started bool
		closing bool
		closed  bool
	}

	admin *httpapi.Table // the HTTP routes, served by net.srv

	// life ends when the broker closes (watches on the configuration
	// store run under it).
	life       context.Context
	lifeCancel context.CancelFunc

	producerNames producerNames // producername.go
	rateLogs      rateLogs
	// ext holds the registered features' hooks (extension.go); fixed
	// once Start began.
	ext  extensions
	wg   sync.WaitGroup
	done chan struct{}
}

// loadedDone is the done channel of every loaded topic's entry (closed).
var loadedDone = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// rateLogs are the broker's rate-limited log kinds.
type rateLogs struct {
	persist     ratelog.Line // SEND_ERROR for a failed persist
	clientFault ratelog.Line // connections closed for the client's fault, failed acks
}

// topicLoad is a topic being (or having been) loaded; done closes when t
// or err is set. Once loaded, the map's entry is a new one on loadedDone.
type topicLoad struct {
	done chan struct{}
	t    *topic
	err  error
}

// New validates cfg and returns an unstarted broker.
func New(cfg brokerconf.Config, deps Deps) (*Broker, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	if deps.Metadata == nil {
		return nil, fmt.Errorf("%w: Deps.Metadata is nil", ErrBadConfig)
	}
	if deps.OpenLedger == nil {
		return nil, fmt.Errorf("%w: Deps.OpenLedger is nil", ErrBadConfig)
	}
	if deps.ConfigStore == nil {
		deps.ConfigStore = deps.Metadata
	}
	b := &Broker{cfg: cfg, deps: deps, log: cfg.Logger, done: make(chan struct{})}
	b.tun.init(&b.cfg)
	b.cluster.b = b
	b.life, b.lifeCancel = context.WithCancel(context.Background())
	b.policies = deps.Policies
	if b.policies == nil {
		b.policies = policy.NewStore(deps.ConfigStore, cfg.ClusterName)
	}
	b.reg = topicreg.New(deps.Metadata, deps.ConfigStore, b.policies, cfg.ClusterName)
	b.mu.topics = make(map[string]*topicLoad)
	b.mu.conns = make(map[*conn]struct{})
	b.admin = httpapi.NewTable()
	sec, err := newSecurity(&b.cfg, deps.Metadata, b.log)
	if err != nil {
		return nil, err
	}
	b.sec = sec
	return b, nil
}

// Start bootstraps the metadata (cluster, public/default) and starts
// listening on cfg.ServiceAddr and cfg.HTTPAddr. It returns once both
// listeners are bound; see ServiceAddr and HTTPAddr for the actual
// addresses.
func (b *Broker) Start(ctx context.Context) error {
	b.mu.Lock()
	if b.mu.started || b.mu.closed {
		b.mu.Unlock()
		return fmt.Errorf("%w: already started", ErrClosed)
	}
	b.mu.started = true
	b.mu.Unlock()
	if err := b.checkAuthorizer(); err != nil {
		return err
	}
	if err := b.reg.Bootstrap(ctx); err != nil {
		return err
	}
	if err := b.producerNames.init(ctx, b.deps.Metadata, b.cfg.ClusterName, b.log); err != nil {
		return err
	}
	srv, err := newHTTPServer(b.admin, b.sec, b.cfg.HTTPLimits, b.log)
	if err != nil {
		return err
	}
	if err := b.net.bind(ctx, &b.cfg, b.sec, srv); err != nil {
		return err
	}
	if b.net.HTTP != nil {
		b.serveHTTP(b.net.HTTP, nil)
	}
	if err := b.registerCluster(ctx); err != nil {
		b.Close()
		return err
	}
	if b.cfg.Cluster != nil {
		if err := b.joinCluster(ctx); err != nil {
			b.Close()
			return fmt.Errorf("broker: join cluster: %w", err)
		}
	}
	for _, f := range b.ext.lifecycle {
		if err := f.Start(ctx); err != nil {
			b.Close()
			return fmt.Errorf("broker: start feature: %w", err)
		}
	}
	for _, ln := range []net.Listener{b.net.Service, b.net.TLSService} {
		if ln != nil {
			b.wg.Add(1)
			go b.acceptLoop(ln)
		}
	}
	if b.net.TLSHTTP != nil {
		b.serveHTTP(b.net.TLSHTTP, b.sec.TLS.Config())
	}
	b.wg.Add(1)
	go b.statsLoop()
	if s := b.sec; s.Enabled() && s.Config.AuthenticationRefreshCheckSeconds > 0 {
		b.wg.Add(1)
		go b.refreshLoop(s.Config.RefreshInterval())
	}
	b.log.Info("broker started", "service", b.ServiceAddr(), "http", b.HTTPAddr(), "service-tls", b.TLSServiceAddr(), "https", b.TLSHTTPAddr())
	return nil
}

// Router returns the broker's HTTP route table, so other packages'
// endpoints can be declared before Start.
func (b *Broker) Router() *httpapi.Table { return b.admin }

func (b *Broker) acceptLoop(ln net.Listener) {
	defer b.wg.Done()
	acceptloop.Run(ln, b.done, b.log, func(nc net.Conn) bool {
		c := newConn(b, nc)
		b.mu.Lock()
		if b.mu.closed {
			b.mu.Unlock()
			nc.Close()
			return false
		}
		b.mu.conns[c] = struct{}{}
		b.wg.Add(1)
		b.mu.Unlock()
		go func() {
			defer b.wg.Done()
			c.serve()
			b.mu.Lock()
			delete(b.mu.conns, c)
			b.mu.Unlock()
		}()
		return true
	})
}

// Ready reports whether the broker is started and not closing.
func (b *Broker) Ready() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.started && !b.mu.closing && !b.mu.closed
}

// Close stops accepting connections, closes every connection (their
// producers and consumers are cleaned up), closes the topics and their
// managed ledgers (pending adds complete first) and waits for every
// goroutine.
func (b *Broker) Close() error {
	b.mu.Lock()
	if b.mu.closed || b.mu.closing {
		b.mu.Unlock()
		return nil
	}
	b.mu.closing = true
	b.mu.Unlock()
	if b.cluster.own != nil {
		// Deregister, then unload every bundle gracefully while the
		// connections still run (clients get CLOSE_PRODUCER/CONSUMER).
		b.cluster.own.Leave()
	}
	b.mu.Lock()
	b.mu.closed = true
	close(b.done)
	b.lifeCancel()
	conns := make([]*conn, 0, len(b.mu.conns))
	for c := range b.mu.conns {
		conns = append(conns, c)
	}
	b.mu.Unlock()
	b.net.close()
	for _, c := range conns {
		c.stopReading()
	}
	b.wg.Wait()
	for i := len(b.ext.lifecycle) - 1; i >= 0; i-- {
		b.ext.lifecycle[i].Close()
	}
	b.mu.Lock()
	loads := make([]*topicLoad, 0, len(b.mu.topics))
	for _, l := range b.mu.topics {
		loads = append(loads, l)
	}
	b.mu.topics = map[string]*topicLoad{}
	b.mu.Unlock()
	// Closed unloadParallel at a time: each ledger close is a
	// metadata write, and concurrent writes share a commit.
	var (
		errMu    sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	sem := make(chan struct{}, unloadParallel)
	for _, l := range loads {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			<-l.done
			if l.t == nil {
				return
			}
			l.t.closeAll(false)
			if l.t.ml != nil {
				if err := l.t.ml.Close(); err != nil {
					errMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					errMu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	b.log.Info("broker closed")
	return firstErr
}

// dropLoadLocked removes full's entry if it is still l (b.mu held). A
// map keeps the room of its largest size, so once most of it was
// deleted (a million topics idle-unloaded) it is rebuilt for what is
// left (internal/shrink).
func (b *Broker) dropLoadLocked(full string, l *topicLoad) {
	if b.mu.topics[full] != l {
		return
	}
	delete(b.mu.topics, full)
	if b.mu.shrink.Deleted(len(b.mu.topics)) {
		b.mu.topics = shrink.Rebuild(b.mu.topics)
	}
}

// getTopic returns the loaded topic tn, loading it (and creating it when
// create is set and auto-creation allows) if needed.
func (b *Broker) getTopic(ctx context.Context, tn topicName, create bool) (*topic, error) {
	full := tn.String()
	for {
		b.mu.Lock()
		if b.mu.closed {
			b.mu.Unlock()
			return nil, ErrClosed
		}
		if l := b.mu.topics[full]; l != nil {
			b.mu.Unlock()
			select {
			case <-l.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if l.err != nil {
				return nil, l.err
			}
			if !b.cluster.owns(l.t) && !l.t.isClosed() {
				return nil, b.cluster.notOwned(full)
			}
			if l.t.isClosed() {
				// Being unloaded: wait until its managed ledger is closed
				// (the factory would hand out the closing instance
				// otherwise), then load again.
				var unloaded chan struct{} // nil (no unload): wait for ctx
				if p := l.t.unloaded.Load(); p != nil {
					unloaded = *p
				}
				select {
				case <-unloaded:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				b.mu.Lock()
				b.dropLoadLocked(full, l)
				b.mu.Unlock()
				continue
			}
			return l.t, nil
		}
		l := &topicLoad{done: make(chan struct{})}
		b.mu.topics[full] = l
		b.mu.Unlock()
		watch := b.ext.policy
		var version uint64
		if watch != nil {
			version = watch.PolicyVersion()
		}
		l.t, l.err = b.loadTopic(ctx, tn, create)
		b.mu.Lock()
		if l.err != nil {
			b.dropLoadLocked(full, l)
		} else if b.mu.topics[full] == l {
			// Loaded: an entry on the shared closed channel replaces
			// l, so a loaded topic keeps no channel of its own (issue
			// 35: 8 KiB a live topic); whoever holds l sees its own
			// channel closed below.
			b.mu.topics[full] = &topicLoad{done: loadedDone, t: l.t}
		}
		b.mu.Unlock()
		close(l.done)
		if l.err == nil && !b.cluster.owns(l.t) {
			// The bundle was unloaded (or lost) while the topic loaded:
			// the unload may have missed it, so close it here.
			b.unloadTopic(full)
			return nil, b.cluster.notOwned(full)
		}
		if l.err == nil && watch != nil && watch.PolicyVersion() != version {
			// A policy change was announced while the topic loaded and
			// may have listed the loaded topics before this one was
			// visible: resolve again. A changed retention or
			// persistence unloads it, and the loop opens it anew.
			if watch.RefreshPolicy(Topic{l.t}) {
				continue
			}
		}
		return l.t, l.err
	}
}

// lookupTopic returns the topic if it is loaded, without loading it.
func (b *Broker) lookupTopic(full string) *topic {
	b.mu.Lock()
	l := b.mu.topics[full]
	b.mu.Unlock()
	if l == nil {
		return nil
	}
	select {
	case <-l.done:
		return l.t
	default:
		return nil
	}
}

func (b *Broker) loadTopic(ctx context.Context, tn topicName, create bool) (*topic, error) {
	ok, err := b.reg.NamespaceExists(ctx, tn.NamespaceName())
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: namespace %s", ErrNamespaceNotFound, tn.NamespaceName())
	}
	// Only the bundle's owner opens the managed ledger: an open by anyone
	// else would fence the owner.
	bundleKey, err := b.cluster.topicBundle(ctx, tn)
	if err != nil {
		return nil, err
	}
	pol := b.resolvePolicies(tn)
	if !tn.IsPersistent() {
		t := newTopic(b, tn, nil, pol)
		t.bundleKey = bundleKey
		if err := b.ext.loadTopic(ctx, t); err != nil {
			t.closeAll(false)
			return nil, err
		}
		return t, nil
	}
	created, exists, err := b.reg.NodeCreated(ctx, tn.String())
	if err != nil {
		return nil, err
	}
	if !exists {
		// A partition of a partitioned topic exists with it, as in
		// Pulsar (which creates them with it): loading one creates it.
		if (!create || !pol.AutoCreate) && !b.reg.PartitionOfPartitioned(ctx, tn) {
			return nil, fmt.Errorf("%w: %s", ErrTopicNotFound, tn)
		}
		if err := b.ext.admitTopics(ctx, tn, 1, b.resolvePolicies); err != nil {
			return nil, err
		}
		created = time.Now().UnixMilli()
		if err := b.reg.EnsureNode(ctx, tn.String(), created); err != nil {
			return nil, err
		}
	}
	ml, err := b.deps.OpenLedger(storage.WithLedgerPolicies(ctx, pol), tn.String())
	if err != nil {
		return nil, fmt.Errorf("broker: open managed ledger %s: %w", tn, err)
	}
	t := newTopic(b, tn, ml, pol)
	t.bundleKey = bundleKey
	t.created = created
	for _, h := range b.ext.ledgers {
		h.LedgerOpened(Topic{t})
	}
	if b.cfg.Deduplication || pol.Deduplication {
		if err := t.recoverDedup(ctx, b.ext.dedup, b.cfg.DedupRecoveryEntries); err != nil {
			if b.ext.dedup != nil {
				t.closeAll(false)
				return nil, fmt.Errorf("broker: recover deduplication state of %s: %w", tn, err)
			}
			b.log.Warn("dedup state recovery", "topic", tn.String(), "err", err)
		}
	}
	for _, name := range ml.CursorNames() {
		if strings.HasPrefix(name, ReplicatorPrefix+".") || b.ext.dedup != nil && name == b.ext.dedup.DedupCursor() {
			continue // a replicator's or the dedup snapshots', not a subscription
		}
		if err := t.loadSubscription(name); err != nil {
			t.closeAll(false)
			ml.Close()
			return nil, fmt.Errorf("broker: load cursor %s of %s: %w", name, tn, err)
		}
	}
	if err := b.ext.loadTopic(ctx, t); err != nil {
		t.closeAll(false)
		ml.Close()
		return nil, err
	}
	b.log.Debug("topic loaded", "topic", tn.String())
	return t, nil
}

// UnloadTopic closes a loaded topic: every producer and consumer gets
// CLOSE_PRODUCER/CLOSE_CONSUMER and reconnects, which loads it again. It
// reports whether the topic was loaded.
func (b *Broker) UnloadTopic(name string) (bool, error) {
	tn, err := parseTopicName(name)
	if err != nil {
		return false, err
	}
	return b.unloadTopic(tn.String()), nil
}

// unloadTopic is UnloadTopic by canonical name.
func (b *Broker) unloadTopic(full string) bool {
	b.mu.Lock()
	l := b.mu.topics[full]
	if l != nil {
		select {
		case <-l.done:
		default:
			l = nil
		}
	}
	b.mu.Unlock()
	if l == nil || l.t == nil || !l.t.unloading.CompareAndSwap(false, true) {
		return false
	}
	unloaded := make(chan struct{}) // before closeAll: see topic.unloaded
	l.t.unloaded.Store(&unloaded)
	// The entry stays in the map until the ledger is closed: getTopic
	// waits on unloaded instead of reopening a closing ledger. New sends
	// are dropped unanswered (clients re-send them to the next owner) and
	// the writes in flight complete and are acknowledged before the
	// clients are told to go.
	l.t.stopPublishing(unloadWait(&b.cfg))
	l.t.closeAll(true)
	if l.t.ml != nil {
		if err := l.t.ml.Close(); err != nil {
			b.log.Warn("close managed ledger", "topic", full, "err", err)
		}
	}
	b.mu.Lock()
	b.dropLoadLocked(full, l)
	b.mu.Unlock()
	// Its cached topic-level policies go too (read again on the next
	// load) instead of staying until the next policy refresh.
	b.policies.ForgetTopic(topicreg.PolicyKey(l.t.name))
	close(unloaded)
	return true
}

// topicsOfNamespace lists the topics of ns ("tenant/ns") in the given
// domains: created persistent topics, loaded non-persistent ones and
// every partition of partitioned topics.
func (b *Broker) topicsOfNamespace(ctx context.Context, ns string, persistent, nonPersistent bool) ([]string, error) {
	var out []string
	var err error
	if persistent {
		if out, err = b.reg.AppendTopics(ctx, out, ns, "persistent"); err != nil {
			return nil, err
		}
	}
	if nonPersistent {
		if out, err = b.reg.AppendTopics(ctx, out, ns, "non-persistent"); err != nil {
			return nil, err
		}
		prefix := "non-persistent://" + ns + "/"
		b.mu.Lock()
		for full := range b.mu.topics {
			if strings.HasPrefix(full, prefix) {
				out = append(out, full)
			}
		}
		b.mu.Unlock()
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
