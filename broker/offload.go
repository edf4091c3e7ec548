package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/offload"
	"github.com/magnetar-mq/magnetar/policy"
)

// OffloadDefaults are the broker-wide tiered-storage settings, under
// Pulsar's broker keys; a namespace's offload policies override them
// field by field.
type OffloadDefaults struct {
	// Properties are the connection settings by Pulsar name
	// (managedLedgerOffloadDriver, s3ManagedLedgerOffloadBucket, ...,
	// fileSystemURI; see package offload). No driver: no offloader
	// unless a namespace names one.
	Properties map[string]string
	// ThresholdBytes (managedLedgerOffloadAutoTriggerSizeThresholdBytes)
	// and ThresholdSeconds (managedLedgerOffloadThresholdInSeconds): -1
	// disables.
	ThresholdBytes, ThresholdSeconds int64
	// DeletionLagMs (managedLedgerOffloadDeletionLagMs): 4 h by default;
	// negative never deletes the bookie copy.
	DeletionLagMs int64
	// ReadPriority (managedLedgerDataReadPriority): policy.ReadTieredFirst
	// or policy.ReadBookkeeperFirst.
	ReadPriority string
	// AllowedFileSystemRoots (offloadAllowedFileSystemRoots) and
	// AllowedServiceEndpoints (offloadAllowedServiceEndpoints) are where
	// namespace and topic offload policies may point besides the
	// broker's own directory and endpoint (see policy.OffloadAllowed).
	AllowedFileSystemRoots, AllowedServiceEndpoints []string
}

// offloadAllowed is the allow-list of offload locations for policies set
// below the broker: the configured roots and endpoints plus the broker's
// own.
func (b *Broker) offloadAllowed() policy.OffloadAllowed {
	d := b.cfg.Offload
	if d == nil {
		return policy.OffloadAllowed{}
	}
	a := policy.OffloadAllowed{
		FileSystemRoots:  slices.Clone(d.AllowedFileSystemRoots),
		ServiceEndpoints: slices.Clone(d.AllowedServiceEndpoints),
	}
	for k, v := range d.Properties {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		switch k {
		case "fileSystemURI":
			a.FileSystemRoots = append(a.FileSystemRoots, v)
		case "s3ManagedLedgerOffloadServiceEndpoint", "managedLedgerOffloadServiceEndpoint":
			a.ServiceEndpoints = append(a.ServiceEndpoints, v)
		case "fileSystemProfilePath":
			a.ProfilePaths = append(a.ProfilePaths, v)
		}
	}
	return a
}

// DefaultOffload are Pulsar's broker defaults: no driver, both
// thresholds off, a 4 h deletion lag, tiered-storage-first reads.
func DefaultOffload() OffloadDefaults {
	return OffloadDefaults{ThresholdBytes: -1, ThresholdSeconds: -1, DeletionLagMs: 4 * 3600 * 1000, ReadPriority: policy.ReadTieredFirst}
}

// offloaders caches one offloader per distinct connection setting.
type offloaders struct {
	m  *offload.Metrics
	mu sync.Mutex
	by map[string]*offload.Offloader
}

func propsKey(p map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(p)) {
		fmt.Fprintf(&b, "%s=%s\n", k, p[k])
	}
	return b.String()
}

func (o *offloaders) get(props map[string]string) (*offload.Offloader, error) {
	key := propsKey(props)
	o.mu.Lock()
	defer o.mu.Unlock()
	if off := o.by[key]; off != nil {
		return off, nil
	}
	cfg, err := offload.FromProperties(props)
	if err != nil {
		return nil, err
	}
	off, err := offload.New(cfg, o.m)
	if err != nil {
		return nil, err
	}
	o.by[key] = off
	return off, nil
}

// offloadPolicy resolves the managed-ledger offload policy of a topic
// with resolved policy pol.
func (b *Broker) offloadPolicy(pol *policy.Resolved) (mledger.OffloadPolicy, error) {
	d := b.cfg.Offload
	if d == nil {
		def := DefaultOffload()
		d = &def
	}
	props := maps.Clone(d.Properties)
	if props == nil {
		props = map[string]string{}
	}
	tb, ts, lag, prio := d.ThresholdBytes, d.ThresholdSeconds, d.DeletionLagMs, d.ReadPriority
	if o := pol.Offload; o != nil {
		// Values stored before the operator narrowed the allow-list (or
		// written around the admin API) are refused here too.
		if err := o.CheckAllowed(b.offloadAllowed()); err != nil {
			return mledger.OffloadPolicy{ThresholdBytes: -1, ThresholdSeconds: -1, DeletionLag: -1}, err
		}
		maps.Copy(props, o.Properties())
		if v := o.ThresholdBytes(); v != nil {
			tb = *v
		}
		if v := o.ManagedLedgerOffloadThresholdInSeconds; v != nil {
			ts = *v
		}
		if v := o.ManagedLedgerOffloadDeletionLagInMillis; v != nil {
			lag = *v
		}
		if o.ManagedLedgerOffloadedReadPriority != "" {
			prio = o.ManagedLedgerOffloadedReadPriority
		}
	}
	p := mledger.OffloadPolicy{ThresholdBytes: tb, ThresholdSeconds: ts, DeletionLag: time.Duration(lag) * time.Millisecond,
		BookkeeperFirst: prio == policy.ReadBookkeeperFirst}
	if lag < 0 {
		p.DeletionLag = -1
	}
	if strings.TrimSpace(props["managedLedgerOffloadDriver"]) == "" {
		return p, nil
	}
	off, err := b.offloaders.get(props)
	if err != nil {
		return p, err
	}
	p.Offloader = mledger.NewOffloader(off)
	return p, nil
}

