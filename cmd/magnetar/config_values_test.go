package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/functions"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/proxy"
)

// The special values of every configuration key Magnetar reads from a
// Pulsar or BookKeeper file, as a table: what Pulsar gives 0, negative
// and empty values, what Magnetar does, and cases that check it. The
// table is the one source of docs/config-values.md (TestConfigValuesDoc
// regenerates it with MAGNETAR_UPDATE_DOCS=1), and every key any role's
// schema reads must have a row (TestConfigValuesCoverEveryKey).

// cvRow is one key.
type cvRow struct {
	section  string
	key      string
	pulsar   string // Pulsar's meaning of the key's special values
	magnetar string // what Magnetar does with them
	cases    []cvCase
}

// cvCase sets key=value alone in a file for each role that reads the key
// (or the roles named) and checks the outcome.
type cvCase struct {
	value string
	roles []string
	err   string                       // loading or building must fail with this text
	check func(t *testing.T, e *cvEnv) // else this must hold
}

// cvEnv is one role loaded from a file: its flags and the configurations
// built from them, as the command would build them.
type cvEnv struct {
	role string
	cmd  *cobra.Command
	res  cvResult
	sa   *standaloneFlags
	br   *brokerFlags
	px   *proxyFlags
	bk   *bookieFlags
	bcfg brokerconf.Config
	ml   mledger.Config
}

