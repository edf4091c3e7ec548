package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/magnetar-mq/magnetar/metadata"
)

// ResourceUsage is Pulsar's ResourceUsage: percent = Usage/Limit·100.
type ResourceUsage struct {
	Usage float64 `json:"usage"`
	Limit float64 `json:"limit"`
}

// BundleStats is Pulsar's NamespaceBundleStats.
type BundleStats struct {
	MsgRateIn        float64 `json:"msgRateIn"`
	MsgThroughputIn  float64 `json:"msgThroughputIn"`
	MsgRateOut       float64 `json:"msgRateOut"`
	MsgThroughputOut float64 `json:"msgThroughputOut"`
	ConsumerCount    int     `json:"consumerCount"`
	ProducerCount    int     `json:"producerCount"`
	Topics           int     `json:"topics"`
	CacheSize        int64   `json:"cacheSize"`
}

// LocalBrokerData is Pulsar's load report (the value of
// /loadbalance/brokers/{brokerId}, and /admin/v2/broker-stats/load-report).
type LocalBrokerData struct {
	WebServiceURL           string                 `json:"webServiceUrl"`
	WebServiceURLTLS        string                 `json:"webServiceUrlTls,omitempty"`
	PulsarServiceURL        string                 `json:"pulsarServiceUrl"`
	PulsarServiceURLTLS     string                 `json:"pulsarServiceUrlTls,omitempty"`
	PersistentTopicsEnabled bool                   `json:"persistentTopicsEnabled"`
	NonPersistentTopicsOK   bool                   `json:"nonPersistentTopicsEnabled"`
	CPU                     ResourceUsage          `json:"cpu"`
	Memory                  ResourceUsage          `json:"memory"`
	DirectMemory            ResourceUsage          `json:"directMemory"`
	BandwidthIn             ResourceUsage          `json:"bandwidthIn"`
	BandwidthOut            ResourceUsage          `json:"bandwidthOut"`
	MsgThroughputIn         float64                `json:"msgThroughputIn"`
	MsgThroughputOut        float64                `json:"msgThroughputOut"`
	MsgRateIn               float64                `json:"msgRateIn"`
	MsgRateOut              float64                `json:"msgRateOut"`
	LastUpdate              int64                  `json:"lastUpdate"`
	LastStats               map[string]BundleStats `json:"lastStats"`
	NumTopics               int                    `json:"numTopics"`
	NumBundles              int                    `json:"numBundles"`
	NumConsumers            int                    `json:"numConsumers"`
	NumProducers            int                    `json:"numProducers"`
	Bundles                 []string               `json:"bundles"`
	LastBundleGains         []string               `json:"lastBundleGains"`
	LastBundleLosses        []string               `json:"lastBundleLosses"`
	BrokerVersionString     string                 `json:"brokerVersionString"`
	LoadReportType          string                 `json:"loadReportType"`
	BrokerID                string                 `json:"brokerId"`
	LoadManagerClassName    string                 `json:"loadManagerClassName"`
	AdvertisedListeners     map[string]string      `json:"advertisedListeners"`
	Protocols               map[string]string      `json:"protocols"`
}

