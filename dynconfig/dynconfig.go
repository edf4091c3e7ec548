package dynconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/policy"
)

// Path is the metadata node holding the overrides, as Pulsar's.
const Path = "/admin/configuration"

// Errors of Update and Delete.
var (
	ErrNotDynamic = errors.New("not a dynamic configuration")
	ErrBadValue   = errors.New("invalid dynamic configuration value")
)

// Key is one dynamic setting: its Pulsar name, how its value is checked
// and how it applies to the broker defaults.
type Key struct {
	Name string
	// Apply checks v (as the configuration file's value would be) and,
	// if d is not nil, puts it on d.
	Apply func(v string, d *policy.Defaults) error
}

// whole parses a whole number.
func whole(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: want a whole number", v)
	}
	return n, nil
}

// rate is a limit where 0 (and, as in the configuration file, a
// negative value) means no limit.
func rate[T int | int64](set func(d *policy.Defaults, n T)) func(string, *policy.Defaults) error {
	return func(v string, d *policy.Defaults) error {
		n, err := whole(v)
		if err != nil {
			return err
		}
		// An int key is a Java int in Pulsar.
		var z T
		if _, isInt := any(z).(int); isInt && (n > math.MaxInt32 || n < math.MinInt32) {
			return fmt.Errorf("%q: out of range", v)
		}
		if d != nil {
			set(d, T(max(n, 0)))
		}
		return nil
	}
}

// positive is a whole number from 1 to 2^31-1.
func positive(set func(d *policy.Defaults, n int)) func(string, *policy.Defaults) error {
	return func(v string, d *policy.Defaults) error {
		n, err := whole(v)
		if err != nil {
			return err
		}
		if n < 1 || n > 1<<31-1 {
			return fmt.Errorf("%d: must be at least 1", n)
		}
		if d != nil {
			set(d, int(n))
		}
		return nil
	}
}

// flag is a boolean setting read as Pulsar reads one (Java's
// Boolean.valueOf): "true" in any case is true, any other value false.
// Pulsar refuses no value of a boolean key, so neither does Magnetar.
func flag(set func(d *policy.Defaults, b bool)) func(string, *policy.Defaults) error {
	return func(v string, d *policy.Defaults) error {
		if d != nil {
			set(d, strings.EqualFold(v, "true"))
		}
		return nil
	}
}

