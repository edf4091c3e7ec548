package cluster

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/magnetar-mq/magnetar/metadata"
)

// Dead brokers. A broker that dies keeps its registration, its leader
// node and its owner nodes until its metadata session expires
// (SessionTimeout): that is the floor for a broker that goes silent (a
// partition, a hung machine), since nothing else tells it apart from a
// slow one. A process that died on a live host is known at once, though:
// its service port refuses connections. So before a lookup sends a client
// to a broker (a bundle's owner, the leader, a placement), it probes the
// broker's service port; a refused connection (ECONNREFUSED: nothing
// listens there) while the broker is still registered means the process
// is gone:
//
//   - its owner nodes are deleted (a compare-and-set on the version just
//     read) and the bundle is looked up again as unowned, so the client
//     is sent to a live broker at once;
//   - as leader it is passed over (placement is decided locally);
//   - it is not chosen by placement.
//
// The probe assumes what clients need anyway: a broker's advertised
// address reaches it from every other broker (a loopback address is
// probed only from brokers that advertise one too: the same host).
//
// Safety does not rest on the probe: a new owner opens the managed ledger
// with a recovery open that fences the old owner's ledger, so nothing the
// old owner could still write would be acknowledged (doc.go, "Why two
// brokers never acknowledge writes for one topic at once"). A broker
// shutting down cleanly keeps its port open until it has released its
// bundles and removes its registration first; a registration that is gone
// with the owner node still there is an unload in progress, which the
// lookup answers as such.
//
// An owner that does not answer within probeTimeout (partitioned, hung)
// keeps its bundle until its session expires; the lookup waits for that
// (waitOwnerChange) rather than sending the client to it.
//
// A successful probe is remembered for probeTTL, so a burst of lookups
// costs one connection per broker.

const (
	probeTimeout = 300 * time.Millisecond
	probeTTL     = 500 * time.Millisecond
)

// probeResult is what a probe of a broker's service port found.
type probeResult int

const (
	probeAnswered probeResult = iota // it accepted a connection
	probeRefused                     // nothing listens: the process is gone
	probeSilent                      // no answer within probeTimeout
)

// probe connects to a broker's service URL (pulsar:// or pulsar+ssl://),
// trusting a connection made within probeTTL.
func (s *Service) probe(ctx context.Context, serviceURL string) probeResult {
	if serviceURL == "" || serviceURL == s.o.ServiceURL || serviceURL == s.o.ServiceURLTLS ||
		loopback(serviceURL) && !loopback(s.o.ServiceURL) {
		return probeAnswered
	}
	s.mu.Lock()
	at, ok := s.mu.probedOK[serviceURL]
	s.mu.Unlock()
	if ok && time.Since(at) < probeTTL {
		return probeAnswered
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	dial := s.o.Probe
	if dial == nil {
		dial = dialProbe
	}
	switch err := dial(pctx, serviceURL); {
	case err == nil:
		s.mu.Lock()
		s.mu.probedOK[serviceURL] = time.Now()
		s.mu.Unlock()
		return probeAnswered
	case errors.Is(err, syscall.ECONNREFUSED):
		return probeRefused
	case ctx.Err() != nil:
		return probeAnswered // the caller gave up, not the broker
	default:
		return probeSilent
	}
}

// refused reports whether a broker's service port refuses connections.
func (s *Service) refused(ctx context.Context, serviceURL string) bool {
	return s.probe(ctx, serviceURL) == probeRefused
}

// loopback reports whether a service URL's host is a loopback address.
// A broker advertising one is reachable only from its own host: probed
// from a broker that advertises a routable address (so may live
// elsewhere, or in another network namespace) a refusal means nothing.
func loopback(serviceURL string) bool {
	u, err := url.Parse(serviceURL)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// dialProbe connects to the URL's host:port (the default Options.Probe).
func dialProbe(ctx context.Context, serviceURL string) error {
	u, err := url.Parse(serviceURL)
	if err != nil || u.Host == "" {
		return nil // not something to probe: assume it answers
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", u.Host)
	if err == nil {
		c.Close()
	}
	return err
}

// ownerState probes the owner od of a bundle: dead (still registered,
// its service port refusing connections), silent (registered, no answer:
// partitioned or hung; its session decides), or answering. An owner no
// longer registered is unloading cleanly: answering, as far as the
// lookup goes.
func (s *Service) ownerState(ctx context.Context, od OwnerData) probeResult {
	if s.IsSelf(od) {
		return probeAnswered
	}
	id := od.brokerID()
	if id == "" || !s.brokerAlive(ctx, id) {
		return probeAnswered
	}
	u := od.NativeURL
	if u == "" {
		u = od.NativeURLTLS
	}
	return s.probe(ctx, u)
}

// takeOver deletes the owner node of ns/r if it still holds data (at
// version v): its owner is dead.
func (s *Service) takeOver(ctx context.Context, ns, key, path string, data []byte, v metadata.Version) bool {
	cur, ver, err := s.st.Get(ctx, path)
	if err != nil || string(cur) != string(data) || ver != v {
		return false
	}
	if err := s.st.Delete(ctx, path, ver); err != nil {
		return false
	}
	s.log.Warn("bundle owner is dead (registered, but its service port refuses connections); its ownership is released",
		"bundle", key, "namespace", ns)
	return true
}

// waitOwnerChange waits while the owner node at path still holds data
// and its owner stays silent, up to the session timeout plus a second
// (by then the server expired a silent owner's session, and its node
// with it). It reports whether the node changed or went: a client told
// to connect to a silent owner would wait out its connection timeout
// (several seconds) and only then look up again, long after the bundle
// moved; held here, it is answered as soon as the bundle is free.
func (s *Service) waitOwnerChange(ctx context.Context, path string, data []byte, od OwnerData) bool {
	limit := 10 * time.Second
	if s.sess != nil {
		limit = s.sess.SessionTimeout() + time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	changed := make(chan struct{}, 1)
	if w, ok := s.st.(metadata.Watcher); ok {
		_ = w.Watch(ctx, path, func(metadata.Event) {
			select {
			case changed <- struct{}{}:
			default:
			}
		})
	}
	// Probing again (the owner may answer after all) and re-reading
	// cover a change the watch was set too late to see.
	tick := time.NewTicker(probeTimeout)
	defer tick.Stop()
	for {
		cur, _, err := s.st.Get(ctx, path)
		if errors.Is(err, metadata.ErrNotFound) || err == nil && string(cur) != string(data) {
			return true
		}
		if s.ownerState(ctx, od) == probeAnswered {
			return false
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-ctx.Done():
			return false
		}
	}
}

// brokerID is the id (host:webPort) of the broker that wrote an owner
// node: the first part of its lock id.
func (od OwnerData) brokerID() string {
	id, _, _ := strings.Cut(od.LockID, "/")
	return id
}
