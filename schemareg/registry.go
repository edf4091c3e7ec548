package schemareg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/schema"
)

// Config is the registry's broker-wide configuration.
type Config struct {
	// CompatibilityStrategy is the broker default (Pulsar's
	// schemaCompatibilityStrategy; "" and UNDEFINED mean FULL) under the
	// namespace and topic policies; names as in package schema.
	CompatibilityStrategy string
	// ValidationEnforced (isSchemaValidationEnforced) refuses producers
	// without a schema on topics with one, unless the namespace's
	// schema_validation_enforced says otherwise.
	ValidationEnforced bool
}

// Registry is a broker's schema registry (a broker.Feature): the schema
// versions of every topic, checked at PRODUCER and SUBSCRIBE, served by
// GET_SCHEMA and GET_OR_CREATE_SCHEMA, and administered through the
// methods the admin API's Schemas role needs. Enable builds and
// registers it. Its methods are safe for concurrent use.
type Registry struct {
	cfg      Config
	def      schema.Strategy // the broker default, resolved
	store    metadata.Store
	policies *policy.Store
	log      *slog.Logger
	// mu serialises this broker's writers (brokers sharing the store
	// are kept apart by compare-and-set).
	mu sync.Mutex

	// life ends at Close; the command goroutines run under it and Close
	// waits for them (spawn).
	life     context.Context
	lifeStop context.CancelFunc
	wg       sync.WaitGroup
	closing  struct {
		sync.Mutex
		closed bool
	}
}

var (
	_ broker.AttachHook       = (*Registry)(nil)
	_ broker.CommandSource    = (*Registry)(nil)
	_ broker.DeletionObserver = (*Registry)(nil)
	_ broker.Lifecycle        = (*Registry)(nil)
)

// Enable builds the registry over b's metadata store and policies and
// registers it on b (before Start). An unknown strategy name is
// broker.ErrBadConfig.
func Enable(b *broker.Broker, cfg Config) (*Registry, error) {
	def, err := schema.ParseStrategy(cfg.CompatibilityStrategy)
	if err != nil {
		return nil, fmt.Errorf("%w: schemaCompatibilityStrategy: %w", broker.ErrBadConfig, err)
	}
	if def == schema.Undefined {
		def = schema.Full
	}
	r := &Registry{cfg: cfg, def: def, store: b.Metadata(), policies: b.Policies(), log: b.Logger()}
	r.life, r.lifeStop = context.WithCancel(context.Background())
	if err := b.Use(r); err != nil {
		return nil, err
	}
	return r, nil
}

// Name implements broker.Feature.
func (r *Registry) Name() string { return "schema registry" }

// Start implements broker.Lifecycle (nothing to start).
func (r *Registry) Start(context.Context) error { return nil }

// Close implements broker.Lifecycle: requests in flight are cancelled
// (unanswered: the client's request times out) and waited for.
func (r *Registry) Close() {
	r.closing.Lock()
	r.closing.closed = true
	r.closing.Unlock()
	r.lifeStop()
	r.wg.Wait()
}

// spawn runs f on a goroutine of the registry's, unless it closed.
func (r *Registry) spawn(f func(ctx context.Context)) {
	r.closing.Lock()
	defer r.closing.Unlock()
	if r.closing.closed {
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		ctx, cancel := context.WithTimeout(r.life, requestTimeout)
		defer cancel()
		f(ctx)
	}()
}

// schemaTopic returns the topic whose schema a name uses: partitions
// share their parent's.
func schemaTopic(topic string) (pulsarproto.TopicName, error) {
	tn, err := broker.ParseTopicName(topic)
	if err != nil {
		return tn, err
	}
	return tn.Parent(), nil
}

// mode says who brings a schema: it decides whether a new version may
// be registered.
type mode int

const (
	byProducer mode = iota
	byConsumer
	byAdmin
)