// Keys are the dynamic settings Magnetar applies (Pulsar marks every one
// dynamic).
var Keys = []Key{
	{"maxPublishRatePerTopicInMessages", rate(func(d *policy.Defaults, n int) { d.PublishRate.PublishThrottlingRateInMsg = n })},
	{"maxPublishRatePerTopicInBytes", rate(func(d *policy.Defaults, n int64) { d.PublishRate.PublishThrottlingRateInByte = n })},
	{"dispatchThrottlingRatePerTopicInMsg", rate(func(d *policy.Defaults, n int) { d.DispatchRate.DispatchThrottlingRateInMsg = n })},
	{"dispatchThrottlingRatePerTopicInByte", rate(func(d *policy.Defaults, n int64) { d.DispatchRate.DispatchThrottlingRateInByte = n })},
	{"dispatchThrottlingRatePerSubscriptionInMsg", rate(func(d *policy.Defaults, n int) { d.SubscriptionDispatchRate.DispatchThrottlingRateInMsg = n })},
	{"dispatchThrottlingRatePerSubscriptionInByte", rate(func(d *policy.Defaults, n int64) { d.SubscriptionDispatchRate.DispatchThrottlingRateInByte = n })},
	{"dispatchThrottlingRatePerReplicatorInMsg", rate(func(d *policy.Defaults, n int) { d.ReplicatorDispatchRate.DispatchThrottlingRateInMsg = n })},
	{"dispatchThrottlingRatePerReplicatorInByte", rate(func(d *policy.Defaults, n int64) { d.ReplicatorDispatchRate.DispatchThrottlingRateInByte = n })},
	{"subscribeThrottlingRatePerConsumer", rate(func(d *policy.Defaults, n int) { d.SubscribeRate.SubscribeThrottlingRatePerConsumer = n })},
	{"subscribeRatePeriodPerConsumerInSecond", positive(func(d *policy.Defaults, n int) { d.SubscribeRate.RatePeriodInSecond = n })},
	{"brokerDeleteInactiveTopicsEnabled", flag(func(d *policy.Defaults, b bool) { d.InactiveTopic.DeleteWhileInactive = b })},
	{"allowAutoTopicCreation", flag(func(d *policy.Defaults, b bool) { d.AutoTopicCreation = b })},
	{"allowAutoSubscriptionCreation", flag(func(d *policy.Defaults, b bool) { d.DisableAutoSubscriptionCreation = !b })},
	{"maxTopicsPerNamespace", rate(func(d *policy.Defaults, n int) { d.MaxTopicsPerNamespace = n })},
	{"brokerDeleteInactiveTopicsMode", func(v string, d *policy.Defaults) error {
		if v != "delete_when_no_subscriptions" && v != "delete_when_subscriptions_caught_up" {
			return fmt.Errorf("%q: want delete_when_no_subscriptions or delete_when_subscriptions_caught_up", v)
		}
		if d != nil {
			d.InactiveTopic.InactiveTopicDeleteMode = v
		}
		return nil
	}},
	{"subscriptionKeySharedEnable", flag(func(d *policy.Defaults, b bool) { d.KeySharedDisabled = !b })},
	// Any list: names that are no subscription type are ignored, as in
	// Pulsar.
	{"subscriptionTypesEnabled", func(v string, d *policy.Defaults) error {
		if d != nil {
			d.SubscriptionTypesOff = policy.SubscriptionTypesOff(v)
		}
		return nil
	}},
	// One of its two values, in any case (checked as an enum).
	{"allowAutoTopicCreationType", func(v string, d *policy.Defaults) error {
		if d != nil {
			d.AutoTopicPartitioned = strings.EqualFold(v, "partitioned")
		}
		return nil
	}},
	// Pulsar refuses to auto-create a topic with fewer than 1 partition.
	{"defaultNumPartitions", positive(func(d *policy.Defaults, n int) { d.DefaultNumPartitions = n })},
	// A value <= 0 is Pulsar's "not present": the check frequency.
	{"brokerDeleteInactiveTopicsMaxInactiveDurationSeconds", rate(func(d *policy.Defaults, n int) { d.InactiveTopic.MaxInactiveDurationSeconds = n })},
}

func keyOf(name string) (Key, bool) {
	i := slices.IndexFunc(Keys, func(k Key) bool { return k.Name == name })
	if i < 0 {
		return Key{}, false
	}
	return Keys[i], true
}

// InternalData is Pulsar's InternalConfigurationData: where the
// broker's metadata and ledgers are (the deprecated names
// zookeeperServers and configurationStoreServers too, which older
// clients read).
type InternalData struct {
	ZookeeperServers              string `json:"zookeeperServers"`
	MetadataStoreURL              string `json:"metadataStoreUrl"`
	ConfigurationStoreServers     string `json:"configurationStoreServers"`
	ConfigurationMetadataStoreURL string `json:"configurationMetadataStoreUrl"`
	LedgersRootPath               string `json:"ledgersRootPath"`
	BookkeeperMetadataServiceURI  string `json:"bookkeeperMetadataServiceUri"`
	StateStorageServiceURL        string `json:"stateStorageServiceUrl"`
}

// Options configure a Config.
type Options struct {
	// InactiveFollowsFrequency: the configuration leaves
	// brokerDeleteInactiveTopicsMaxInactiveDurationSeconds unset, so (as
	// in Pulsar) the maximum inactivity is the check frequency, also
	// when an override changes brokerDeleteInactiveTopicsFrequencySeconds.
	InactiveFollowsFrequency bool
	// Static is the broker's configuration by Pulsar key, secrets left
	// out (Runtime).
	Static map[string]string
	// Internal is what /admin/v2/brokers/internal-configuration answers.
	Internal InternalData
	Logger   *slog.Logger
}