type cpuSample struct {
	wall time.Time
	cpu  time.Duration
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// LoadReport computes this broker's load report now.
func (s *Service) LoadReport() LocalBrokerData {
	stats := s.o.Stats()
	owned := s.OwnedBundles()
	d := LocalBrokerData{
		WebServiceURL: s.o.WebURL, WebServiceURLTLS: s.o.WebURLTLS,
		PulsarServiceURL: s.o.ServiceURL, PulsarServiceURLTLS: s.o.ServiceURLTLS,
		PersistentTopicsEnabled: true, NonPersistentTopicsOK: true,
		LastUpdate: time.Now().UnixMilli(), LastStats: map[string]BundleStats{},
		Bundles: owned, LastBundleGains: []string{}, LastBundleLosses: []string{},
		BrokerVersionString: "magnetar", LoadReportType: "LocalBrokerData", BrokerID: s.o.BrokerID,
		LoadManagerClassName: "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl",
		AdvertisedListeners:  map[string]string{}, Protocols: map[string]string{},
		NumBundles: len(owned),
	}
	for _, k := range owned {
		st := stats[k]
		d.LastStats[k] = st
		d.MsgRateIn += st.MsgRateIn
		d.MsgRateOut += st.MsgRateOut
		d.MsgThroughputIn += st.MsgThroughputIn
		d.MsgThroughputOut += st.MsgThroughputOut
		d.NumTopics += st.Topics
		d.NumConsumers += st.ConsumerCount
		d.NumProducers += st.ProducerCount
	}
	now, cpu := time.Now(), processCPU()
	s.mu.Lock()
	prev := s.mu.cpu
	s.mu.cpu = cpuSample{now, cpu}
	s.mu.Unlock()
	if !prev.wall.IsZero() && now.After(prev.wall) {
		d.CPU = ResourceUsage{Usage: 100 * float64(cpu-prev.cpu) / float64(now.Sub(prev.wall)), Limit: 100 * float64(runtime.NumCPU())}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) == nil {
		d.Memory = ResourceUsage{Usage: float64(ms.Sys) / (1 << 20), Limit: float64(si.Totalram) * float64(si.Unit) / (1 << 20)}
	}
	d.BandwidthIn = ResourceUsage{Usage: d.MsgThroughputIn * 8 / 1024, Limit: 0}
	d.BandwidthOut = ResourceUsage{Usage: d.MsgThroughputOut * 8 / 1024, Limit: 0}
	return d
}

// register writes (or refreshes) this broker's ephemeral load report.
func (s *Service) register(ctx context.Context) error {
	s.mu.Lock()
	closed := s.mu.closed
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	d := s.LoadReport()
	val, _ := json.Marshal(d)
	p := brokersPath + "/" + s.o.BrokerID
	var err error
	if e, ok := s.st.(metadata.Ephemeraler); ok {
		err = e.PutEphemeral(ctx, p, val)
	} else {
		_, err = s.st.Put(ctx, p, val, metadata.AnyVersion)
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.mu.registered = true
	s.mu.Unlock()
	return nil
}

// Brokers lists the live brokers' ids (the children of
// /loadbalance/brokers).
func (s *Service) Brokers(ctx context.Context) ([]string, error) {
	cs, err := s.st.Children(ctx, brokersPath)
	if errors.Is(err, metadata.ErrNotFound) {
		return []string{}, nil
	}
	return cs, err
}

func (s *Service) brokerAlive(ctx context.Context, id string) bool {
	ok, err := s.st.Exists(ctx, brokersPath+"/"+id)
	return err == nil && ok
}

// report reads a broker's load report.
func (s *Service) report(ctx context.Context, id string) (LocalBrokerData, error) {
	data, _, err := s.st.Get(ctx, brokersPath+"/"+id)
	if err != nil {
		return LocalBrokerData{}, err
	}
	var d LocalBrokerData
	err = json.Unmarshal(data, &d)
	return d, err
}

// Report returns a broker's published load report.
func (s *Service) Report(ctx context.Context, id string) (LocalBrokerData, error) {
	return s.report(ctx, id)
}

// defaultBundleRate is the msg/s a bundle without history counts for in
// placement (Pulsar's DEFAULT_MESSAGE_RATE).
const defaultBundleRate = 50

// place picks the broker for an unowned bundle: the least loaded live
// broker by (msgRateIn + msgRateOut) + 50 msg/s per bundle it owns or was
// recently given (Pulsar's LeastLongTermMessageRate with its default for
// bundles without history; a bundle with a resource quota of its own
// counts at the quota's msgRateIn + msgRateOut instead), ties broken at
// random. A bundle placed in the
// last 30 s goes to the same broker again while that one lives.
func (s *Service) place(ctx context.Context, key string) (string, error) {
	return s.placeExcluding(ctx, key, "")
}

// placeExcluding is place avoiding one broker (the one a bundle is shed
// from), unless it is the only one; the choice replaces any recent
// placement of the bundle.
func (s *Service) placeExcluding(ctx context.Context, key, exclude string) (string, error) {
	ids, err := s.Brokers(ctx)
	if err != nil {
		return "", err
	}
	reports := map[string]LocalBrokerData{}
	for _, id := range ids {
		if rep, err := s.report(ctx, id); err == nil {
			reports[id] = rep
		}
	}
	if len(reports) == 0 {
		return s.o.BrokerID, nil // not registered yet: decide locally
	}
	if _, ok := reports[exclude]; ok && len(reports) > 1 {
		delete(reports, exclude)
	}
	for id, rep := range reports {
		if id != s.o.BrokerID && s.refused(ctx, rep.PulsarServiceURL) {
			delete(reports, id) // registered, but dead (probe.go)
		}
	}
	if len(reports) == 0 {
		return s.o.BrokerID, nil
	}
	if err := s.isolate(ctx, key, reports); err != nil {
		return "", err
	}
	ns, peers := s.antiAffinityPeers(ctx, key)
	domains := s.failureDomains(ctx)
	quotaRates := s.quotas.bundleRates(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for k, p := range s.mu.preallocFor {
		if now.Sub(p.at) > 30*time.Second {
			delete(s.mu.preallocFor, k)
		}
	}
	if p, ok := s.mu.preallocFor[key]; ok && exclude == "" {
		if _, live := reports[p.broker]; live {
			return p.broker, nil
		}
	}
	pending := map[string]int{}
	pendingKeys := map[string][]string{}
	for k, p := range s.mu.preallocFor {
		if rep, ok := reports[p.broker]; ok && !slices.Contains(rep.Bundles, k) {
			pending[p.broker]++
			pendingKeys[p.broker] = append(pendingKeys[p.broker], k)
		}
	}
	antiAffinityFilter(ns, peers, reports, pendingKeys, domains)
	best, bestScore := []string{}, 0.0
	for id, rep := range reports {
		score := rep.MsgRateIn + rep.MsgRateOut + defaultBundleRate*float64(rep.NumBundles+pending[id])
		// A bundle with a resource quota of its own counts at the
		// quota's message rate instead of the flat estimate.
		for _, ks := range [][]string{rep.Bundles, pendingKeys[id]} {
			for _, k := range ks {
				if r, ok := quotaRates[k]; ok {
					score += r - defaultBundleRate
				}
			}
		}
		switch {
		case len(best) == 0 || score < bestScore:
			best, bestScore = []string{id}, score
		case score == bestScore:
			best = append(best, id)
		}
	}
	sort.Strings(best)
	pick := best[rand.IntN(len(best))]
	s.mu.preallocFor[key] = prealloc{broker: pick, at: now}
	return pick, nil
}

type prealloc struct {
	broker string
	at     time.Time
}

// shed (leader) unloads bundles from brokers whose message rate is above
// the mean by more than ShedThreshold × mean: the busiest bundles first,
// until the excess is covered (at least one), never a broker's only
// bundle, never a bundle shed within ShedGrace. The unloaded bundles are
// placed again by the next lookups (place). Pulsar's default shedder
// weighs CPU and network usage; brokers sharing one host (tests, `magnetar
// cluster`) have no meaningful per-broker CPU, so Magnetar sheds on
// message rate (as Pulsar's UniformLoadShedder does).
func (s *Service) shed(ctx context.Context) {
	ids, err := s.Brokers(ctx)
	if err != nil || len(ids) < 2 {
		return
	}
	reports := map[string]LocalBrokerData{}
	total := 0.0
	for _, id := range ids {
		rep, err := s.report(ctx, id)
		if err != nil {
			return
		}
		reports[id] = rep
		total += rep.MsgRateIn + rep.MsgRateOut
	}
	mean := total / float64(len(reports))
	if mean <= 0 {
		return
	}
	now := time.Now()
	grace := s.Tuning().ShedGrace
	for id, rep := range reports {
		load := rep.MsgRateIn + rep.MsgRateOut
		if load <= mean*(1+s.o.ShedThreshold) || len(rep.LastStats) < 2 {
			continue
		}
		type cand struct {
			key  string
			rate float64
		}
		var cs []cand
		for k, st := range rep.LastStats {
			cs = append(cs, cand{k, st.MsgRateIn + st.MsgRateOut})
		}
		sort.Slice(cs, func(i, j int) bool { return cs[i].rate > cs[j].rate })
		excess := load - mean
		shed := 0.0
		for i, c := range cs {
			if shed >= excess && i > 0 || i == len(cs)-1 {
				break
			}
			s.mu.Lock()
			last, recent := s.mu.shedAt[c.key]
			if recent && now.Sub(last) < grace {
				s.mu.Unlock()
				continue
			}
			s.mu.shedAt[c.key] = now
			s.mu.Unlock()
			ns, r, err := splitKey(c.key)
			if err != nil {
				continue
			}
			// Choose where it goes now, away from this broker: the
			// next lookup finds the placement.
			dest, _ := s.placeExcluding(ctx, c.key, id)
			s.log.Info("shedding bundle", "bundle", c.key, "broker", id, "to", dest, "rate", c.rate, "brokerRate", load, "mean", mean)
			if err := s.UnloadBundle(ctx, ns, r); err != nil {
				s.log.Warn("shed bundle", "bundle", c.key, "err", err)
			}
			shed += c.rate
		}
	}
}

var errHTTPNotFound = errors.New("cluster: http 404")

func httpPut(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return errHTTPNotFound
	case resp.StatusCode/100 != 2:
		return fmt.Errorf("cluster: PUT %s: %s: %s", url, resp.Status, body)
	}
	return nil
}

// CPUSampler measures the process's CPU use between two calls of
// Sample (Pulsar's cpu usage: percent of one core, limit 100 × cores).
type CPUSampler struct {
	mu   sync.Mutex
	prev cpuSample
}

// Sample returns the CPU use since the previous call (zero on the
// first).
func (c *CPUSampler) Sample() ResourceUsage {
	now, cpu := time.Now(), processCPU()
	c.mu.Lock()
	prev := c.prev
	c.prev = cpuSample{now, cpu}
	c.mu.Unlock()
	if prev.wall.IsZero() || !now.After(prev.wall) {
		return ResourceUsage{Limit: 100 * float64(runtime.NumCPU())}
	}
	return ResourceUsage{Usage: 100 * float64(cpu-prev.cpu) / float64(now.Sub(prev.wall)), Limit: 100 * float64(runtime.NumCPU())}
}

// MemoryUsage is the process's memory from the OS (MB) against the
// machine's (MB), as load reports carry it.
func MemoryUsage() ResourceUsage {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return ResourceUsage{Usage: float64(ms.Sys) / (1 << 20)}
	}
	return ResourceUsage{Usage: float64(ms.Sys) / (1 << 20), Limit: float64(si.Totalram) * float64(si.Unit) / (1 << 20)}
}
