package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/bundle"
	"github.com/magnetar-mq/magnetar/isolation"
	"github.com/magnetar-mq/magnetar/metadata"
)

// Options configures a Service.
type Options struct {
	// Store is the cluster's metadata store. With a metadata.Sessioner
	// (ZooKeeper) ownership is bounded by the session lease; without one
	// (the embedded store of a single node) the session never expires.
	Store metadata.Store
	// BrokerID is "host:webPort", Pulsar's broker id (required).
	BrokerID string
	// ServiceURL (pulsar://host:port) and WebURL (http://host:port) are
	// handed to clients; the TLS variants may be empty.
	ServiceURL, ServiceURLTLS, WebURL, WebURLTLS string
	// OnBundleLost is called (on its own goroutine per call is not
	// guaranteed: calls are serialized) when the broker must stop serving
	// a bundle: the broker closes its topics in that bundle. It must
	// return once they are closed.
	OnBundleLost func(ns string, r bundle.Range)
	// Stats returns per-bundle statistics by bundle key, for load reports.
	Stats func() map[string]BundleStats
	// ReportInterval is how often the load report is refreshed and the
	// leader runs placement bookkeeping (default 5 s).
	ReportInterval time.Duration
	// ShedInterval is how often the leader looks for overloaded brokers
	// (default 1 min, Pulsar's loadBalancerSheddingIntervalMinutes); 0
	// uses the default, negative disables shedding.
	ShedInterval time.Duration
	// ShedThreshold: a broker whose message rate exceeds the mean by this
	// fraction of the mean is overloaded (default 0.5).
	ShedThreshold float64
	// ShedGrace: a bundle unloaded by shedding is not shed again for this
	// long (default 30 s; Pulsar's grace period is 30 min; negative: no
	// grace, Pulsar's 0).
	ShedGrace time.Duration
	// Split thresholds: the leader splits a bundle (of at least two
	// topics) whose topics, producers+consumers, message rate (in+out,
	// msg/s) or throughput (in+out, bytes/s) exceed these (Pulsar's
	// loadBalancerNamespaceBundleMax*: 1000, 1000, 30000, 100 MiB/s), while
	// the namespace has fewer than bundle.MaxCount bundles. Checked every
	// ShedInterval; DisableAutoSplit turns it off. Negative thresholds
	// are always exceeded (Pulsar's 0 topics: every bundle of two topics
	// or more).
	SplitMaxTopics, SplitMaxSessions   int
	SplitMaxMsgRate, SplitMaxBytesRate float64
	DisableAutoSplit                   bool
	// UnloadTimeout bounds OnBundleLost during a graceful unload (default
	// 60 s, namespaceBundleUnloadingTimeoutMs).
	UnloadTimeout time.Duration
	// Logger receives ownership changes; nil discards.
	Logger *slog.Logger
	// AntiAffinityPeers returns the other namespaces of ns's anti-affinity
	// group (nil: none); placement spreads a group over the brokers
	// (antiaffinity.go).
	AntiAffinityPeers func(ctx context.Context, ns string) []string
	// Standalone: this broker is the only one there is (Pulsar's
	// standalone, a cluster of one): a topic of an unowned bundle is
	// served after taking the bundle (CheckTopic), as a lookup would
	// place it here.
	Standalone bool
	// ClusterName is the cluster's name: placement reads its namespace
	// isolation policies and failure domains (package isolation) from
	// the store. "": none apply.
	ClusterName string
	// FailureDomainsEnabled is Pulsar's failureDomainsEnabled: the
	// anti-affinity placement spreads a group's namespaces over the
	// cluster's failure domains first, then over the brokers.
	FailureDomainsEnabled bool
	// Probe connects to a broker's service URL (probe.go; default: a
	// TCP connect): nil if it answers, an error wrapping
	// syscall.ECONNREFUSED if nothing listens. Tests with brokers that
	// do not listen replace it.
	Probe func(ctx context.Context, serviceURL string) error
}

