package tiered

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/offload"
	"github.com/magnetar-mq/magnetar/policy"
)

// Options are the feature's settings.
type Options struct {
	// Offloader is the offloader of the broker's own settings
	// (brokerconf.Config.Offload), shared with the managed-ledger factory;
	// nil: made on first use.
	Offloader *offload.Offloader
	// Metrics count every offloader's work (nil: counted, not
	// registered anywhere).
	Metrics *offload.Metrics
}

// Tiering is the feature: a broker.LedgerHook, a broker.PolicyObserver
// and the admin API's Offloads role. Safe for concurrent use.
type Tiering struct {
	b        *broker.Broker
	defaults policy.OffloadDefaults
	log      *slog.Logger
	m        *offload.Metrics

	mu sync.Mutex
	by map[string]*offload.Offloader // by propsKey
}

// Enable registers tiered storage with b (before Start).
func Enable(b *broker.Broker, o Options) (*Tiering, error) {
	x := &Tiering{b: b, defaults: policy.DefaultOffload(), log: b.Logger(), m: o.Metrics, by: map[string]*offload.Offloader{}}
	if d := b.Config().Offload; d != nil {
		x.defaults = *d
		if o.Offloader != nil {
			x.by[propsKey(d.Properties)] = o.Offloader
		}
	}
	if x.m == nil {
		x.m = offload.NewMetrics()
	}
	if err := b.Use(x); err != nil {
		return nil, err
	}
	return x, nil
}

// Name names the feature.
func (x *Tiering) Name() string { return "tiered-storage" }

// LedgerOpened hands a persistent topic's managed ledger its offload
// policy before anything reads it (offloaded ledgers are read through
// the policy's offloader).
func (x *Tiering) LedgerOpened(t broker.Topic) { x.apply(t) }

// PolicyApplied hands the managed ledger the topic's new offload policy.
func (x *Tiering) PolicyApplied(t broker.Topic) { x.apply(t) }

// apply hands t's managed ledger its current offload policy.
func (x *Tiering) apply(t broker.Topic) {
	ml := t.Managed()
	if ml == nil {
		return
	}
	p, err := x.policy(t.EffectivePolicy())
	if err != nil {
		x.log.Warn("offload policy", "topic", t.Name(), "err", err)
	}
	ml.SetOffloadPolicy(p)
}

// policy resolves the managed-ledger offload policy of a topic with
// resolved policy pol: the broker's defaults, field by field under the
// namespace's and topic's.
func (x *Tiering) policy(pol *policy.Resolved) (mledger.OffloadPolicy, error) {
	d := &x.defaults
	props := maps.Clone(d.Properties)
	if props == nil {
		props = map[string]string{}
	}
	tb, ts, lag, prio := d.ThresholdBytes, d.ThresholdSeconds, d.DeletionLagMs, d.ReadPriority
	if np := pol.Offload; np != nil {
		// Values stored before the operator narrowed the allow-list (or
		// written around the admin API) are refused here too.
		if err := np.CheckAllowed(d.Allowed()); err != nil {
			return mledger.OffloadPolicy{ThresholdBytes: -1, ThresholdSeconds: -1, DeletionLag: -1}, err
		}
		maps.Copy(props, np.Properties())
		if v := np.ThresholdBytes(); v != nil {
			tb = *v
		}
		if v := np.ManagedLedgerOffloadThresholdInSeconds; v != nil {
			ts = *v
		}
		if v := np.ManagedLedgerOffloadDeletionLagInMillis; v != nil {
			lag = *v
		}
		if np.ManagedLedgerOffloadedReadPriority != "" {
			prio = np.ManagedLedgerOffloadedReadPriority
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
	off, err := x.offloader(props)
	if err != nil {
		return p, err
	}
	p.Offloader = mledger.NewOffloader(off)
	return p, nil
}

// offloader returns the offloader of connection settings props, made on
// first use.
func (x *Tiering) offloader(props map[string]string) (*offload.Offloader, error) {
	key := propsKey(props)
	x.mu.Lock()
	defer x.mu.Unlock()
	if off := x.by[key]; off != nil {
		return off, nil
	}
	cfg, err := offload.FromProperties(props)
	if err != nil {
		return nil, err
	}
	off, err := offload.New(cfg, x.m)
	if err != nil {
		return nil, err
	}
	x.by[key] = off
	return off, nil
}

func propsKey(p map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(p)) {
		fmt.Fprintf(&b, "%s=%s\n", k, p[k])
	}
	return b.String()
}

// managed loads topic and returns its managed ledger (ErrNotAllowed for
// a non-persistent topic).
func (x *Tiering) managed(ctx context.Context, topic string) (broker.Topic, *mledger.ManagedLedger, error) {
	t, err := x.b.Topic(ctx, topic)
	if err != nil {
		return t, nil, err
	}
	ml := t.Managed()
	if !t.Persistent() || ml == nil {
		return t, nil, broker.Reason(broker.ErrNotAllowed, "offload is only available for persistent topics")
	}
	return t, ml, nil
}

// OffloadTopic starts offloading every closed ledger before id's ledger.
func (x *Tiering) OffloadTopic(ctx context.Context, topic string, id broker.MessageID) error {
	t, ml, err := x.managed(ctx, topic)
	if err != nil {
		return err
	}
	x.apply(t)
	err = ml.StartOffload(mledger.Position{LedgerID: id.LedgerID, EntryID: id.EntryID})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, mledger.ErrOffloadInProgress):
		return broker.Reason(broker.ErrAlreadyExists, "Offload already running")
	case errors.Is(err, mledger.ErrInvalidPosition):
		return broker.Reason(broker.ErrPreconditionFailed, fmt.Sprintf("Invalid message id for offload: %d:%d is not in the topic", id.LedgerID, id.EntryID))
	case errors.Is(err, mledger.ErrNoOffloader):
		return broker.Reason(broker.ErrPreconditionFailed, "Offload is not configured: set managedLedgerOffloadDriver or the namespace's offload policies")
	case errors.Is(err, mledger.ErrClosed):
		return errors.Join(broker.ErrClosed, err)
	}
	return err
}

// OffloadStatus is Pulsar's OffloadProcessStatus.
type OffloadStatus struct {
	Status                  string           `json:"status"`
	LastError               string           `json:"lastError"`
	FirstUnoffloadedMessage broker.MessageID `json:"-"`
}

// TopicOffloadStatus reports the last offload of topic.
func (x *Tiering) TopicOffloadStatus(ctx context.Context, topic string) (OffloadStatus, error) {
	_, ml, err := x.managed(ctx, topic)
	if err != nil {
		return OffloadStatus{}, err
	}
	s := ml.OffloadStatus()
	return OffloadStatus{Status: s.State, LastError: s.LastError,
		FirstUnoffloadedMessage: broker.MessageID{LedgerID: s.FirstUnoffloaded.LedgerID, EntryID: s.FirstUnoffloaded.EntryID, Partition: -1, BatchIndex: -1}}, nil
}