// offloadable is what the managed-ledger adapter offers for tiered
// storage (test fakes need not).
type offloadable interface {
	SetOffloadPolicy(mledger.OffloadPolicy)
	StartOffload(mledger.Position) error
	OffloadStatus() mledger.OffloadStatus
}

// applyOffload hands t's managed ledger its current offload policy.
func (b *Broker) applyOffload(t *topic) {
	ol, ok := t.ml.(offloadable)
	if !ok || !t.persistent() {
		return
	}
	p, err := b.offloadPolicy(t.pol.Load())
	if err != nil {
		b.log.Warn("offload policy", "topic", t.full, "err", err)
	}
	ol.SetOffloadPolicy(p)
}

// OffloadStatus is Pulsar's OffloadProcessStatus.
type OffloadStatus struct {
	Status                  string    `json:"status"`
	LastError               string    `json:"lastError"`
	FirstUnoffloadedMessage MessageID `json:"-"`
}

// OffloadTopic starts offloading every closed
// ledger before id's ledger.
func (a TopicLifecycle) OffloadTopic(ctx context.Context, topic string, id MessageID) error {
	b := a.b
	t, err := b.loadedOrLoad(ctx, topic)
	if err != nil {
		return err
	}
	ol, ok := t.ml.(offloadable)
	if !t.persistent() || !ok {
		return reason(ErrNotAllowed, "offload is only available for persistent topics")
	}
	b.applyOffload(t)
	err = ol.StartOffload(mledger.Position{LedgerID: id.LedgerID, EntryID: id.EntryID})
	switch {
	case errors.Is(err, mledger.ErrOffloadInProgress):
		return reason(ErrAlreadyExists, "Offload already running")
	case errors.Is(err, mledger.ErrInvalidPosition):
		return reason(ErrPreconditionFailed, fmt.Sprintf("Invalid message id for offload: %d:%d is not in the topic", id.LedgerID, id.EntryID))
	case errors.Is(err, mledger.ErrNoOffloader):
		return reason(ErrPreconditionFailed, "Offload is not configured: set managedLedgerOffloadDriver or the namespace's offload policies")
	}
	return mapErr(err)
}

// TopicOffloadStatus reports the last offload of topic.
func (a TopicLifecycle) TopicOffloadStatus(ctx context.Context, topic string) (OffloadStatus, error) {
	b := a.b
	t, err := b.loadedOrLoad(ctx, topic)
	if err != nil {
		return OffloadStatus{}, err
	}
	ol, ok := t.ml.(offloadable)
	if !t.persistent() || !ok {
		return OffloadStatus{}, reason(ErrNotAllowed, "offload is only available for persistent topics")
	}
	s := ol.OffloadStatus()
	return OffloadStatus{Status: s.State, LastError: s.LastError,
		FirstUnoffloadedMessage: MessageID{LedgerID: s.FirstUnoffloaded.LedgerID, EntryID: s.FirstUnoffloaded.EntryID, Partition: -1, BatchIndex: -1}}, nil
}

// readError maps a failed admin read of one of t's entries: an
// unreachable object store (or a missing offloader) is ErrUnavailable
// with a reason that names no endpoint, bucket or path (the cause, which
// may, goes to the log); anything else "Message not found" (the cause,
// which names ledgers and storage layers, is logged at debug level).
func (t *topic) readError(err error) error {
	switch {
	case errors.Is(err, offload.ErrStoreUnavailable):
		t.log.Warn("reading offloaded data failed", "err", err)
		return reason(ErrUnavailable, "Offloaded data cannot be read now: object store unavailable")
	case errors.Is(err, mledger.ErrNoOffloader):
		t.log.Warn("reading offloaded data failed", "err", err)
		return reason(ErrUnavailable, "Offloaded data cannot be read: no offloader configured")
	}
	t.log.Debug("admin read of an entry failed", "err", err)
	return reason(ErrTopicNotFound, "Message not found")
}