// Config is one broker's dynamic configuration. Safe for concurrent use.
type Config struct {
	st       metadata.Store
	pol      *policy.Store
	static   map[string]string
	internal InternalData
	log      *slog.Logger
	follow   bool // Options.InactiveFollowsFrequency

	mu       sync.Mutex
	values   map[string]string // the overrides in force (valid ones)
	watchers map[string][]*watcher
	cancel   context.CancelFunc
	// notify serializes the calls of the watchers, in the order of the
	// changes.
	notify sync.Mutex
}

// watcher is one Watch registration.
type watcher struct {
	fn func(value string, set bool)
}

// New returns the dynamic configuration kept in st, applied through
// pol.
func New(st metadata.Store, pol *policy.Store, o Options) *Config {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Config{st: st, pol: pol, static: maps.Clone(o.Static), internal: o.Internal, log: log,
		follow: o.InactiveFollowsFrequency, values: map[string]string{}, watchers: map[string][]*watcher{}}
}

// Internal is the broker's InternalConfigurationData.
func (c *Config) Internal() InternalData { return c.internal }

// Start reads the overrides, installs them on the policy store and
// watches the node for other brokers' writes (when the store can watch).
func (c *Config) Start(ctx context.Context) error {
	c.pol.SetDefaultsOverlay(c.overlay)
	if err := c.reload(ctx); err != nil {
		return fmt.Errorf("dynamic configuration: %w", err)
	}
	if w, ok := c.st.(metadata.Watcher); ok {
		wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		c.mu.Lock()
		c.cancel = cancel
		c.mu.Unlock()
		if err := w.Watch(wctx, Path, func(metadata.Event) {
			if err := c.reload(wctx); err != nil && wctx.Err() == nil {
				c.log.Warn("dynamic configuration not reloaded", "err", err)
			}
		}); err != nil {
			cancel()
			return fmt.Errorf("dynamic configuration: watch: %w", err)
		}
	}
	return nil
}

// Close stops watching.
func (c *Config) Close() {
	c.mu.Lock()
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (c *Config) overlay(d *policy.Defaults) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range Keys {
		if v, ok := c.values[k.Name]; ok {
			_ = k.Apply(v, d) // checked when read
		}
	}
	// Pulsar's maximum inactivity, when not set, is the check frequency
	// in force.
	const freq, maxInactive = "brokerDeleteInactiveTopicsFrequencySeconds", "brokerDeleteInactiveTopicsMaxInactiveDurationSeconds"
	if v, ok := c.values[freq]; ok && c.follow {
		if _, set := c.values[maxInactive]; !set {
			n, _ := strconv.Atoi(v) // checked when read
			d.InactiveTopic.MaxInactiveDurationSeconds = n
		}
	}
}

// read returns the stored overrides and the node's version.
func (c *Config) read(ctx context.Context) (map[string]string, metadata.Version, error) {
	data, ver, err := c.st.Get(ctx, Path)
	if errors.Is(err, metadata.ErrNotFound) {
		return map[string]string{}, metadata.NotExists, nil
	}
	if err != nil {
		return nil, 0, err
	}
	m := map[string]string{}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, 0, fmt.Errorf("%s: %w", Path, err)
		}
	}
	return m, ver, nil
}

// reload applies the stored overrides; one this broker cannot apply
// (not dynamic here, bad value) is skipped with a warning.
func (c *Config) reload(ctx context.Context) error {
	m, _, err := c.read(ctx)
	if err != nil {
		return err
	}
	vals := map[string]string{}
	for name, v := range m {
		if err := validate(name, v); err != nil {
			c.log.Warn("dynamic configuration value not applied", "key", name, "err", err)
			continue
		}
		vals[name] = v
	}
	c.notify.Lock()
	defer c.notify.Unlock()
	c.mu.Lock()
	old := c.values
	c.values = vals
	var calls []func()
	for name, ws := range c.watchers {
		v, set := vals[name]
		if ov, oset := old[name]; v == ov && set == oset {
			continue
		}
		for _, w := range ws {
			calls = append(calls, func() { w.fn(v, set) })
		}
	}
	c.mu.Unlock()
	if !maps.Equal(vals, old) {
		c.pol.Refresh() // loaded topics resolve their policy again
	}
	for _, call := range calls {
		call()
	}
	return nil
}