// nsPolicies returns the policies of tn's namespace (nil when they cannot
// be read now: the broker defaults apply).
func (r *Registry) nsPolicies(ctx context.Context, tn pulsarproto.TopicName) *policy.Policies {
	ns := tn.NamespaceName()
	if p := r.policies.Cached(ns); p != nil {
		return p
	}
	p, err := r.policies.Get(ctx, ns)
	if err != nil {
		return nil
	}
	return p
}

// strategy returns the compatibility strategy of a topic: its override
// (in rec), the namespace's schema_compatibility_strategy, its older
// schema_auto_update_compatibility_strategy, the broker default.
func (r *Registry) strategy(p *policy.Policies, rec *record) schema.Strategy {
	var nsSt, nsAuto schema.Strategy
	topicSt, _ := schema.ParseStrategy(rec.Compatibility)
	if p != nil {
		nsSt, _ = schema.ParseStrategy(p.SchemaCompatibilityStrategy)
		nsAuto, _ = schema.ParseStrategy(p.SchemaAutoUpdateCompatibilityStrategy)
	}
	return schema.Resolve(r.def, topicSt, nsSt, nsAuto)
}

// allowAutoUpdate reports the namespace's is_allow_auto_update_schema.
func allowAutoUpdate(p *policy.Policies) bool {
	if p != nil && p.IsAllowAutoUpdateSchema != nil {
		return *p.IsAllowAutoUpdateSchema
	}
	return true
}

// validationEnforced reports whether producers without a schema are
// refused on t when it has one: the topic's schemaValidationEnforced,
// else its namespace's, else the broker's (its effective policy; the
// broker's value is Config.ValidationEnforced when the broker's policy
// defaults do not enforce it).
func (r *Registry) validationEnforced(t broker.Topic) bool {
	pol := t.EffectivePolicy()
	if pol.SchemaValidationEnforced {
		return true
	}
	return r.cfg.ValidationEnforced && !pol.SchemaValidationSet
}

// register returns the version of s on tn (a schema topic): an equal
// live version, or a new one if the strategy allows it and m may
// register. A consumer's schema compatible with the topic's is accepted
// without registering (version -1). Refusals wrap
// schema.ErrIncompatible or schema.ErrInvalid.
func (r *Registry) register(ctx context.Context, tn pulsarproto.TopicName, s schema.Info, m mode) (int, error) {
	p := r.nsPolicies(ctx, tn)
	version := -1
	err := r.update(ctx, tn, func(rec *record) error {
		if i := rec.find(s); i >= 0 {
			version = i
			return errNoWrite
		}
		live := rec.liveInfos()
		if m != byAdmin && len(live) > 0 && !allowAutoUpdate(p) {
			return fmt.Errorf("%w: the namespace does not allow automatic schema updates (is_allow_auto_update_schema=false)", schema.ErrIncompatible)
		}
		if err := schema.Check(live, s, r.strategy(p, rec)); err != nil {
			return err
		}
		if m == byConsumer && len(live) > 0 {
			return errNoWrite
		}
		version = rec.add(s)
		return nil
	})
	return version, err
}

// Schema returns version v (the latest live one if v < 0) of a topic's
// schema; found is false for an absent or deleted version.
func (r *Registry) Schema(ctx context.Context, topic string, v int64) (schema.Version, bool, error) {
	tn, err := schemaTopic(topic)
	if err != nil {
		return schema.Version{}, false, err
	}
	rec, _, err := r.load(ctx, tn)
	if err != nil {
		return schema.Version{}, false, err
	}
	e, n, found := rec.get(v)
	if !found {
		return schema.Version{}, false, nil
	}
	return e.version(n), true, nil
}

// Schemas returns a topic's live versions, oldest first.
func (r *Registry) Schemas(ctx context.Context, topic string) ([]schema.Version, error) {
	tn, err := schemaTopic(topic)
	if err != nil {
		return nil, err
	}
	rec, _, err := r.load(ctx, tn)
	if err != nil {
		return nil, err
	}
	first := rec.live()
	out := make([]schema.Version, 0, len(rec.Versions)-first)
	for i := first; i < len(rec.Versions); i++ {
		out = append(out, rec.Versions[i].version(i))
	}
	return out, nil
}

