package stack

import (
	"strconv"
	"strings"
	"time"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/dynconfig"
	"github.com/magnetar-mq/magnetar/enforcement"
	"github.com/magnetar-mq/magnetar/internal/conf/convert"
)

// watchDynamic (before the broker starts) makes the dynamic keys the
// broker and its features read
// once at start (the policy defaults apply through the policy store's
// overlay instead) take effect on the running broker when an override
// is stored or removed (docs/dynamic-config.md). A removed override
// restores the value the broker started with. The values were checked
// by dynconfig before they reach here.
func watchDynamic(dyn *dynconfig.Config, b *broker.Broker, enf *enforcement.Enforcer) (stop func()) {
	var stops []func()
	watch := func(name string, fn func(v string, set bool)) { stops = append(stops, dyn.Watch(name, fn)) }
	atoi := func(v string) int { n, _ := strconv.Atoi(v); return n }

	watch("dispatcherMaxReadBatchSize", func(v string, set bool) {
		n := 0 // the configured batch
		if set {
			n = atoi(v)
		}
		b.SetDispatchBatch(n)
	})
	watch("maxNumPartitionsPerPartitionedTopic", func(v string, set bool) {
		n := b.Config().MaxPartitionsPerTopic
		if set {
			n = atoi(v) // 0 or negative: no limit, as in Pulsar
		}
		b.SetMaxPartitionsPerTopic(n)
	})
	if sec := b.Security(); sec != nil && sec.Authz != nil {
		watch("superUserRoles", func(v string, set bool) {
			roles := sec.Config.SuperUserRoles // the file's
			if set {
				roles = strings.Split(v, ",") // empty: no superuser, as in Pulsar
			}
			sec.Authz.SetSuperUsers(roles)
		})
	}
	if sec := b.Security(); sec != nil {
		watchBrokerClient(sec, watch)
	}
	if enf != nil {
		watch("brokerDeleteInactiveTopicsFrequencySeconds", func(v string, set bool) {
			var d time.Duration // the configured frequency
			if set {
				d = time.Duration(atoi(v)) * time.Second
			}
			enf.SetInactiveTopicsFrequency(d)
		})
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}

// loadBalancerKeys put a Pulsar value of a load balancer key on a
// cluster tuning, with the meaning the configuration file's value has
// (internal/conf/convert, docs/config-values.md).
var loadBalancerKeys = map[string]func(v string, t *cluster.Tuning){
	"loadBalancerSheddingIntervalMinutes": func(v string, t *cluster.Tuning) {
		t.ShedInterval = converted(convert.AtLeastOne(time.Minute), v, parseDuration)
	},
	"loadBalancerSheddingGracePeriodMinutes": func(v string, t *cluster.Tuning) {
		t.ShedGrace = converted(convert.OrOff(time.Minute), v, parseDuration)
	},
	"loadBalancerNamespaceBundleMaxTopics": func(v string, t *cluster.Tuning) {
		t.SplitMaxTopics = converted(convert.SplitTopics, v, strconv.Atoi)
	},
	"loadBalancerNamespaceBundleMaxSessions": func(v string, t *cluster.Tuning) {
		t.SplitMaxSessions = converted(convert.SplitSessions, v, strconv.Atoi)
	},
	"loadBalancerNamespaceBundleMaxMsgRate": func(v string, t *cluster.Tuning) {
		t.SplitMaxMsgRate = converted(convert.SplitRate(1), v, parseFloat)
	},
	"loadBalancerNamespaceBundleMaxBandwidthMbytes": func(v string, t *cluster.Tuning) {
		t.SplitMaxBytesRate = converted(convert.SplitRate(1<<20), v, parseFloat)
	},
	"loadBalancerAutoBundleSplitEnabled": func(v string, t *cluster.Tuning) {
		t.DisableAutoSplit = !strings.EqualFold(v, "true")
	},
	"failureDomainsEnabled": func(v string, t *cluster.Tuning) {
		t.FailureDomainsEnabled = strings.EqualFold(v, "true")
	},
}

// watchLoadBalancer (once the broker has joined its cluster) applies the
// load balancer overrides in force on the tuning cs started with, again
// after each change.
func watchLoadBalancer(dyn *dynconfig.Config, cs *cluster.Service) (stop func()) {
	base := cs.Tuning()
	set := map[string]string{} // the overrides in force; the watcher calls are serialized
	var stops []func()
	for name := range loadBalancerKeys {
		stops = append(stops, dyn.Watch(name, func(v string, on bool) {
			if on {
				set[name] = v
			} else {
				delete(set, name)
			}
			t := base
			for k, v := range set {
				loadBalancerKeys[k](v, &t)
			}
			cs.Retune(t)
		}))
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}

// converted runs the configuration file's converter on v and parses
// its result (v was checked by dynconfig; a failure gives the zero T).
func converted[T any](conv func([]string, string) (string, error), v string, parse func(string) (T, error)) T {
	var zero T
	s, err := conv([]string{v}, "")
	if err != nil {
		return zero
	}
	out, err := parse(s)
	if err != nil {
		return zero
	}
	return out
}

func parseDuration(s string) (time.Duration, error) { return time.ParseDuration(s) }

func parseFloat(s string) (float64, error) { return strconv.ParseFloat(s, 64) }

// watchBrokerClient applies the overrides of the broker's client
// identity (brokerClientAuthenticationPlugin, ...Parameters,
// brokerClientTlsEnabled, dynamic in Pulsar) to sec.Client over the
// file's values: the broker's next own connections use them
// (auth.BrokerClient). A plugin and parameters that do not go together
// (one updated before the other) are not applied until they do; the
// settings in force stay and a warning says why.
func watchBrokerClient(sec *auth.Security, watch func(string, func(string, bool))) {
	file := auth.BrokerClientSettings{Plugin: sec.Config.BrokerClientAuthenticationPlugin,
		Params: sec.Config.BrokerClientAuthenticationParameters, TLSEnabled: sec.Config.BrokerClientTLSEnabled}
	over := map[string]string{} // the watcher calls are serialized
	apply := func() {
		s := file
		if v, ok := over["brokerClientAuthenticationPlugin"]; ok {
			s.Plugin = v
		}
		if v, ok := over["brokerClientAuthenticationParameters"]; ok {
			s.Params = v
		}
		if v, ok := over["brokerClientTlsEnabled"]; ok {
			s.TLSEnabled = strings.EqualFold(v, "true")
		}
		if err := sec.Client.Set(s); err != nil {
			sec.Log.Warn("broker client credentials not changed", "err", err)
		}
	}
	for _, key := range []string{"brokerClientAuthenticationPlugin", "brokerClientAuthenticationParameters", "brokerClientTlsEnabled"} {
		watch(key, func(v string, set bool) {
			if set {
				over[key] = v
			} else {
				delete(over, key)
			}
			apply()
		})
	}
}