// validate checks an override as Pulsar would (a key it marks dynamic,
// a value of the key's type) and as Magnetar applies it (Keys, checks).
func validate(name, v string) error {
	s, ok := specOf(name)
	if !ok {
		return fmt.Errorf("%w: %s", ErrNotDynamic, name)
	}
	if err := s.check(v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadValue, name, err)
	}
	if k, ok := keyOf(name); ok {
		if err := k.Apply(v, nil); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrBadValue, name, err)
		}
	}
	if ck, ok := checks[name]; ok {
		if err := ck(v); errors.Is(err, errStartOnly) {
			return fmt.Errorf("%w: %s: %v", ErrNotDynamic, name, err)
		} else if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrBadValue, name, err)
		}
	}
	return nil
}

// Watch calls fn with the override of a dynamic key (set) or, once it
// is removed, with set false (the configuration's value applies again):
// now if the key is overridden, then on every change, on this broker
// or (through the metadata store's watch) another. The package that
// applies the key owns what its value means. The calls of all watchers
// are serialized, in the order of the changes. stop ends the calls.
func (c *Config) Watch(name string, fn func(value string, set bool)) (stop func()) {
	w := &watcher{fn: fn}
	c.notify.Lock()
	defer c.notify.Unlock()
	c.mu.Lock()
	c.watchers[name] = append(c.watchers[name], w)
	v, set := c.values[name]
	c.mu.Unlock()
	if set {
		fn(v, true)
	}
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.watchers[name] = slices.DeleteFunc(c.watchers[name], func(x *watcher) bool { return x == w })
	}
}

// Names lists the dynamic keys: every key Pulsar marks dynamic, as
// Pulsar's /admin/v2/brokers/configuration does.
func (c *Config) Names() []string {
	out := make([]string, len(pulsarDynamic))
	for i, s := range pulsarDynamic {
		out[i] = s.name
	}
	return out
}

// Values returns the stored overrides.
func (c *Config) Values(ctx context.Context) (map[string]string, error) {
	m, _, err := c.read(ctx)
	return m, err
}

// Update stores an override and applies it before returning (the other
// brokers apply it when their watch fires).
func (c *Config) Update(ctx context.Context, name, value string) error {
	if err := validate(name, value); err != nil {
		return err
	}
	return c.change(ctx, func(m map[string]string) { m[name] = value })
}

// Delete removes an override (the configuration file's value applies
// again); removing one that is not set is no error.
func (c *Config) Delete(ctx context.Context, name string) error {
	if _, ok := specOf(name); !ok {
		return fmt.Errorf("%w: %s", ErrNotDynamic, name)
	}
	return c.change(ctx, func(m map[string]string) { delete(m, name) })
}

// change rewrites the node with compare-and-set, then reloads.
func (c *Config) change(ctx context.Context, mutate func(map[string]string)) error {
	for {
		m, ver, err := c.read(ctx)
		if err != nil {
			return err
		}
		mutate(m)
		data, _ := json.Marshal(m)
		_, err = c.st.Put(ctx, Path, data, ver)
		if errors.Is(err, metadata.ErrBadVersion) || errors.Is(err, metadata.ErrExists) {
			continue // another broker wrote meanwhile
		}
		if err != nil {
			return err
		}
		return c.reload(ctx)
	}
}

// Runtime is the broker's configuration by Pulsar key (the static
// values, secrets left out) with the overrides in force on top.
func (c *Config) Runtime() map[string]string {
	out := maps.Clone(c.static)
	if out == nil {
		out = map[string]string{}
	}
	c.mu.Lock()
	maps.Copy(out, c.values)
	c.mu.Unlock()
	return out
}
