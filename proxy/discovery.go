package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/metadata"
)

// brokersPath is where brokers register their load reports
// (cluster.LocalBrokerData JSON, one ephemeral node per live broker).
const brokersPath = "/loadbalance/brokers"

// brokerInfo is one broker's URLs.
type brokerInfo struct {
	service, serviceTLS, web, webTLS string
}

// binaryURL is the URL the proxy dials (TLS when tls is set).
func (b brokerInfo) binaryURL(tls bool) string {
	if tls {
		return b.serviceTLS
	}
	return b.service
}

// webURL is the HTTP base URL the proxy forwards to.
func (b brokerInfo) webURL(tls bool) string {
	if tls && b.webTLS != "" {
		return b.webTLS
	}
	return b.web
}

// discovery finds brokers: the registrations under /loadbalance/brokers
// (re-read at most every refreshEvery, or at once when a target is
// unknown), or the static lists. It holds caches only.
type discovery struct {
	store  metadata.Store
	static []brokerInfo
	tls    bool
	rr     atomic.Uint64

	mu struct {
		sync.Mutex
		cache   []brokerInfo
		fetched time.Time
		learned map[string]bool // static mode: hosts named by broker lookups
	}
}

const refreshEvery = 2 * time.Second

// errNoBrokers is returned when no broker is known.
var errNoBrokers = errors.New("no broker available")

func newDiscovery(cfg *Config) (*discovery, error) {
	d := &discovery{store: cfg.Metadata, tls: cfg.BrokerClientTLS != nil}
	d.mu.learned = map[string]bool{}
	if d.store != nil {
		return d, nil
	}
	svc, _ := parseURLList(cfg.BrokerServiceURL)
	svcTLS, _ := parseURLList(cfg.BrokerServiceURLTLS)
	web, _ := parseURLList(cfg.BrokerWebServiceURL)
	webTLS, _ := parseURLList(cfg.BrokerWebServiceURLTLS)
	n := max(len(svc), len(svcTLS))
	if d.tls && len(svcTLS) == 0 {
		return nil, fmt.Errorf("%w: TLS towards brokers needs brokerServiceURLTLS", ErrBadConfig)
	}
	if !d.tls && len(svc) == 0 {
		return nil, fmt.Errorf("%w: brokerServiceURL is not set", ErrBadConfig)
	}
	at := func(l []string, i int) string {
		if len(l) == 0 {
			return ""
		}
		return l[i%len(l)]
	}
	for i := range n {
		d.static = append(d.static, brokerInfo{service: at(svc, i), serviceTLS: at(svcTLS, i), web: at(web, i), webTLS: at(webTLS, i)})
	}
	return d, nil
}

// brokers returns the known brokers; force re-reads the registrations.
func (d *discovery) brokers(ctx context.Context, force bool) ([]brokerInfo, error) {
	if d.store == nil {
		return d.static, nil
	}
	d.mu.Lock()
	if !force && time.Since(d.mu.fetched) < refreshEvery && len(d.mu.cache) > 0 {
		c := d.mu.cache
		d.mu.Unlock()
		return c, nil
	}
	d.mu.Unlock()
	ids, err := d.store.Children(ctx, brokersPath)
	if err != nil && !errors.Is(err, metadata.ErrNotFound) {
		return nil, fmt.Errorf("proxy: list brokers: %w", err)
	}
	var out []brokerInfo
	for _, id := range ids {
		data, _, err := d.store.Get(ctx, brokersPath+"/"+id)
		if err != nil {
			continue // gone since the listing
		}
		var r cluster.LocalBrokerData
		if json.Unmarshal(data, &r) != nil {
			continue
		}
		out = append(out, brokerInfo{service: r.PulsarServiceURL, serviceTLS: r.PulsarServiceURLTLS, web: r.WebServiceURL, webTLS: r.WebServiceURLTLS})
	}
	d.mu.Lock()
	d.mu.cache, d.mu.fetched = out, time.Now()
	d.mu.Unlock()
	return out, nil
}

// next picks a broker round-robin (Pulsar's nextBroker).
func (d *discovery) next(ctx context.Context) (brokerInfo, error) {
	bs, err := d.brokers(ctx, false)
	if err != nil {
		return brokerInfo{}, err
	}
	var usable []brokerInfo
	for _, b := range bs {
		if b.binaryURL(d.tls) != "" {
			usable = append(usable, b)
		}
	}
	if len(usable) == 0 {
		return brokerInfo{}, errNoBrokers
	}
	return usable[int(d.rr.Add(1)%uint64(len(usable)))], nil
}

// nextWeb picks a broker with a web URL.
func (d *discovery) nextWeb(ctx context.Context) (string, error) {
	bs, err := d.brokers(ctx, false)
	if err != nil {
		return "", err
	}
	var usable []string
	for _, b := range bs {
		if u := b.webURL(d.tls); u != "" {
			usable = append(usable, u)
		}
	}
	if len(usable) == 0 {
		return "", fmt.Errorf("%w: no broker web URL known (brokerWebServiceURL)", errNoBrokers)
	}
	return usable[int(d.rr.Add(1)%uint64(len(usable)))], nil
}

// hostOf returns the host:port of a URL ("" if it has none).
func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Host
}

// find returns the broker whose binary URL (for the proxy's transport)
// has host:port hp, re-reading the registrations once when unknown.
func (d *discovery) find(ctx context.Context, hp string) (brokerInfo, bool) {
	for _, force := range []bool{false, true} {
		bs, err := d.brokers(ctx, force)
		if err != nil {
			return brokerInfo{}, false
		}
		for _, b := range bs {
			if hostOf(b.binaryURL(d.tls)) == hp {
				return b, true
			}
		}
		if d.store == nil {
			break
		}
	}
	return brokerInfo{}, false
}

// learn records, in static mode, a broker a lookup named, so that a
// client may then be relayed to it. Registrations cover this in
// metadata mode.
func (d *discovery) learn(u string) {
	if d.store != nil {
		return
	}
	if hp := hostOf(u); hp != "" {
		d.mu.Lock()
		d.mu.learned[hp] = true
		d.mu.Unlock()
	}
}

// validTarget reports whether a client may be relayed to host:port hp:
// a registered broker (metadata mode), or one in the static list or
// named by a lookup this proxy made (static mode). Anything else is
// refused, so the proxy cannot be used to reach arbitrary hosts.
func (d *discovery) validTarget(ctx context.Context, hp string) bool {
	if _, ok := d.find(ctx, hp); ok {
		return true
	}
	if d.store != nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mu.learned[hp]
}

// webFor maps a broker's binary URL (a lookup answer) to its web URL
// ("" when unknown, e.g. in static mode).
func (d *discovery) webFor(ctx context.Context, binary string) string {
	b, ok := d.find(ctx, hostOf(binary))
	if !ok {
		return ""
	}
	return b.webURL(d.tls)
}