// EnsureDefaults fills unset fields.
func (o *Options) EnsureDefaults() {
	if o.ReportInterval == 0 {
		o.ReportInterval = 5 * time.Second
	}
	if o.ShedInterval == 0 {
		o.ShedInterval = time.Minute
	}
	if o.ShedThreshold == 0 {
		o.ShedThreshold = 0.5
	}
	if o.ShedGrace == 0 {
		o.ShedGrace = 30 * time.Second
	}
	if o.SplitMaxTopics == 0 {
		o.SplitMaxTopics = 1000
	}
	if o.SplitMaxSessions == 0 {
		o.SplitMaxSessions = 1000
	}
	if o.SplitMaxMsgRate == 0 {
		o.SplitMaxMsgRate = 30000
	}
	if o.SplitMaxBytesRate == 0 {
		o.SplitMaxBytesRate = 100 << 20
	}
	if o.UnloadTimeout == 0 {
		o.UnloadTimeout = time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.OnBundleLost == nil {
		o.OnBundleLost = func(string, bundle.Range) {}
	}
	if o.Stats == nil {
		o.Stats = func() map[string]BundleStats { return nil }
	}
}

// Validate reports an unusable configuration.
func (o *Options) Validate() error {
	switch {
	case o.Store == nil:
		return errors.New("cluster: Options.Store is nil")
	case o.BrokerID == "" || o.ServiceURL == "" || o.WebURL == "":
		return errors.New("cluster: BrokerID, ServiceURL and WebURL are required")
	}
	return nil
}

// Service is one broker's part in the cluster: its registration, the
// bundles it owns, leader election, load reports, lookups and (as leader)
// placement and shedding. Safe for concurrent use.
type Service struct {
	o     Options
	st    metadata.Store
	sess  metadata.Sessioner // nil: a session that never expires
	iso   *isolation.Store
	log   *slog.Logger
	nonce string
	// quotas are the bundles' resource quotas placement weighs (quota.go).
	quotas *Quotas

	// lease: the session (id) is alive at least until leaseUntil
	// (monotonic nanoseconds since epoch), see renewLease.
	leaseSession atomic.Int64
	leaseUntil   atomic.Int64
	epoch        time.Time

	mu struct {
		sync.Mutex
		owned         map[string]*owned // by bundle key
		leader        bool
		leaderSession int64
		registered    bool
		cpu           cpuSample
		preallocFor   map[string]prealloc  // leader: bundle key -> recent placement
		shedAt        map[string]time.Time // leader: bundle key -> last shed
		probedOK      map[string]time.Time // service URL -> last probe that connected (probe.go)
		closed        bool
	}
	lostMu sync.Mutex // serializes OnBundleLost calls

	kick chan struct{}
	done chan struct{}
	// tuning is the part of o a dynamic update changes (tuning.go);
	// retuned tells the loop.
	tuneMu  sync.RWMutex
	tuning  Tuning
	retuned chan struct{}
	wg      sync.WaitGroup
	cancel  context.CancelFunc
}

// owned is a bundle this broker holds.
type owned struct {
	ns      string
	r       bundle.Range
	session int64
	value   []byte
	active  atomic.Bool // false once unloading or lost
}

// Start registers the broker and starts its background work (lease
// renewal, leader election, load reports, shedding as leader).
func Start(ctx context.Context, o Options) (*Service, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	var nb [8]byte
	_, _ = rand.Read(nb[:])
	s := &Service{o: o, st: o.Store, log: o.Logger, nonce: hex.EncodeToString(nb[:]), epoch: time.Now(),
		kick: make(chan struct{}, 1), done: make(chan struct{}), retuned: make(chan struct{}, 1)}
	s.tuning = tuningOf(&o)
	s.sess, _ = o.Store.(metadata.Sessioner)
	s.iso = isolation.NewStore(o.Store)
	s.quotas = NewQuotas(o.Store)
	s.mu.owned = map[string]*owned{}
	s.mu.preallocFor = map[string]prealloc{}
	s.mu.shedAt = map[string]time.Time{}
	s.mu.probedOK = map[string]time.Time{}
	if err := s.renewLease(ctx); err != nil {
		return nil, fmt.Errorf("cluster: metadata session: %w", err)
	}
	_ = s.register(ctx) // retried by the loop (a previous session's node may linger)
	s.elect(ctx)
	lctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	if w, ok := o.Store.(metadata.Watcher); ok {
		_ = w.Watch(lctx, leaderPath, func(metadata.Event) { s.poke() })
		_ = w.Watch(lctx, brokersPath, func(metadata.Event) { s.poke() })
	}
	s.wg.Add(2)
	go s.leaseLoop(lctx)
	go s.loop(lctx)
	return s, nil
}

func (s *Service) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *Service) now() int64 { return int64(time.Since(s.epoch)) }

