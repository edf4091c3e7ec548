package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/bundle"
	"github.com/magnetar-mq/magnetar/metadata"
)

// Resource quotas, as Pulsar keeps them: the expected load of a bundle
// (messages and bytes per second in and out, memory in MB), a default
// one for every bundle without its own, stored as JSON in the cluster's
// metadata store under /loadbalance/resource-quota/default and
// /loadbalance/resource-quota/namespace/{tenant}/{ns}/{range}.
// Placement (place) counts a bundle with a quota of its own at the
// quota's message rate instead of the flat estimate of a bundle without
// history (docs/cluster.md).

const (
	quotaPrefix        = "/loadbalance/resource-quota"
	quotaDefaultPath   = quotaPrefix + "/default"
	quotaNamespacePath = quotaPrefix + "/namespace"
)

// ResourceQuota is Pulsar's ResourceQuota.
type ResourceQuota struct {
	MsgRateIn    float64 `json:"msgRateIn"`
	MsgRateOut   float64 `json:"msgRateOut"`
	BandwidthIn  float64 `json:"bandwidthIn"`
	BandwidthOut float64 `json:"bandwidthOut"`
	Memory       float64 `json:"memory"`
	Dynamic      bool    `json:"dynamic"`
}

// InitialQuota is the default quota until one is set (Pulsar's initial
// value: 40 msg/s in, 120 out, 100 kB/s in, 300 kB/s out, 80 MB,
// dynamic).
var InitialQuota = ResourceQuota{MsgRateIn: 40, MsgRateOut: 120, BandwidthIn: 100000, BandwidthOut: 300000, Memory: 80, Dynamic: true}

// ErrBadQuota is a quota with a negative or non-finite value.
var ErrBadQuota = errors.New("invalid resource quota")

// Check refuses negative and non-finite values.
func (q ResourceQuota) Check() error {
	for _, v := range []float64{q.MsgRateIn, q.MsgRateOut, q.BandwidthIn, q.BandwidthOut, q.Memory} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: values must be finite and >= 0", ErrBadQuota)
		}
	}
	return nil
}

// Quotas reads and writes resource quotas in a metadata store (the
// standalone's and a clustered broker's alike). Safe for concurrent use.
type Quotas struct {
	st metadata.Store

	mu     sync.Mutex
	cache  map[string]float64 // bundle key → quota msg rate (in + out) of bundles with one
	loaded time.Time
}

// NewQuotas returns the quotas kept in st.
func NewQuotas(st metadata.Store) *Quotas { return &Quotas{st: st} }

func (q *Quotas) read(ctx context.Context, path string) (ResourceQuota, bool, error) {
	data, _, err := q.st.Get(ctx, path)
	if errors.Is(err, metadata.ErrNotFound) || err == nil && len(data) == 0 {
		return ResourceQuota{}, false, nil
	}
	if err != nil {
		return ResourceQuota{}, false, err
	}
	var rq ResourceQuota
	if err := json.Unmarshal(data, &rq); err != nil {
		return ResourceQuota{}, false, fmt.Errorf("resource quota %s: %w", path, err)
	}
	return rq, true, nil
}

func (q *Quotas) write(ctx context.Context, path string, rq ResourceQuota) error {
	if err := rq.Check(); err != nil {
		return err
	}
	data, _ := json.Marshal(rq)
	_, err := q.st.Put(ctx, path, data, metadata.AnyVersion)
	q.forget()
	return err
}

func (q *Quotas) forget() {
	q.mu.Lock()
	q.loaded = time.Time{}
	q.mu.Unlock()
}

// DefaultQuota is the quota of bundles without one (InitialQuota until
// set).
func (q *Quotas) DefaultQuota(ctx context.Context) (ResourceQuota, error) {
	rq, ok, err := q.read(ctx, quotaDefaultPath)
	if err != nil || !ok {
		return InitialQuota, err
	}
	return rq, nil
}

// SetDefaultQuota replaces the default quota.
func (q *Quotas) SetDefaultQuota(ctx context.Context, rq ResourceQuota) error {
	return q.write(ctx, quotaDefaultPath, rq)
}

func bundleQuotaPath(ns string, r bundle.Range) string {
	return quotaNamespacePath + "/" + BundleKey(ns, r)
}

// BundleQuota is the quota of bundle r of ns ("tenant/ns"): its own, or
// the default.
func (q *Quotas) BundleQuota(ctx context.Context, ns string, r bundle.Range) (ResourceQuota, error) {
	rq, ok, err := q.read(ctx, bundleQuotaPath(ns, r))
	if err != nil {
		return ResourceQuota{}, err
	}
	if !ok {
		return q.DefaultQuota(ctx)
	}
	return rq, nil
}

// SetBundleQuota gives bundle r of ns a quota of its own.
func (q *Quotas) SetBundleQuota(ctx context.Context, ns string, r bundle.Range, rq ResourceQuota) error {
	return q.write(ctx, bundleQuotaPath(ns, r), rq)
}

// ResetBundleQuota removes the bundle's own quota (the default applies
// again); removing an absent one is no error.
func (q *Quotas) ResetBundleQuota(ctx context.Context, ns string, r bundle.Range) error {
	err := q.st.Delete(ctx, bundleQuotaPath(ns, r), metadata.AnyVersion)
	q.forget()
	if errors.Is(err, metadata.ErrNotFound) {
		return nil
	}
	return err
}

// quotaRefresh bounds how stale placement's view of the bundle quotas
// may be (writes through this Quotas refresh it at once).
const quotaRefresh = 30 * time.Second

// bundleRates returns the message rate (in + out) of every bundle with a
// quota of its own, by bundle key, read at most every quotaRefresh.
func (q *Quotas) bundleRates(ctx context.Context) map[string]float64 {
	q.mu.Lock()
	if !q.loaded.IsZero() && time.Since(q.loaded) < quotaRefresh {
		m := q.cache
		q.mu.Unlock()
		return m
	}
	q.mu.Unlock()
	m := map[string]float64{}
	tenants, _ := q.st.Children(ctx, quotaNamespacePath)
	for _, t := range tenants {
		nss, _ := q.st.Children(ctx, quotaNamespacePath+"/"+t)
		for _, n := range nss {
			ranges, _ := q.st.Children(ctx, quotaNamespacePath+"/"+t+"/"+n)
			for _, r := range ranges {
				key := t + "/" + n + "/" + r
				if rq, ok, err := q.read(ctx, quotaNamespacePath+"/"+key); err == nil && ok {
					m[key] = rq.MsgRateIn + rq.MsgRateOut
				}
			}
		}
	}
	q.mu.Lock()
	q.cache, q.loaded = m, time.Now()
	q.mu.Unlock()
	return m
}