// proxyCfg builds the proxy's configuration (without a metadata store).
func (e *cvEnv) proxyCfg(t *testing.T) proxy.Config {
	t.Helper()
	cfg, closeStore, err := proxyConfig(*e.px, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	closeStore()
	return cfg
}

type cvResult struct {
	unknown []string
	origin  map[string]string // flag -> origin
}

var cvRoles = []string{"standalone", "broker", "proxy", "bookie", "functions-worker"}

// loadCV loads body as role's --config file and builds the role's
// configurations (brokerconf.Config and mledger.Config after EnsureDefaults
// and Validate, the proxy's Config); an error is any of them failing.
func loadCV(t *testing.T, role, body string) (*cvEnv, error) {
	t.Helper()
	name := "test.conf"
	if role == "functions-worker" {
		name = "test.yml"
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	e := &cvEnv{role: role}
	switch role {
	case "standalone":
		e.cmd, e.sa = standaloneCommand()
	case "broker":
		e.cmd, e.br = brokerCommand()
	case "proxy":
		e.cmd, e.px = proxyCommand()
	case "bookie":
		e.cmd, e.bk = bookieCommand()
	case "functions-worker":
		e.cmd = newFunctionsWorkerCmd()
	}
	if err := e.cmd.ParseFlags([]string{"--config", path}); err != nil {
		t.Fatal(err)
	}
	res, err := loadConfig(e.cmd, role, io.Discard)
	if err != nil {
		return nil, err
	}
	e.res = cvResult{unknown: res.Unknown, origin: map[string]string{}}
	for _, s := range res.Sources {
		e.res.origin[s.Flag] = s.Origin
	}
	log := slog.New(slog.DiscardHandler)
	var svc *serviceFlags
	switch {
	case e.sa != nil:
		if e.bcfg, err = e.sa.brokerConfig(log); err != nil {
			return nil, err
		}
		svc = &e.sa.svc
	case e.br != nil:
		if e.bcfg, err = e.br.brokerConfig(log); err != nil {
			return nil, err
		}
		svc = &e.br.svc
	}
	if svc != nil {
		e.bcfg.EnsureDefaults()
		if err := e.bcfg.Validate(); err != nil {
			return nil, err
		}
		e.ml = svc.storage.MLConfig()
		e.ml.EnsureDefaults()
		if err := e.ml.Validate(); err != nil {
			return nil, err
		}
		if _, err := svc.storage.OffloadDefaults(); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (e *cvEnv) flag(t *testing.T, name string) string {
	t.Helper()
	return flagValue(t, e.cmd, name)
}

// Checks.

// flagIs: the flag holds want.
func flagIs(name, want string) func(*testing.T, *cvEnv) {
	return func(t *testing.T, e *cvEnv) {
		t.Helper()
		if got := e.flag(t, name); got != want {
			t.Errorf("%s: --%s=%s, want %s", e.role, name, got, want)
		}
	}
}

// fromFile: the value was taken (some flag comes from the file under the
// key), the plain check of keys without special values.
func fromFile(key string) func(*testing.T, *cvEnv) {
	return func(t *testing.T, e *cvEnv) {
		t.Helper()
		for _, o := range e.res.origin {
			if strings.Contains(o, "("+key) {
				return
			}
		}
		t.Errorf("%s: no setting comes from %s", e.role, key)
	}
}

// accepted: the key is known (fixed at this value, or ignored) and sets
// nothing.
func accepted(key string) func(*testing.T, *cvEnv) {
	return func(t *testing.T, e *cvEnv) {
		t.Helper()
		if slices.Contains(e.res.unknown, key) {
			t.Errorf("%s: %s reported unknown", e.role, key)
		}
		for f, o := range e.res.origin {
			if strings.Contains(o, "("+key) {
				t.Errorf("%s: ignored key %s set --%s", e.role, key, f)
			}
		}
	}
}

// brokerCfg checks the built brokerconf.Config (standalone, broker).
func brokerCfg(desc string, ok func(c brokerconf.Config) bool) func(*testing.T, *cvEnv) {
	return func(t *testing.T, e *cvEnv) {
		t.Helper()
		if !ok(e.bcfg) {
			t.Errorf("%s: broker config: want %s, got %+v", e.role, desc, e.bcfg)
		}
	}
}

// mlCfg checks the built mledger.Config (standalone, broker).
func mlCfg(desc string, ok func(c mledger.Config) bool) func(*testing.T, *cvEnv) {
	return func(t *testing.T, e *cvEnv) {
		t.Helper()
		if !ok(e.ml) {
			t.Errorf("%s: managed-ledger config: want %s, got %+v", e.role, desc, e.ml)
		}
	}
}

// plain is the case of a key without special values: value is taken.
func plain(key, value string) cvCase { return cvCase{value: value, check: fromFile(key)} }

// refused is a case that must fail to load with err.
func refused(value, err string) cvCase { return cvCase{value: value, err: err} }

// TestConfigValues checks every case of every row.
func TestConfigValues(t *testing.T) {
	readers := keyReaders()
	for _, r := range configValueRows() {
		if len(r.cases) == 0 {
			t.Errorf("%s: no case", r.key)
		}
		for _, c := range r.cases {
			roles := c.roles
			if roles == nil {
				roles = readers[r.key]
			}
			for _, role := range roles {
				body := r.key + "=" + c.value + "\n"
				if role == "functions-worker" {
					body = r.key + ": " + c.value + "\n"
				}
				e, err := loadCV(t, role, body)
				if c.err != "" {
					// The loader's errors name the key and the line.
					loader := err != nil && strings.HasPrefix(err.Error(), "configuration:")
					if err == nil || !strings.Contains(err.Error(), c.err) || (loader && !strings.Contains(err.Error(), r.key)) {
						t.Errorf("%s %s=%s: %v, want an error with %q (naming the key)", role, r.key, c.value, err, c.err)
					}
					continue
				}
				if err != nil {
					t.Errorf("%s %s=%s: %v", role, r.key, c.value, err)
					continue
				}
				c.check(t, e)
			}
		}
	}
}

// keyReaders maps every key to the roles whose schema knows it.
func keyReaders() map[string][]string {
	out := map[string][]string{}
	for _, role := range cvRoles {
		for _, n := range schemas[role].Names() {
			if !slices.Contains(out[n], role) {
				out[n] = append(out[n], role)
			}
		}
	}
	return out
}

// TestConfigValuesCoverEveryKey: a key some schema reads without a row
// (or a row for a key no schema reads) fails.
func TestConfigValuesCoverEveryKey(t *testing.T) {
	if len(schemas) != len(cvRoles) {
		t.Fatalf("schemas of %d roles, the table knows %v", len(schemas), cvRoles)
	}
	rows := map[string]bool{}
	for _, r := range configValueRows() {
		if rows[r.key] {
			t.Errorf("%s: two rows", r.key)
		}
		rows[r.key] = true
	}
	readers := keyReaders()
	for k := range readers {
		if !rows[k] {
			t.Errorf("%s (read by %v) has no row in configValueRows: say what Pulsar gives its special values and what Magnetar does", k, readers[k])
		}
	}
	for k := range rows {
		if readers[k] == nil {
			t.Errorf("%s: a row, but no role reads it", k)
		}
	}
}

// TestConfigValuesDoc: docs/config-values.md is the table's rendering.
func TestConfigValuesDoc(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "config-values.md")
	want := renderConfigValues()
	if os.Getenv("MAGNETAR_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Fatalf("%s is not the rendering of configValueRows (%v); regenerate it: MAGNETAR_UPDATE_DOCS=1 go test -run TestConfigValuesDoc ./cmd/magnetar", path, err)
	}
}

var cvSections = []string{"Broker and standalone", "Managed ledger and tiered storage", "Load balancer (broker)",
	"Proxy", "Functions worker", "HTTP server", "Security (every role)", "BookKeeper (bookie)"}

func renderConfigValues() string {
	var b bytes.Buffer
	b.WriteString(`# Configuration values: Pulsar's special values in Magnetar

Magnetar reads Pulsar's configuration files (standalone.conf, broker.conf,
proxy.conf, functions_worker.yml) and BookKeeper's bookkeeper.conf under
their own key names. Where Pulsar gives 0, a negative value or an empty
value a meaning of its own (no limit, off, no minimum, use another key),
Magnetar gives it the same meaning; it never quietly replaces it with a
default. Where Pulsar gives a value no meaning (it refuses to start, or
the setting would admit nothing), Magnetar refuses it at start with an
error naming the key and the file line.

An empty value (key=) means what Pulsar's loader makes of it: the
setting's default, except for Pulsar's optional settings (the listener
ports), where empty turns the listener off. Booleans, paths, names and
URLs have no special values beyond that and are listed as "—".

This page is generated from the table in
cmd/magnetar/config_values_test.go, which also checks every row against
the configuration each role builds; a key a role reads without a row
fails that test. Regenerate it with
MAGNETAR_UPDATE_DOCS=1 go test -run TestConfigValuesDoc ./cmd/magnetar.
Roles: sa = standalone, br = broker, px = proxy, fw = functions worker,
bk = bookie.
`)
	readers := keyReaders()
	abbrev := map[string]string{"standalone": "sa", "broker": "br", "proxy": "px", "bookie": "bk", "functions-worker": "fw"}
	rows := configValueRows()
	for _, sec := range cvSections {
		fmt.Fprintf(&b, "\n## %s\n\n| Key | Read by | Pulsar | Magnetar |\n|---|---|---|---|\n", sec)
		var in []cvRow
		for _, r := range rows {
			if r.section == sec {
				in = append(in, r)
			}
		}
		sort.Slice(in, func(i, j int) bool { return in[i].key < in[j].key })
		for _, r := range in {
			var by []string
			for _, role := range readers[r.key] {
				by = append(by, abbrev[role])
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.key, strings.Join(by, " "), cell(r.pulsar), cell(r.magnetar))
		}
	}
	return b.String()
}

func cell(s string) string {
	if s == "" {
		return "—"
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

// none is a row of a key without special values.
func none(section, key, value string) cvRow {
	return cvRow{section: section, key: key, cases: []cvCase{plain(key, value)}}
}

// ignoredRow is a key Magnetar accepts and gives no effect.
func ignoredRow(section, key, value, why string) cvRow {
	return cvRow{section: section, key: key, magnetar: "accepted, no effect: " + why,
		cases: []cvCase{{value: value, check: accepted(key)}}}
}

const (
	sBroker  = "Broker and standalone"
	sML      = "Managed ledger and tiered storage"
	sLB      = "Load balancer (broker)"
	sProxy   = "Proxy"
	sWorker  = "Functions worker"
	sHTTP    = "HTTP server"
	sSec     = "Security (every role)"
	sBookie  = "BookKeeper (bookie)"
	smallest = "5e-324"
)

var (
	saBr = []string{"standalone", "broker"}
	br   = []string{"broker"}
	px   = []string{"proxy"}
)

// configValueRows is the table.
func configValueRows() []cvRow {
	rows := []cvRow{
		// Broker and standalone.
		{section: sBroker, key: "bindAddress", pulsar: "empty: the default 0.0.0.0 (all interfaces)", magnetar: "empty or 0.0.0.0: all interfaces",
			cases: []cvCase{{value: "0.0.0.0", roles: saBr, check: flagIs("listen", ":6650")}, {value: "0.0.0.0", roles: px, check: flagIs("listen", ":6650")}}},
		{section: sBroker, key: "brokerServicePort", pulsar: "empty: no plaintext binary listener (an optional setting); 0: an ephemeral port",
			magnetar: "the same (empty: off, only the TLS port if set); other roles: accepted, no effect",
			cases: []cvCase{{value: "", roles: saBr, check: brokerCfg(`ServiceAddr "-"`, func(c brokerconf.Config) bool { return c.ServiceAddr == "-" })},
				{value: "0", roles: saBr, check: flagIs("listen", ":0")}}},
		{section: sBroker, key: "webServicePort", pulsar: "empty: no plaintext HTTP listener (an optional setting)",
			magnetar: "the same; other roles: accepted, no effect",
			cases: []cvCase{{value: "", roles: saBr, check: brokerCfg(`HTTPAddr "-"`, func(c brokerconf.Config) bool { return c.HTTPAddr == "-" })},
				{value: "18080", roles: saBr, check: flagIs("http", ":18080")}}},
		{section: sBroker, key: "advertisedAddress", pulsar: "empty: the host's canonical name",
			magnetar: "broker, standalone: empty keeps Magnetar's default `localhost` (set it on a real cluster); bookie: the listening host",
			cases:    []cvCase{plain("advertisedAddress", "mq.example")}},
		{section: sBroker, key: "clusterName", pulsar: "required", magnetar: "empty: Magnetar's default (standalone, magnetar); proxy: accepted, no effect",
			cases: []cvCase{{value: "c9", roles: saBr, check: flagIs("cluster-name", "c9")}, {value: "c9", roles: px, check: accepted("clusterName")}}},
		{section: sBroker, key: "configurationMetadataStoreUrl", pulsar: "empty: the local metadata store (metadataStoreUrl)", magnetar: "the same; proxy: accepted, no effect",
			cases: []cvCase{{value: "zk:zk1:2181/cfg", roles: []string{"standalone", "broker", "functions-worker"}, check: flagIs("configuration-metadata-url", "zk://zk1:2181/cfg")},
				{value: "zk:zk1:2181/cfg", roles: px, check: accepted("configurationMetadataStoreUrl")}}},
		{section: sBroker, key: "configurationStoreServers", pulsar: "deprecated; empty: the local metadata store", magnetar: "the same (used when configurationMetadataStoreUrl is empty); proxy: no effect",
			cases: []cvCase{{value: "zk1:2181", roles: []string{"standalone", "broker", "functions-worker"}, check: flagIs("configuration-metadata-url", "zk://zk1:2181")},
				{value: "zk1:2181", roles: px, check: accepted("configurationStoreServers")}}},
		{section: sBroker, key: "maxMessageSize", pulsar: "no special value; at most 2^31-1 less the 10 KiB frame padding",
			magnetar: "0 or negative (admits no message) and values above Pulsar's maximum are refused",
			cases:    []cvCase{refused("0", "must be positive"), refused("2147483647", "out of range"), plain("maxMessageSize", "1048576")}},
		none(sBroker, "brokerDeduplicationEnabled", "true"),
		cvRow{section: sBroker, key: "brokerDeduplicationEntriesInterval", pulsar: "0 or negative: a snapshot after every stored entry (the counter is compared with >=)",
			magnetar: "the same (kept as given)",
			cases: []cvCase{{value: "0", check: flagIs("dedup-entries-interval", "0")}, {value: "-3", check: flagIs("dedup-entries-interval", "-3")},
				plain("brokerDeduplicationEntriesInterval", "500")}},
		cvRow{section: sBroker, key: "brokerDeduplicationMaxNumberOfProducers", pulsar: "0 or negative: a snapshot keeps no producer (it keeps producers while it holds fewer than the maximum)",
			magnetar: "the same (the first producers by name are kept; Pulsar keeps the first its hash map yields)",
			cases: []cvCase{{value: "0", check: flagIs("dedup-max-producers", "0")}, {value: "-1", check: flagIs("dedup-max-producers", "-1")},
				plain("brokerDeduplicationMaxNumberOfProducers", "50")}},
		cvRow{section: sBroker, key: "brokerDeduplicationSnapshotIntervalSeconds", pulsar: "0 or negative: no timed deduplication snapshots",
			magnetar: "the same (the applied deduplicationSnapshotInterval of a topic without a namespace or topic value)",
			cases: []cvCase{{value: "0", check: flagIs("dedup-snapshot-interval", "0")}, {value: "-1", check: flagIs("dedup-snapshot-interval", "-1")},
				plain("brokerDeduplicationSnapshotIntervalSeconds", "60")}},
		none(sBroker, "allowAutoTopicCreation", "false"),
		{section: sBroker, key: "allowAutoTopicCreationType", pulsar: "no special value (non-partitioned, Pulsar's default, or partitioned: defaultNumPartitions partitions where no namespace autoTopicCreation policy applies)",
			magnetar: "the same (any case); another value is refused",
			cases: []cvCase{{value: "partitioned", roles: saBr, check: brokerCfg("partitioned auto-creation", func(c brokerconf.Config) bool { return c.Delivery.AutoTopicPartitioned })},
				{value: "non-partitioned", roles: saBr, check: brokerCfg("non-partitioned auto-creation", func(c brokerconf.Config) bool { return !c.Delivery.AutoTopicPartitioned })},
				refused("both", "want partitioned or non-partitioned")}},
		{section: sBroker, key: "defaultNumPartitions", pulsar: "no special value; less than 1 fails every partitioned auto-creation",
			magnetar: "less than 1 is refused",
			cases:    []cvCase{refused("0", "must be positive"), {value: "3", roles: saBr, check: brokerCfg("3 partitions", func(c brokerconf.Config) bool { return c.Delivery.DefaultNumPartitions == 3 })}}},
		none(sBroker, "allowAutoSubscriptionCreation", "false"),
		none(sBroker, "delayedDeliveryEnabled", "false"),
		{section: sBroker, key: "maxSubscriptionsPerTopic", pulsar: "0 or negative: no limit", magnetar: "the same",
			cases: []cvCase{{value: "-1", check: flagIs("max-subscriptions-per-topic", "0")}, plain("maxSubscriptionsPerTopic", "5")}},
		{section: sBroker, key: "maxTopicsPerNamespace", pulsar: "0 or negative: no limit", magnetar: "the same",
			cases: []cvCase{{value: "-1", check: flagIs("max-topics-per-namespace", "0")}, plain("maxTopicsPerNamespace", "50")}},
		{section: sBroker, key: "delayedDeliveryTickTimeMillis", pulsar: "0: no tick (a message goes when due)", magnetar: "the same; negative is refused",
			cases: []cvCase{plain("delayedDeliveryTickTimeMillis", "0"), refused("-1", "must not be negative")}},
		{section: sBroker, key: "delayedDeliveryMaxDelayInMillis", pulsar: "0 or negative: no maximum delay", magnetar: "the same",
			cases: []cvCase{{value: "-1", check: flagIs("delayed-delivery-max-delay-ms", "0")}, plain("delayedDeliveryMaxDelayInMillis", "60000")}},
		{section: sBroker, key: "brokerServiceCompactionThresholdInBytes", pulsar: "0 or negative: no threshold compaction", magnetar: "the same",
			cases: []cvCase{{value: "-1", check: flagIs("compaction-threshold", "0")}, plain("brokerServiceCompactionThresholdInBytes", "1048576")}},
		{section: sBroker, key: "subscriptionKeySharedEnable", pulsar: "no special value (false: a Key_Shared subscribe is refused)", magnetar: "the same",
			cases: []cvCase{{value: "false", roles: saBr, check: brokerCfg("Key_Shared off", func(c brokerconf.Config) bool { return c.Delivery.KeySharedDisabled })},
				{value: "true", roles: saBr, check: brokerCfg("Key_Shared on", func(c brokerconf.Config) bool { return !c.Delivery.KeySharedDisabled })}}},
		{section: sBroker, key: "subscriptionTypesEnabled", pulsar: "empty: the default, every type; names that are no type are ignored; naming no valid type: no subscribe is admitted", magnetar: "the same",
			cases: []cvCase{{value: "Exclusive,Bogus", roles: saBr, check: brokerCfg("Exclusive only", func(c brokerconf.Config) bool {
				return c.Delivery.SubscriptionTypesOff == policy.AllSubscriptionTypes&^1
			})},
				{value: "Bogus", roles: saBr, check: brokerCfg("no type", func(c brokerconf.Config) bool { return c.Delivery.SubscriptionTypesOff == policy.AllSubscriptionTypes })}}},
		{section: sBroker, key: "keepAliveIntervalSeconds", pulsar: "0 or negative: no keep-alive (no pings, no idle close)",
			magnetar: "the same (broker and proxy)",
			cases: []cvCase{{value: "0", roles: saBr, check: brokerCfg("no keep-alive", func(c brokerconf.Config) bool { return c.KeepAliveInterval < 0 && c.IdleTimeout == 0 })},
				{value: "-5", roles: saBr, check: brokerCfg("no keep-alive", func(c brokerconf.Config) bool { return c.KeepAliveInterval < 0 })},
				{value: "0", roles: px, check: func(t *testing.T, e *cvEnv) {
					if ka := e.proxyCfg(t).KeepAlive; ka >= 0 {
						t.Errorf("proxy keep-alive %v, want off", ka)
					}
				}},
				{value: "7", check: flagIs("keep-alive-interval", "7s")}}},
		{section: sBroker, key: "dispatcherMaxReadBatchSize", pulsar: "no special value (0 would read nothing)", magnetar: "0 or negative is refused",
			cases: []cvCase{refused("0", "must be positive"), plain("dispatcherMaxReadBatchSize", "42")}},
		{section: sBroker, key: "maxUnackedMessagesPerConsumer", pulsar: "0: no limit", magnetar: "0 or negative: no limit",
			cases: []cvCase{{value: "0", check: brokerCfg("unlimited", func(c brokerconf.Config) bool { return c.MaxUnackedPerConsumer < 0 })}}},
		{section: sBroker, key: "maxUnackedMessagesPerSubscription", pulsar: "0: no limit", magnetar: "0 or negative: no limit",
			cases: []cvCase{{value: "0", check: brokerCfg("unlimited", func(c brokerconf.Config) bool { return c.MaxUnackedPerSubscription < 0 })}}},
		{section: sBroker, key: "maxNumPartitionsPerPartitionedTopic", pulsar: "0 or negative: no limit (the default)",
			magnetar: "0 or negative: no limit (unset, Magnetar's default is 10,000; docs/limits.md)",
			cases: []cvCase{{value: "0", check: brokerCfg("unlimited", func(c brokerconf.Config) bool { return c.MaxPartitionsPerTopic < 0 })},
				{value: "-1", check: brokerCfg("unlimited", func(c brokerconf.Config) bool { return c.MaxPartitionsPerTopic < 0 })}}},
		{section: sBroker, key: "brokerEntryMetadataInterceptors", pulsar: "empty: none", magnetar: "the same",
			cases: []cvCase{plain("brokerEntryMetadataInterceptors", "org.apache.pulsar.common.intercept.AppendIndexMetadataInterceptor")}},
		none(sBroker, "exposingBrokerEntryMetadataToClientEnabled", "true"),
	}
	for _, k := range []struct{ key, flag string }{
		{"maxPublishRatePerTopicInMessages", "max-publish-rate-msgs"}, {"maxPublishRatePerTopicInBytes", "max-publish-rate-bytes"},
		{"dispatchThrottlingRatePerTopicInMsg", "dispatch-rate-topic-msgs"}, {"dispatchThrottlingRatePerTopicInByte", "dispatch-rate-topic-bytes"},
		{"dispatchThrottlingRatePerSubscriptionInMsg", "dispatch-rate-subscription-msgs"}, {"dispatchThrottlingRatePerSubscriptionInByte", "dispatch-rate-subscription-bytes"},
		{"dispatchThrottlingRatePerReplicatorInMsg", "dispatch-rate-replicator-msgs"}, {"dispatchThrottlingRatePerReplicatorInByte", "dispatch-rate-replicator-bytes"},
		{"subscribeThrottlingRatePerConsumer", "subscribe-rate-per-consumer"},
	} {
		rows = append(rows, cvRow{section: sBroker, key: k.key, pulsar: "0 or negative: no limit (the limiter tests > 0)", magnetar: "the same",
			cases: []cvCase{{value: "0", check: flagIs(k.flag, "0")}, {value: "-1", check: flagIs(k.flag, "0")}, {value: "5", check: flagIs(k.flag, "5")}}})
	}
	rows = append(rows,
		cvRow{section: sBroker, key: "subscribeRatePeriodPerConsumerInSecond", pulsar: "at least 1 (minValue)", magnetar: "0 or negative is refused",
			cases: []cvCase{refused("0", "must be positive"), plain("subscribeRatePeriodPerConsumerInSecond", "9")}},
		none(sBroker, "brokerDeleteInactiveTopicsEnabled", "false"),
		cvRow{section: sBroker, key: "brokerDeleteInactiveTopicsFrequencySeconds", pulsar: "at least 1 (minValue)", magnetar: "0 or negative is refused",
			cases: []cvCase{refused("0", "at least 1"), {value: "30", check: flagIs("delete-inactive-topics-frequency", "30s")}}},
		cvRow{section: sBroker, key: "brokerDeleteInactiveTopicsMaxInactiveDurationSeconds",
			pulsar:   "empty: brokerDeleteInactiveTopicsFrequencySeconds; 0 (or negative): no minimum inactivity, a topic found inactive is deleted",
			magnetar: "the same",
			cases: []cvCase{{value: "0", check: brokerCfg("no minimum inactivity", func(c brokerconf.Config) bool { return c.DeleteInactiveTopicsMaxInactiveDuration < 0 })},
				{value: "", check: brokerCfg("the frequency", func(c brokerconf.Config) bool { return c.DeleteInactiveTopicsMaxInactiveDuration == time.Minute })},
				{value: "90", check: brokerCfg("90 s", func(c brokerconf.Config) bool { return c.DeleteInactiveTopicsMaxInactiveDuration == 90*time.Second })}}},
		none(sBroker, "brokerDeleteInactiveTopicsMode", "delete_when_subscriptions_caught_up"),
		cvRow{section: sBroker, key: "subscriptionExpirationTimeMinutes", pulsar: "0 (or negative): subscriptions never expire", magnetar: "the same",
			cases: []cvCase{{value: "0", check: brokerCfg("never", func(c brokerconf.Config) bool { return c.SubscriptionExpirationTimeMinutes == 0 })},
				{value: "-3", check: brokerCfg("never", func(c brokerconf.Config) bool { return c.SubscriptionExpirationTimeMinutes == 0 })}}},
		cvRow{section: sBroker, key: "subscriptionExpiryCheckIntervalInMinutes", pulsar: "no special value (a period of 0 fails at start)", magnetar: "0 or negative is refused",
			cases: []cvCase{refused("0", "at least 1"), {value: "2", check: flagIs("subscription-expiry-check-interval", "2m0s")}}},
		cvRow{section: sBroker, key: "statsUpdateFrequencyInSecs", pulsar: "at least 1 (minValue)", magnetar: "0 or negative is refused",
			cases: []cvCase{refused("0", "at least 1"), {value: "60", check: flagIs("stats-interval", "1m0s")}}},
		none(sBroker, "subscriptionKeySharedUseConsistentHashing", "true"),
		cvRow{section: sBroker, key: "schemaCompatibilityStrategy", pulsar: "UNDEFINED: FULL", magnetar: "the same",
			cases: []cvCase{{value: "UNDEFINED", check: flagIs("schema-compatibility-strategy", "UNDEFINED")},
				plain("schemaCompatibilityStrategy", "BACKWARD")}},
		none(sBroker, "isSchemaValidationEnforced", "true"),
		none(sBroker, "topicCompactionRetainNullKey", "true"),
		cvRow{section: sBroker, key: "statusFilePath", pulsar: "empty: no status file, /status.html always answers 404", magnetar: "the same",
			cases: []cvCase{{value: "", check: flagIs("status-file", "")}, plain("statusFilePath", "/var/run/pulsar/status")}},
		cvRow{section: sBroker, key: "consoleEnabled", magnetar: "Magnetar's own key: the web console", cases: []cvCase{plain("consoleEnabled", "false")}},
		cvRow{section: sBroker, key: "consoleSampleIntervalSeconds", magnetar: "Magnetar's own key; 0 or negative is refused",
			cases: []cvCase{refused("0", "at least 1"), plain("consoleSampleIntervalSeconds", "2")}},
		none(sBroker, "exposeTopicLevelMetricsInPrometheus", "false"),
		cvRow{section: sBroker, key: "topicUnloadIdleSeconds", magnetar: "Magnetar's own key; 0: never unload idle topics",
			cases: []cvCase{{value: "0", check: brokerCfg("never", func(c brokerconf.Config) bool { return c.IdleTopicUnloadTime == 0 })}}},
		none(sBroker, "transactionCoordinatorEnabled", "true"),
		cvRow{section: sBroker, key: "clientLibraryVersionCheckEnabled", magnetar: "the same check as Pulsar's (docs/dynamic-config.md)",
			cases: []cvCase{{value: "true", check: flagIs("client-library-version-check", "true")}, {value: "false", check: flagIs("client-library-version-check", "false")}}},
		cvRow{section: sBroker, key: "maxActiveTransactionsPerCoordinator", pulsar: "0: no limit", magnetar: "0: no limit; negative (no documented meaning) is refused",
			cases: []cvCase{{value: "0", check: flagIs("max-active-transactions-per-coordinator", "0")},
				refused("-1", "must not be negative")}},
		cvRow{section: sBroker, key: "metadataStoreUrl", pulsar: "empty: zookeeperServers", magnetar: "broker, proxy, functions worker: the same; standalone: accepted, no effect (embedded store)",
			cases: []cvCase{{value: "zk:zk1:2181/m", roles: []string{"broker", "proxy", "functions-worker"}, check: flagIs("metadata-url", "zk://zk1:2181/m")},
				{value: "zk:zk1:2181/m", roles: []string{"standalone"}, check: accepted("metadataStoreUrl")}}},
		cvRow{section: sBroker, key: "zookeeperServers", pulsar: "deprecated; used when metadataStoreUrl is empty", magnetar: "the same; standalone: no effect",
			cases: []cvCase{{value: "zk1:2181", roles: []string{"broker", "proxy"}, check: flagIs("metadata-url", "zk://zk1:2181")}}},
		cvRow{section: sBroker, key: "metadataStoreSessionTimeoutMillis", pulsar: "no special value; used unless zooKeeperSessionTimeoutMillis > 0",
			magnetar: "0 or negative is refused; standalone: no effect",
			cases: []cvCase{{value: "4000", roles: []string{"broker", "proxy", "functions-worker"}, check: flagIs("zk-session-timeout", "4s")},
				{value: "0", roles: []string{"broker", "proxy", "functions-worker"}, err: "positive"}}},
		cvRow{section: sBroker, key: "zooKeeperSessionTimeoutMillis", pulsar: "deprecated; > 0 wins over metadataStoreSessionTimeoutMillis; its default -1 (or 0) defers to it",
			magnetar: "the same; standalone: no effect",
			cases: []cvCase{{value: "-1", roles: []string{"broker", "proxy"}, check: flagIs("zk-session-timeout", "10s")},
				{value: "0", roles: []string{"broker", "proxy"}, check: flagIs("zk-session-timeout", "10s")},
				{value: "6000", roles: []string{"broker", "proxy"}, check: flagIs("zk-session-timeout", "6s")}}},
		cvRow{section: sBroker, key: "managedLedgerDefaultEnsembleSize", pulsar: "at least 1 (minValue)", magnetar: "broker: the same (E >= Qw >= Qa >= 1); standalone: fixed at 1",
			cases: []cvCase{{value: "3", roles: br, check: flagIs("ensemble", "3")}, {value: "1", roles: []string{"standalone"}, check: accepted("managedLedgerDefaultEnsembleSize")}}},
		cvRow{section: sBroker, key: "managedLedgerDefaultWriteQuorum", pulsar: "at least 1 (minValue)", magnetar: "broker: the same; standalone: fixed at 1",
			cases: []cvCase{{value: "2", roles: br, check: flagIs("write-quorum", "2")}, {value: "1", roles: []string{"standalone"}, check: accepted("managedLedgerDefaultWriteQuorum")}}},
		cvRow{section: sBroker, key: "managedLedgerDefaultAckQuorum", pulsar: "at least 1 (minValue)", magnetar: "broker: the same; standalone: fixed at 1",
			cases: []cvCase{{value: "2", roles: br, check: flagIs("ack-quorum", "2")}, {value: "1", roles: []string{"standalone"}, check: accepted("managedLedgerDefaultAckQuorum")}}},
	)
	for _, k := range []struct{ key, why string }{
		{"acknowledgmentAtBatchIndexLevelEnabled", "batch-index acknowledgements are always honoured"},
		{"managedLedgerDefaultMarkDeleteRateLimit", "mark-deletes are batched by the cursor"},
		{"loadBalancerEnabled", "a cluster's load manager always runs"},
	} {
		rows = append(rows, ignoredRow(sBroker, k.key, "true", k.why))
	}
	rows = append(rows,
		cvRow{section: sBroker, key: "enablePackagesManagement", pulsar: "false (its default): the package routes answer 503",
			magnetar: "the same; Magnetar's default is true",
			cases:    []cvCase{{value: "false", check: flagIs("packages-management", "false")}, {value: "true", check: flagIs("packages-management", "true")}}},
		cvRow{section: sBroker, key: "packagesReplicas", pulsar: "the ensemble, write and ack quorum of package logs; 0 would store nothing",
			magnetar: "the same for package ledgers; 0 or negative is refused",
			cases:    []cvCase{refused("0", "must be positive"), plain("packagesReplicas", "2")}},
		ignoredRow(sBroker, "packagesManagementStorageProvider", "org.apache.pulsar.packages.management.storage.bookkeeper.BookKeeperPackagesStorageProvider",
			"package contents are always in ledgers on the bookies"),
		ignoredRow(sBroker, "packagesManagementLedgerRootPath", "/ledgers", "package ledgers are the cluster's ledgers"),
	)
	rows = append(rows, mlRows()...)
	rows = append(rows, lbRows()...)
	rows = append(rows, proxyRows()...)
	rows = append(rows, workerRows()...)
	rows = append(rows, httpRows()...)
	rows = append(rows, securityRows()...)
	rows = append(rows, bookieRows()...)
	return rows
}

func mlRows() []cvRow {
	rows := []cvRow{
		{section: sML, key: "managedLedgerMaxEntriesPerLedger", pulsar: "0 or negative: every ledger is full, so one rolls after each entry (once past the minimum rollover time)",
			magnetar: "the same",
			cases: []cvCase{{value: "0", check: mlCfg("roll after each entry", func(c mledger.Config) bool { return c.MaxEntriesPerLedger == 1 })},
				{value: "1000", check: mlCfg("1000", func(c mledger.Config) bool { return c.MaxEntriesPerLedger == 1000 })}}},
		{section: sML, key: "managedLedgerMinLedgerRolloverTimeMinutes", pulsar: "0 or negative: no minimum (a ledger rolls as soon as it is full)",
			magnetar: "the same (no 10-minute default in its place)",
			cases: []cvCase{{value: "0", check: mlCfg("no minimum", func(c mledger.Config) bool { return c.MinLedgerRolloverTime < 0 })},
				{value: "-1", check: mlCfg("no minimum", func(c mledger.Config) bool { return c.MinLedgerRolloverTime < 0 })},
				{value: "2", check: mlCfg("2 min", func(c mledger.Config) bool { return c.MinLedgerRolloverTime == 2*time.Minute })}}},
		{section: sML, key: "managedLedgerMaxLedgerRolloverTimeMinutes", pulsar: "0 or negative: every non-empty ledger is past its maximum age, so one rolls after each entry (once past the minimum)",
			magnetar: "the same",
			cases: []cvCase{{value: "0", check: mlCfg("always past", func(c mledger.Config) bool { return c.MaxLedgerRolloverTime < 0 })},
				{value: "90", check: mlCfg("90 min", func(c mledger.Config) bool { return c.MaxLedgerRolloverTime == 90*time.Minute })}}},
		{section: sML, key: "retentionCheckIntervalInSeconds", pulsar: "no special value (a period of 0 fails at start)", magnetar: "0 or negative is refused",
			cases: []cvCase{refused("0", "at least 1"), {value: "30", check: mlCfg("30 s", func(c mledger.Config) bool { return c.TrimInterval == 30*time.Second })}}},
		{section: sML, key: "managedLedgerOffloadDriver", pulsar: "empty: no offloader", magnetar: "the same; a driver without its settings is refused at start",
			cases: []cvCase{{value: "", check: flagIs("offload-driver", "")}, refused("aws-s3", "Region or ServiceEndpoint")}},
		{section: sML, key: "s3ManagedLedgerOffloadCredentialId", pulsar: "empty: the default credential chain", magnetar: "empty: AWS_ACCESS_KEY_ID",
			cases: []cvCase{plain("s3ManagedLedgerOffloadCredentialId", "id")}},
		{section: sML, key: "s3ManagedLedgerOffloadCredentialSecret", pulsar: "empty: the default credential chain", magnetar: "empty: AWS_SECRET_ACCESS_KEY",
			cases: []cvCase{plain("s3ManagedLedgerOffloadCredentialSecret", "secret")}},
		{section: sML, key: "managedLedgerOffloadThresholdInBytes", pulsar: "negative: no automatic offload; 0: offload every closed ledger", magnetar: "the same",
			cases: []cvCase{{value: "-5", check: flagIs("offload-threshold-bytes", "-1")}, {value: "0", check: flagIs("offload-threshold-bytes", "0")}}},
		{section: sML, key: "managedLedgerOffloadAutoTriggerSizeThresholdBytes", pulsar: "negative (the default -1): no automatic offload; 0: offload every closed ledger", magnetar: "the same",
			cases: []cvCase{{value: "-5", check: flagIs("offload-threshold-bytes", "-1")}, {value: "0", check: flagIs("offload-threshold-bytes", "0")}}},
		{section: sML, key: "managedLedgerOffloadThresholdInSeconds", pulsar: "negative (the default -1): no time-based offload; 0: offload a ledger when it closes", magnetar: "the same",
			cases: []cvCase{{value: "-9", check: flagIs("offload-threshold-seconds", "-1")}, {value: "0", check: flagIs("offload-threshold-seconds", "0")}}},
		{section: sML, key: "managedLedgerOffloadDeletionLagMs", pulsar: "0 or negative: the bookie copy is deleted at the first check after the offload",
			magnetar: "the same (the --offload-deletion-lag-ms flag's own negative, never, is not reachable from the file)",
			cases:    []cvCase{{value: "-1", check: flagIs("offload-deletion-lag-ms", "0")}, {value: "0", check: flagIs("offload-deletion-lag-ms", "0")}}},
		{section: sML, key: "managedLedgerDataReadPriority", pulsar: "tiered-storage-first (default) or bookkeeper-first", magnetar: "the same; another value is refused",
			cases: []cvCase{plain("managedLedgerDataReadPriority", "bookkeeper-first"), refused("fastest", "tiered-storage-first")}},
		{section: sML, key: "fileSystemURI", pulsar: "empty: from fileSystemProfilePath", magnetar: "the same", cases: []cvCase{plain("fileSystemURI", "file:///tmp/o")}},
		{section: sML, key: "fileSystemProfilePath", magnetar: "a profile that cannot be read is refused at start", cases: []cvCase{refused("/nonexistent/fs.xml", "no such file")}},
		{section: sML, key: "offloadAllowedFileSystemRoots", magnetar: "Magnetar's own key: empty allows only the broker's own directory", cases: []cvCase{plain("offloadAllowedFileSystemRoots", "/data/offload")}},
		{section: sML, key: "offloadAllowedServiceEndpoints", magnetar: "Magnetar's own key: empty allows only the broker's own endpoint", cases: []cvCase{plain("offloadAllowedServiceEndpoints", "http://s3.example")}},
	}
	for _, k := range [][2]string{{"s3ManagedLedgerOffloadBucket", "b1"}, {"managedLedgerOffloadBucket", "b1"}, {"s3ManagedLedgerOffloadRegion", "r1"},
		{"managedLedgerOffloadRegion", "r1"}, {"s3ManagedLedgerOffloadServiceEndpoint", "http://s3.example"}, {"managedLedgerOffloadServiceEndpoint", "http://s3.example"}} {
		rows = append(rows, cvRow{section: sML, key: k[0], pulsar: "empty: the driver's default", magnetar: "the same (the s3-prefixed key first)", cases: []cvCase{plain(k[0], k[1])}})
	}
	for _, k := range []string{"s3ManagedLedgerOffloadMaxBlockSizeInBytes", "managedLedgerOffloadMaxBlockSizeInBytes"} {
		rows = append(rows, cvRow{section: sML, key: k, pulsar: "no special value; at least 5 MiB", magnetar: "the same: 0 and below 5 MiB are refused",
			cases: []cvCase{refused("0", "positive integer"), plain(k, "67108864")}})
	}
	for _, k := range []string{"s3ManagedLedgerOffloadReadBufferSizeInBytes", "managedLedgerOffloadReadBufferSizeInBytes"} {
		rows = append(rows, none(sML, k, "1048576"))
	}
	return rows
}

func lbRows() []cvRow {
	return []cvRow{
		{section: sLB, key: "loadBalancerSheddingIntervalMinutes", pulsar: "no documented special value", magnetar: "0 or negative is refused",
			cases: []cvCase{refused("0", "at least 1"), {value: "3", check: flagIs("load-shedding-interval", "3m0s")}}},
		{section: sLB, key: "loadBalancerSheddingGracePeriodMinutes", pulsar: "0: no grace period", magnetar: "the same",
			cases: []cvCase{{value: "0", check: flagIs("load-shedding-grace", "-1ns")}, {value: "30", check: flagIs("load-shedding-grace", "30m0s")}}},
		{section: sLB, key: "loadBalancerNamespaceBundleMaxTopics", pulsar: "no guard: 0 (or negative) splits every bundle of two or more topics", magnetar: "the same",
			cases: []cvCase{{value: "0", check: flagIs("bundle-split-max-topics", "-1")}, {value: "500", check: flagIs("bundle-split-max-topics", "500")}}},
		{section: sLB, key: "loadBalancerNamespaceBundleMaxSessions", pulsar: "0 or negative: producers+consumers do not count (the only guarded threshold)", magnetar: "the same",
			cases: []cvCase{{value: "0", check: flagIs("bundle-split-max-sessions", fmt.Sprint(math.MaxInt32))}, {value: "-1", check: flagIs("bundle-split-max-sessions", fmt.Sprint(math.MaxInt32))}}},
		{section: sLB, key: "loadBalancerNamespaceBundleMaxMsgRate", pulsar: "no guard: 0 splits every bundle (of two or more topics) with any traffic, negative every bundle", magnetar: "the same",
			cases: []cvCase{{value: "0", check: flagIs("bundle-split-max-msg-rate", smallest)}, {value: "-1", check: flagIs("bundle-split-max-msg-rate", "-1")}}},
		{section: sLB, key: "loadBalancerNamespaceBundleMaxBandwidthMbytes", pulsar: "no guard: 0 splits every bundle (of two or more topics) with any traffic, negative every bundle", magnetar: "the same",
			cases: []cvCase{{value: "0", check: flagIs("bundle-split-max-bytes-rate", smallest)}, {value: "2", check: flagIs("bundle-split-max-bytes-rate", "2.097152e+06")}}},
		none(sLB, "loadBalancerAutoBundleSplitEnabled", "false"),
		none(sLB, "failureDomainsEnabled", "true"),
	}
}

func proxyRows() []cvRow {
	return []cvRow{
		{section: sProxy, key: "servicePort", pulsar: "empty: no plaintext binary listener (an optional setting)", magnetar: "the same",
			cases: []cvCase{{value: "", check: flagIs("listen", "")}, {value: "16650", check: flagIs("listen", ":16650")}}},
		{section: sProxy, key: "servicePortTls", pulsar: "empty (default): no TLS binary listener", magnetar: "the same", cases: []cvCase{plain("servicePortTls", "6651")}},
		{section: sProxy, key: "maxConcurrentLookupRequests", pulsar: "no special value (0 refuses every lookup)", magnetar: "0 or negative is refused",
			cases: []cvCase{refused("0", "must be positive"), plain("maxConcurrentLookupRequests", "7")}},
		{section: sProxy, key: "maxConcurrentInboundConnections", pulsar: "no special value (0 refuses every connection)", magnetar: "0 or negative is refused",
			cases: []cvCase{refused("0", "must be positive"), plain("maxConcurrentInboundConnections", "9")}},
		none(sProxy, "brokerServiceURL", "pulsar://b1:6650"),
		none(sProxy, "brokerServiceURLTLS", "pulsar+ssl://b1:6651"),
		none(sProxy, "brokerWebServiceURL", "http://b1:8080"),
		none(sProxy, "brokerWebServiceURLTLS", "https://b1:8443"),
		none(sProxy, "forwardAuthorizationCredentials", "true"),
		none(sProxy, "tlsEnabledWithBroker", "true"),
		ignoredRow(sProxy, "proxyLogLevel", "1", "logging is set with --log-level"),
		ignoredRow(sProxy, "brokerProxyAllowedHostNames", "*", "the proxy relays only to brokers it looked up"),
		ignoredRow(sProxy, "brokerProxyAllowedIPAddresses", "*", "the proxy relays only to brokers it looked up"),
		ignoredRow(sProxy, "brokerProxyAllowedTargetPorts", "*", "the proxy relays only to brokers it looked up"),
		ignoredRow(sProxy, "checkActiveBrokers", "true", "the proxy relays only to brokers it looked up"),
	}
}

func workerRows() []cvRow {
	rows := []cvRow{
		{section: sWorker, key: "workerPort", pulsar: "empty (null): no plaintext REST listener", magnetar: "the same",
			cases: []cvCase{{value: "", check: flagIs("http", "")}, {value: "7750", check: flagIs("http", "127.0.0.1:7750")}}},
		{section: sWorker, key: "workerPortTls", pulsar: "empty (null, the default): no TLS REST listener", magnetar: "the same",
			cases: []cvCase{{value: "", check: flagIs("https", "")}, {value: "7751", check: flagIs("https", "127.0.0.1:7751")}}},
		{section: sWorker, key: "workerHostname", pulsar: "empty: the host's name", magnetar: "empty: Magnetar's default (localhost)", cases: []cvCase{plain("workerHostname", "w1.example")}},
		none(sWorker, "workerId", "w9"),
		none(sWorker, "pulsarServiceUrl", "pulsar://b1:6650"),
		none(sWorker, "pulsarFunctionsCluster", "c9"),
		none(sWorker, "brokerClientAuthenticationEnabled", "true"),
		{section: sWorker, key: "functionsDirectory", pulsar: "empty: the default directory", magnetar: "the same", cases: []cvCase{plain("functionsDirectory", "/var/fn")}},
		{section: sWorker, key: "connectorsDirectory", pulsar: "empty: the default directory", magnetar: "the same", cases: []cvCase{plain("connectorsDirectory", "/var/conn")}},
		{section: sWorker, key: "additionalEnabledFunctionsUrlPatterns", pulsar: "empty: only the package service and files the worker holds", magnetar: "the same", cases: []cvCase{plain("additionalEnabledFunctionsUrlPatterns", "https://pkgs.example/.*")}},
		{section: sWorker, key: "additionalEnabledConnectorUrlPatterns", pulsar: "empty: only the package service and files the worker holds", magnetar: "the same", cases: []cvCase{plain("additionalEnabledConnectorUrlPatterns", "https://pkgs.example/.*")}},
		{section: sWorker, key: "functionsInstanceUser", magnetar: "Magnetar's own key: empty, a root worker runs instances as nobody", cases: []cvCase{plain("functionsInstanceUser", "fn")}},
		{section: sWorker, key: "connectorsAllowedDirectories", magnetar: "Magnetar's own key: empty allows none", cases: []cvCase{plain("connectorsAllowedDirectories", "/data/in")}},
		{section: sWorker, key: "connectorsAllowedListenAddresses", magnetar: "Magnetar's own key: empty is the default, loopback only (127.0.0.1:*,[::1]:*)",
			cases: []cvCase{{value: "", check: flagIs("connectors-allowed-listen-addresses", "[127.0.0.1:*,[::1]:*]")}, plain("connectorsAllowedListenAddresses", "127.0.0.1:9000")}},
		{section: sWorker, key: "functionAuthProviderClassName", pulsar: "empty: no provider, instances get the worker's brokerClient credentials",
			magnetar: "empty is the default, ClearTextFunctionTokenAuthProvider (the submitter's token), the only provider: the worker's credentials never reach instances; another class stops the worker at start",
			cases:    []cvCase{{value: "", check: flagIs("function-auth-provider", functions.ProviderToken)}, plain("functionAuthProviderClassName", functions.ProviderToken)}},
		{section: sWorker, key: "connectorsAllowedHosts", magnetar: "Magnetar's own key: empty allows none", cases: []cvCase{plain("connectorsAllowedHosts", "db.example:5432")}},
	}
	for _, k := range workerSchema.Ignored {
		rows = append(rows, ignoredRow(sWorker, k, "1", "the worker keeps its state in the metadata store and needs no such tuning"))
	}
	return rows
}

func httpRows() []cvRow {
	off := func(key string) cvRow {
		return cvRow{section: sHTTP, key: key, pulsar: "no such key in Pulsar (Jetty's built-in timeouts)", magnetar: "Magnetar's own key: 0 turns the limit off",
			cases: []cvCase{{value: "0", check: flagIs(key, "0")}, plain(key, "5")}}
	}
	return []cvRow{
		off("httpServerReadHeaderTimeoutSeconds"), off("httpServerIdleTimeoutSeconds"), off("httpServerWriteTimeoutSeconds"),
		off("httpServerRequestBodyTimeoutSeconds"), off("httpServerRequestBodyMinBytesPerSecond"), off("httpMaxUnauthenticatedConnectionsPerIp"),
		{section: sHTTP, key: "maxHttpServerConnections", pulsar: "0: no limit", magnetar: "the same", cases: []cvCase{{value: "0", check: flagIs("maxHttpServerConnections", "0")}}},
		{section: sHTTP, key: "maxConcurrentHttpRequests", pulsar: "no documented special value", magnetar: "0: no limit", cases: []cvCase{{value: "0", check: flagIs("maxConcurrentHttpRequests", "0")}}},
		none(sHTTP, "httpRequestsLimitEnabled", "true"),
		{section: sHTTP, key: "httpRequestsMaxPerSecond", pulsar: "no special value", magnetar: "0 or negative is refused",
			cases: []cvCase{{value: "0", roles: saBr, err: "positive"}, plain("httpRequestsMaxPerSecond", "50")}},
		{section: sHTTP, key: "httpMaxRequestSize", pulsar: "0 or negative (default -1): no broker-wide limit", magnetar: "the same (each endpoint's own limit)",
			cases: []cvCase{{value: "-1", check: flagIs("httpMaxRequestSize", "-1")}, plain("httpMaxRequestSize", "1048576")}},
		{section: sHTTP, key: "httpMaxRequestHeaderSize", pulsar: "no special value (0 would refuse every request)", magnetar: "0 or negative is refused",
			cases: []cvCase{{value: "0", roles: saBr, err: "positive"}, plain("httpMaxRequestHeaderSize", "16384")}},
		{section: sHTTP, key: "httpTrustedOrigins", magnetar: "Magnetar's own key: empty, only the server's own origin", cases: []cvCase{plain("httpTrustedOrigins", "https://ui.example")}},
	}
}

func securityRows() []cvRow {
	return []cvRow{
		none(sSec, "authenticationEnabled", "true"),
		{section: sSec, key: "authenticationProviders", pulsar: "empty: no provider (only anonymousUserRole)", magnetar: "the same; authentication on with neither is refused at start (it admits no one)",
			cases: []cvCase{plain("authenticationProviders", "token")}},
		{section: sSec, key: "anonymousUserRole", pulsar: "empty: clients without credentials are refused", magnetar: "the same", cases: []cvCase{plain("anonymousUserRole", "anon")}},
		{section: sSec, key: "authenticationRefreshCheckSeconds", pulsar: "no special value (the check is scheduled at this period)", magnetar: "0 is refused",
			cases: []cvCase{{value: "0", roles: saBr, err: "at least 1"}, plain("authenticationRefreshCheckSeconds", "30")}},
		none(sSec, "authenticateMetricsEndpoint", "true"),
		none(sSec, "authorizationEnabled", "true"),
		{section: sSec, key: "superUserRoles", pulsar: "empty: none", magnetar: "the same", cases: []cvCase{plain("superUserRoles", "admin")}},
		none(sSec, "authorizationAllowWildcardsMatching", "true"),
		{section: sSec, key: "proxyRoles", pulsar: "empty: none", magnetar: "the same", cases: []cvCase{plain("proxyRoles", "proxy")}},
		none(sSec, "authenticateOriginalAuthData", "true"),
		{section: sSec, key: "tokenSecretKey", pulsar: "empty: none (then tokenPublicKey)", magnetar: "the same", cases: []cvCase{plain("tokenSecretKey", "file:///k")}},
		{section: sSec, key: "tokenPublicKey", pulsar: "empty: none", magnetar: "the same", cases: []cvCase{plain("tokenPublicKey", "file:///k.pub")}},
		{section: sSec, key: "tokenPublicAlg", pulsar: "empty: RS256", magnetar: "the same (the key type decides)", cases: []cvCase{plain("tokenPublicAlg", "ES256")}},
		{section: sSec, key: "tokenAuthClaim", pulsar: "empty: sub", magnetar: "the same", cases: []cvCase{plain("tokenAuthClaim", "role")}},
		{section: sSec, key: "tokenAudienceClaim", pulsar: "empty: no audience check", magnetar: "the same", cases: []cvCase{plain("tokenAudienceClaim", "aud")}},
		{section: sSec, key: "tokenAudience", pulsar: "empty: no audience check", magnetar: "the same", cases: []cvCase{plain("tokenAudience", "svc")}},
		{section: sSec, key: "tokenAllowedClockSkewSeconds", pulsar: "0 (default): no leeway", magnetar: "the same", cases: []cvCase{plain("tokenAllowedClockSkewSeconds", "0")}},
		{section: sSec, key: "basicAuthConf", pulsar: "empty: the pulsar.auth.basic.conf system property", magnetar: "empty: none (set the key or PULSAR_PREFIX_basicAuthConf)", cases: []cvCase{plain("basicAuthConf", "/etc/htpasswd")}},
		{section: sSec, key: "brokerServicePortTls", pulsar: "empty (default): no TLS binary listener", magnetar: "the same", cases: []cvCase{plain("brokerServicePortTls", "6651")}},
		{section: sSec, key: "webServicePortTls", pulsar: "empty (default): no HTTPS listener", magnetar: "the same", cases: []cvCase{plain("webServicePortTls", "8443")}},
		{section: sSec, key: "tlsEnabled", pulsar: "deprecated switch", magnetar: "true: the TLS ports default to 6651 and 8443", cases: []cvCase{plain("tlsEnabled", "true")}},
		none(sSec, "tlsCertificateFilePath", "/c.pem"),
		none(sSec, "tlsKeyFilePath", "/k.pem"),
		{section: sSec, key: "tlsTrustCertsFilePath", pulsar: "empty: no client certificate verification", magnetar: "the same", cases: []cvCase{plain("tlsTrustCertsFilePath", "/ca.pem")}},
		none(sSec, "tlsRequireTrustedClientCertOnConnect", "true"),
		none(sSec, "tlsAllowInsecureConnection", "true"),
		{section: sSec, key: "tlsProtocols", pulsar: "empty: the TLS library's defaults", magnetar: "the same (TLS 1.2 minimum)", cases: []cvCase{plain("tlsProtocols", "TLSv1.3")}},
		{section: sSec, key: "tlsCiphers", pulsar: "empty: the TLS library's defaults", magnetar: "the same", cases: []cvCase{plain("tlsCiphers", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")}},
		{section: sSec, key: "tlsCertRefreshCheckDurationSec", pulsar: "0: check the files on every new connection", magnetar: "the same", cases: []cvCase{plain("tlsCertRefreshCheckDurationSec", "0")}},
		{section: sSec, key: "brokerClientAuthenticationPlugin", pulsar: "empty: no credentials", magnetar: "the same", cases: []cvCase{plain("brokerClientAuthenticationPlugin", "token")}},
		{section: sSec, key: "brokerClientAuthenticationParameters", pulsar: "empty: none", magnetar: "the same", cases: []cvCase{plain("brokerClientAuthenticationParameters", "token:x")}},
		none(sSec, "brokerClientTrustCertsFilePath", "/ca.pem"),
		none(sSec, "brokerClientTlsEnabled", "true"),
		none(sSec, "brokerClientCertificateFilePath", "/c.pem"),
		none(sSec, "brokerClientKeyFilePath", "/k.pem"),
	}
}

func bookieRows() []cvRow {
	return []cvRow{
		{section: sBookie, key: "bookiePort", pulsar: "0: an ephemeral port (BookKeeper needs allowEphemeralPorts=true for it)", magnetar: "0: an ephemeral port",
			cases: []cvCase{{value: "0", check: flagIs("listen", ":0")}, {value: "13181", check: flagIs("listen", ":13181")}}},
		{section: sBookie, key: "journalDirectories", pulsar: "empty: journalDirectory", magnetar: "the same; one directory only", cases: []cvCase{plain("journalDirectories", "/j"), refused("/a,/b", "one journal")}},
		{section: sBookie, key: "journalDirectory", pulsar: "used when journalDirectories is empty", magnetar: "the same", cases: []cvCase{plain("journalDirectory", "/j")}},
		none(sBookie, "ledgerDirectories", "/l1,/l2"),
		{section: sBookie, key: "metadataServiceUri", pulsar: "empty: zkServers and zkLedgersRootPath", magnetar: "the same", cases: []cvCase{plain("metadataServiceUri", "zk+hierarchical://zk1:2181/ledgers")}},
		none(sBookie, "zkServers", "zk1:2181"),
		{section: sBookie, key: "zkLedgersRootPath", pulsar: "empty: /ledgers", magnetar: "the same; it must end in /ledgers",
			cases: []cvCase{{value: "/m/ledgers", roles: []string{"bookie"}, err: "ZooKeeper servers"}}},
		none(sBookie, "journalSyncData", "false"),
		none(sBookie, "journalDirectIO", "true"),
		none(sBookie, "journalAlignmentSize", "512"),
		{section: sBookie, key: "flushEntrylogBytes", pulsar: "0 or negative (default 0): no paced flushing", magnetar: "the same",
			cases: []cvCase{{value: "-1", check: flagIs("flush-entrylog-bytes", "0")}, {value: "4194304", check: flagIs("flush-entrylog-bytes", "4194304")}}},
		{section: sBookie, key: "journalMaxGroupWaitMSec", pulsar: "0: no wait for a group (it is written when the queue drains)", magnetar: "the same: a group is written once the previous one is durable",
			cases: []cvCase{{value: "0", check: flagIs("journal-max-group-wait", "0s")}, refused("-1", ">= 0")}},
		{section: sBookie, key: "flushInterval", pulsar: "no special value (a period of 0 fails at start)", magnetar: "0 is refused",
			cases: []cvCase{refused("0", "positive"), {value: "10000", check: flagIs("flush-interval", "10s")}}},
		ignoredRow(sBookie, "httpServerEnabled", "true", "the bookie has no HTTP server"),
		ignoredRow(sBookie, "journalAdaptiveGroupWrites", "true", "journal groups always adapt to the load"),
	}
}