// renewLease proves the session alive: the time a successful read was
// sent, plus half the session timeout, is a moment before which the server
// cannot have expired the session (it heard from us after we sent). Any
// session change in between voids the proof.
func (s *Service) renewLease(ctx context.Context) error {
	if s.sess == nil {
		s.leaseSession.Store(0)
		s.leaseUntil.Store(1 << 62)
		return nil
	}
	id0 := s.sess.SessionID()
	sent := s.now()
	rctx, cancel := context.WithTimeout(ctx, s.sess.SessionTimeout()/2)
	_, err := s.st.Exists(rctx, "/")
	cancel()
	if err != nil {
		return err
	}
	if id1 := s.sess.SessionID(); id0 == 0 || id1 != id0 {
		return metadata.ErrUnavailable
	}
	s.leaseSession.Store(id0)
	s.leaseUntil.Store(sent + int64(s.sess.SessionTimeout()/2))
	return nil
}

// leaseValidFor reports whether ownership acquired on session id may
// still be exercised now.
func (s *Service) leaseValidFor(id int64) bool {
	if s.sess == nil {
		return true
	}
	return s.leaseSession.Load() == id && s.now() < s.leaseUntil.Load()
}

// leaseLoop renews the lease every sixth of the session timeout and drops
// every bundle whose lease ran out.
func (s *Service) leaseLoop(ctx context.Context) {
	defer s.wg.Done()
	if s.sess == nil {
		return
	}
	period := max(s.sess.SessionTimeout()/6, 50*time.Millisecond)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.renewLease(ctx); err != nil {
			s.log.Debug("lease renewal failed", "err", err)
		}
		s.dropExpired(ctx)
	}
}

// dropExpired stops serving every bundle whose lease lapsed, then deletes
// its owner node if our session still holds it.
func (s *Service) dropExpired(ctx context.Context) {
	var lost []*owned
	s.mu.Lock()
	for k, o := range s.mu.owned {
		if !s.leaseValidFor(o.session) {
			o.active.Store(false)
			delete(s.mu.owned, k)
			lost = append(lost, o)
		}
	}
	s.mu.Unlock()
	for _, o := range lost {
		s.log.Warn("metadata session lease lost: no longer serving bundle", "bundle", BundleKey(o.ns, o.r))
		s.bundleLost(o)
		s.releaseNode(ctx, o)
	}
}

func (s *Service) bundleLost(o *owned) {
	s.lostMu.Lock()
	defer s.lostMu.Unlock()
	s.o.OnBundleLost(o.ns, o.r)
}

// releaseNode deletes o's owner node if it is still ours: same session,
// same value (a node of an expired session is gone already, and a node
// with another value belongs to someone else).
func (s *Service) releaseNode(ctx context.Context, o *owned) {
	if s.sess != nil && s.sess.SessionID() != o.session {
		return
	}
	p := ownerPath(o.ns, o.r)
	data, v, err := s.st.Get(ctx, p)
	if err != nil || string(data) != string(o.value) {
		return
	}
	if err := s.st.Delete(ctx, p, v); err != nil && !errors.Is(err, metadata.ErrNotFound) {
		s.log.Warn("release bundle", "bundle", BundleKey(o.ns, o.r), "err", err)
	}
}

// loop refreshes the registration and load report, re-runs leader
// election when the leader node changes, and sheds load as leader.
func (s *Service) loop(ctx context.Context) {
	defer s.wg.Done()
	report := time.NewTicker(s.o.ReportInterval)
	defer report.Stop()
	var (
		shed     <-chan time.Time
		shedTick *time.Ticker
		every    time.Duration
	)
	setShed := func(d time.Duration) {
		if d == every {
			return
		}
		every = d
		if shedTick != nil {
			shedTick.Stop()
			shedTick, shed = nil, nil
		}
		if d > 0 {
			shedTick = time.NewTicker(d)
			shed = shedTick.C
		}
	}
	setShed(s.Tuning().ShedInterval)
	defer func() { setShed(0) }()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.retuned:
			setShed(s.Tuning().ShedInterval)
		case <-s.kick:
			s.elect(ctx)
		case <-report.C:
			if err := s.register(ctx); err != nil {
				s.log.Debug("load report", "err", err)
			}
			s.elect(ctx)
		case <-shed:
			if s.IsLeader() {
				if !s.Tuning().DisableAutoSplit {
					s.autoSplit(ctx)
				}
				s.shed(ctx)
			}
		}
	}
}

// Close deregisters the broker (no new bundles come to it), unloads every
// owned bundle gracefully and stops the background work.
func (s *Service) Close() error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.closed = true
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), s.o.UnloadTimeout)
	defer cancel()
	_ = s.st.Delete(ctx, brokersPath+"/"+s.o.BrokerID, metadata.AnyVersion)
	for _, k := range s.OwnedBundles() {
		ns, r, err := splitKey(k)
		if err == nil {
			_ = s.Unload(ctx, ns, r)
		}
	}
	s.resign(ctx)
	s.cancel()
	s.wg.Wait()
	close(s.done)
	return nil
}