// CreateSchema registers s (or finds an equal live version) under the
// topic's compatibility strategy, as the admin API uploads: the
// namespace's is_allow_auto_update_schema does not apply.
func (r *Registry) CreateSchema(ctx context.Context, topic string, s schema.Info) (int64, error) {
	tn, err := schemaTopic(topic)
	if err != nil {
		return 0, err
	}
	v, err := r.register(ctx, tn, normal(s), byAdmin)
	return int64(v), err
}

// TestSchema reports whether s would be accepted (nil, or an error
// wrapping schema.ErrIncompatible or schema.ErrInvalid) and the strategy
// in effect.
func (r *Registry) TestSchema(ctx context.Context, topic string, s schema.Info) (string, error) {
	tn, err := schemaTopic(topic)
	if err != nil {
		return "", err
	}
	rec, _, err := r.load(ctx, tn)
	if err != nil {
		return "", err
	}
	st := r.strategy(r.nsPolicies(ctx, tn), rec)
	if s = normal(s); rec.find(s) >= 0 {
		return st.String(), nil
	}
	return st.String(), schema.Check(rec.liveInfos(), s, st)
}

// SchemaVersion returns the oldest live version with s's type and
// definition, as Pulsar's lookup matches (the hash of type and data; the
// properties play no part); found false if none.
func (r *Registry) SchemaVersion(ctx context.Context, topic string, s schema.Info) (int64, bool, error) {
	tn, err := schemaTopic(topic)
	if err != nil {
		return 0, false, err
	}
	rec, _, err := r.load(ctx, tn)
	if err != nil {
		return -1, false, err
	}
	v := rec.findDefinition(s)
	return int64(v), v >= 0, nil
}

// DeleteSchema deletes a topic's schema as the admin API does: a marker
// version, so the next schema starts a new history (not checked against
// the deleted one) and old version numbers stay unambiguous. It returns
// the marker's version, or -1 when there was no live schema.
func (r *Registry) DeleteSchema(ctx context.Context, topic string) (int64, error) {
	tn, err := schemaTopic(topic)
	if err != nil {
		return 0, err
	}
	v := -1
	err = r.update(ctx, tn, func(rec *record) error {
		if v = rec.markDeleted(); v < 0 {
			return errNoWrite
		}
		return nil
	})
	return int64(v), err
}

// TopicSchemaStrategy returns the topic's compatibility strategy
// override ("" if none) and the strategy in effect.
func (r *Registry) TopicSchemaStrategy(ctx context.Context, topic string) (override, effective string, err error) {
	tn, err := schemaTopic(topic)
	if err != nil {
		return "", "", err
	}
	rec, _, err := r.load(ctx, tn)
	if err != nil {
		return "", "", err
	}
	return rec.Compatibility, r.strategy(r.nsPolicies(ctx, tn), rec).String(), nil
}

// SetTopicSchemaStrategy sets the topic's strategy override ("" or
// UNDEFINED removes it); an unknown name wraps schema.ErrInvalid.
func (r *Registry) SetTopicSchemaStrategy(ctx context.Context, topic, strategy string) error {
	tn, err := schemaTopic(topic)
	if err != nil {
		return err
	}
	st, err := schema.ParseStrategy(strategy)
	if err != nil {
		return errors.Join(schema.ErrInvalid, err)
	}
	return r.update(ctx, tn, func(rec *record) error {
		rec.Compatibility = ""
		if st != schema.Undefined {
			rec.Compatibility = st.String()
		}
		return nil
	})
}

// normal drops empty properties, as the stored form does.
func normal(s schema.Info) schema.Info {
	if len(s.Properties) == 0 {
		s.Properties = nil
	}
	return s
}
