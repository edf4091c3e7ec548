package main

import (
	"bytes"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/internal/testenv"

	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/internal/conf"
)

// roleCmd returns a fresh command of role with its flags parsed from args.
func roleCmd(t *testing.T, role string, args ...string) *cobra.Command {
	t.Helper()
	c := map[string]func() *cobra.Command{"standalone": newStandaloneCmd, "broker": newBrokerCmd, "bookie": newBookieCmd, "proxy": newProxyCmd,
		"functions-worker": newFunctionsWorkerCmd}[role]()
	if err := c.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	return c
}

func flagValue(t *testing.T, c *cobra.Command, name string) string {
	t.Helper()
	f := c.Flags().Lookup(name)
	if f == nil {
		t.Fatalf("no flag --%s", name)
	}
	return f.Value.String()
}

// keyCase: setting key to value (alone in a file) makes flag want.
type keyCase struct{ key, value, flag, want string }

// serviceKeyCases are the keys standalone and broker share.
var serviceKeyCases = []keyCase{
	{"brokerDeduplicationEnabled", "true", "dedup", "true"},
	{"allowAutoTopicCreation", "false", "allow-auto-topic-creation", "false"},
	{"allowAutoTopicCreationType", "Partitioned", "auto-topic-creation-type", "partitioned"},
	{"defaultNumPartitions", "3", "default-num-partitions", "3"},
	{"allowAutoSubscriptionCreation", "true", "", ""},
	{"subscriptionKeySharedEnable", "false", "key-shared-enable", "false"},
	{"subscriptionTypesEnabled", "Exclusive, Failover", "subscription-types-enabled", "Exclusive, Failover"},
	{"keepAliveIntervalSeconds", "7", "keep-alive-interval", "7s"},
	{"dispatcherMaxReadBatchSize", "42", "dispatch-batch", "42"},
	{"maxUnackedMessagesPerConsumer", "10", "max-unacked-messages-per-consumer", "10"},
	{"maxUnackedMessagesPerSubscription", "0", "max-unacked-messages-per-subscription", "0"},
	{"maxNumPartitionsPerPartitionedTopic", "64", "max-partitions-per-topic", "64"},
	{"brokerEntryMetadataInterceptors", "org.apache.pulsar.common.intercept.AppendIndexMetadataInterceptor", "broker-entry-metadata-interceptors", "[org.apache.pulsar.common.intercept.AppendIndexMetadataInterceptor]"},
	{"exposingBrokerEntryMetadataToClientEnabled", "true", "expose-broker-entry-metadata", "true"},
	{"topicCompactionRetainNullKey", "true", "topic-compaction-retain-null-key", "true"},
	{"subscriptionKeySharedUseConsistentHashing", "true", "key-shared-consistent-hashing", "true"},
	{"transactionCoordinatorEnabled", "true", "transaction-coordinator-enabled", "true"},
	{"maxActiveTransactionsPerCoordinator", "500", "max-active-transactions-per-coordinator", "500"},
	{"maxPublishRatePerTopicInMessages", "100", "max-publish-rate-msgs", "100"},
	{"maxPublishRatePerTopicInBytes", "2048", "max-publish-rate-bytes", "2048"},
	{"dispatchThrottlingRatePerTopicInMsg", "11", "dispatch-rate-topic-msgs", "11"},
	{"dispatchThrottlingRatePerTopicInByte", "12", "dispatch-rate-topic-bytes", "12"},
	{"dispatchThrottlingRatePerSubscriptionInMsg", "13", "dispatch-rate-subscription-msgs", "13"},
	{"dispatchThrottlingRatePerSubscriptionInByte", "14", "dispatch-rate-subscription-bytes", "14"},
	{"dispatchThrottlingRatePerReplicatorInMsg", "17", "dispatch-rate-replicator-msgs", "17"},
	{"dispatchThrottlingRatePerReplicatorInByte", "18", "dispatch-rate-replicator-bytes", "18"},
	{"subscribeThrottlingRatePerConsumer", "3", "subscribe-rate-per-consumer", "3"},
	{"subscribeRatePeriodPerConsumerInSecond", "9", "subscribe-rate-period", "9"},
	{"brokerDeleteInactiveTopicsEnabled", "false", "delete-inactive-topics", "false"},
	{"brokerDeleteInactiveTopicsFrequencySeconds", "30", "delete-inactive-topics-frequency", "30s"},
	{"brokerDeleteInactiveTopicsMode", "delete_when_subscriptions_caught_up", "delete-inactive-topics-mode", "delete_when_subscriptions_caught_up"},
	{"brokerDeleteInactiveTopicsMaxInactiveDurationSeconds", "90", "delete-inactive-topics-max-inactive", "1m30s"},
	{"subscriptionExpirationTimeMinutes", "15", "subscription-expiration-minutes", "15"},
	{"subscriptionExpiryCheckIntervalInMinutes", "2", "subscription-expiry-check-interval", "2m0s"},
	{"statsUpdateFrequencyInSecs", "60", "stats-interval", "1m0s"},
	{"consoleEnabled", "false", "console", "false"},
	{"consoleSampleIntervalSeconds", "2", "console-sample-interval", "2s"},
	{"exposeTopicLevelMetricsInPrometheus", "false", "expose-topic-level-metrics", "false"},
	{"topicUnloadIdleSeconds", "45", "topic-unload-idle", "45s"},
	{"managedLedgerMaxEntriesPerLedger", "1000", "max-entries-per-ledger", "1000"},
	{"managedLedgerMinLedgerRolloverTimeMinutes", "2", "min-ledger-rollover-time", "2m0s"},
	{"managedLedgerMaxLedgerRolloverTimeMinutes", "90", "max-ledger-rollover-time", "1h30m0s"},
	{"managedLedgerOffloadAutoTriggerSizeThresholdBytes", "1048576", "offload-threshold-bytes", "1048576"},
	{"managedLedgerOffloadThresholdInSeconds", "3600", "offload-threshold-seconds", "3600"},
	{"managedLedgerOffloadDeletionLagMs", "60000", "offload-deletion-lag-ms", "60000"},
	{"managedLedgerDataReadPriority", "bookkeeper-first", "offload-read-priority", "bookkeeper-first"},
	{"s3ManagedLedgerOffloadBucket", "b1", "offload-bucket", "b1"},
	{"managedLedgerOffloadDriver", "aws-s3", "offload-driver", "aws-s3"},
}

// roleKeyCases are keyCases[role], with serviceKeyCases for standalone
// and broker.
func roleKeyCases(role string) []keyCase {
	if role == "standalone" || role == "broker" {
		return append(append([]keyCase{}, keyCases[role]...), serviceKeyCases...)
	}
	return keyCases[role]
}

var keyCases = map[string][]keyCase{
	"functions-worker": {
		{"workerHostname", "w1.example", "advertised-host", "w1.example"},
		{"workerPort", "7750", "http", "127.0.0.1:7750"},
		{"workerPortTls", "7751", "https", "127.0.0.1:7751"},
		{"workerId", "w9", "worker-id", "w9"},
		{"pulsarServiceUrl", "pulsar://b1:6650", "broker-service-url", "pulsar://b1:6650"},
		{"pulsarFunctionsCluster", "c9", "cluster-name", "c9"},
		{"metadataStoreUrl", "zk:zk1:2181/fw", "metadata-url", "zk://zk1:2181/fw"},
		{"metadataStoreSessionTimeoutMillis", "4000", "zk-session-timeout", "4s"},
		{"configurationMetadataStoreUrl", "zk:zk2:2181/cfg", "configuration-metadata-url", "zk://zk2:2181/cfg"},
		{"authenticationEnabled", "true", "authenticationEnabled", "true"},
		{"superUserRoles", "admin,ops", "superUserRoles", "admin,ops"},
		{"brokerClientAuthenticationEnabled", "false", "broker-client-authentication-enabled", "false"},
		{"httpServerIdleTimeoutSeconds", "5", "httpServerIdleTimeoutSeconds", "5"},
		{"maxHttpServerConnections", "100", "maxHttpServerConnections", "100"},
		{"functionsDirectory", "/opt/fn", "functions-directory", "/opt/fn"},
		{"connectorsAllowedDirectories", "/srv/io/{tenant},/srv/shared", "connectors-allowed-directories", "[/srv/io/{tenant},/srv/shared]"},
		{"connectorsAllowedListenAddresses", "0.0.0.0:9000-9099", "connectors-allowed-listen-addresses", "[0.0.0.0:9000-9099]"},
		{"connectorsAllowedHosts", "db.internal:5432", "connectors-allowed-hosts", "[db.internal:5432]"},
	},
	"proxy": {
		{"metadataStoreUrl", "zk:zk1:2181/px", "metadata-url", "zk://zk1:2181/px"},
		{"metadataStoreSessionTimeoutMillis", "4000", "zk-session-timeout", "4s"},
		{"bindAddress", "127.0.0.3", "listen", "127.0.0.3:6650"},
		{"servicePort", "16650", "listen", ":16650"},
		{"webServicePort", "18080", "http", ":18080"},
		{"servicePortTls", "6651", "listen-tls", ":6651"},
		{"webServicePortTls", "8443", "http-tls", ":8443"},
		{"brokerServiceURL", "pulsar://b1:6650,b2:6650", "broker-service-url", "pulsar://b1:6650,b2:6650"},
		{"brokerServiceURLTLS", "pulsar+ssl://b1:6651", "broker-service-url-tls", "pulsar+ssl://b1:6651"},
		{"brokerWebServiceURL", "http://b1:8080", "broker-web-service-url", "http://b1:8080"},
		{"brokerWebServiceURLTLS", "https://b1:8443", "broker-web-service-url-tls", "https://b1:8443"},
		{"maxConcurrentLookupRequests", "7", "max-concurrent-lookups", "7"},
		{"maxConcurrentInboundConnections", "9", "max-connections", "9"},
		{"keepAliveIntervalSeconds", "5", "keep-alive-interval", "5s"},
		{"maxMessageSize", "1048576", "max-message-size", "1048576"},
		{"forwardAuthorizationCredentials", "true", "forward-authorization-credentials", "true"},
		{"tlsEnabledWithBroker", "true", "tls-enabled-with-broker", "true"},
		{"authenticationEnabled", "true", "authenticationEnabled", "true"},
		{"brokerClientAuthenticationPlugin", "token", "brokerClientAuthenticationPlugin", "token"},
	},
	"standalone": {
		{"connectorsAllowedDirectories", "/srv/io/{tenant}", "connectors-allowed-directories", "[/srv/io/{tenant}]"},
		{"bindAddress", "127.0.0.2", "listen", "127.0.0.2:6650"},
		{"brokerServicePort", "16650", "listen", ":16650"},
		{"webServicePort", "18080", "http", ":18080"},
		{"advertisedAddress", "mq.example", "advertised-host", "mq.example"},
		{"clusterName", "c9", "cluster-name", "c9"},
		{"maxMessageSize", "1048576", "max-message-size", "1048576"},
		{"managedLedgerDefaultEnsembleSize", "1", "", ""},
		{"managedLedgerDefaultWriteQuorum", "1", "", ""},
		{"managedLedgerDefaultAckQuorum", "1", "", ""},
	},
	"broker": {
		{"metadataStoreUrl", "zk:zk1:2181,zk2:2181/mag", "metadata-url", "zk://zk1:2181,zk2:2181/mag"},
		{"metadataStoreSessionTimeoutMillis", "4500", "zk-session-timeout", "4.5s"},
		{"bindAddress", "127.0.0.2", "http", "127.0.0.2:8080"},
		{"brokerServicePort", "16650", "listen", ":16650"},
		{"webServicePort", "18080", "http", ":18080"},
		{"advertisedAddress", "mq.example", "advertised-host", "mq.example"},
		{"clusterName", "c9", "cluster-name", "c9"},
		{"maxMessageSize", "2147473407", "max-message-size", "2147473407"},
		{"managedLedgerDefaultEnsembleSize", "5", "ensemble", "5"},
		{"managedLedgerDefaultWriteQuorum", "4", "write-quorum", "4"},
		{"managedLedgerDefaultAckQuorum", "3", "ack-quorum", "3"},
	},
	"bookie": {
		{"bookiePort", "13181", "listen", ":13181"},
		{"advertisedAddress", "bk1.example", "advertised-address", "bk1.example:3181"},
		{"metadataServiceUri", "zk+hierarchical://zk1:2181;zk2:2181/mag/ledgers", "metadata-url", "zk://zk1:2181,zk2:2181/mag"},
		{"journalDirectories", "/j", "journal-dir", "/j"},
		{"ledgerDirectories", "/l1,/l2", "ledger-dirs", "[/l1,/l2]"},
		{"journalSyncData", "false", "journal-no-sync", "true"},
		{"journalDirectIO", "true", "journal-direct-io", "true"},
		{"journalAlignmentSize", "512", "journal-alignment-size", "512"},
		{"flushEntrylogBytes", "4194304", "flush-entrylog-bytes", "4194304"},
		{"journalMaxGroupWaitMSec", "2", "journal-max-group-wait", "2ms"},
		{"flushInterval", "10000", "flush-interval", "10s"},
	},
}

// TestConfigShippedKeysTakeEffect: every key of each shipped file is in
// the table above and takes effect on its flag; the shipped files load
// without unknown keys and hold the flags' defaults.
func TestConfigShippedKeysTakeEffect(t *testing.T) {
	for role, file := range confFile {
		t.Run(role, func(t *testing.T) {
			read := conf.ReadFile
			if strings.HasSuffix(file, ".yml") {
				read = conf.ReadYAMLFile
			}
			shipped, err := read(filepath.Join("..", "..", "conf", file))
			if err != nil {
				t.Fatal(err)
			}
			var tested []string
			for _, kc := range roleKeyCases(role) {
				tested = append(tested, kc.key)
			}
			for _, k := range shipped.Keys() {
				if v, _ := shipped.Get(k); v != "" && !slices.Contains(tested, k) {
					t.Errorf("%s: shipped key %s has no test case", file, k)
				}
			}
			// The shipped file changes nothing but the defaults it restates.
			c := roleCmd(t, role, "--config", filepath.Join("..", "..", "conf", file))
			var warn bytes.Buffer
			res, err := loadConfig(c, role, &warn)
			if err != nil || len(res.Unknown) > 0 || warn.Len() > 0 {
				t.Fatalf("shipped %s: %v, unknown %v %s", file, err, res.Unknown, warn.String())
			}
			fresh := roleCmd(t, role)
			for _, s := range res.Sources {
				switch s.Flag {
				case "metadata-url", "config":
					continue // required / not a setting
				case "journal-dir", "ledger-dirs":
					continue // default derived from --data-dir; the file states the result
				}
				if def := flagValue(t, fresh, s.Flag); s.Value != def {
					t.Errorf("shipped %s sets --%s=%s, default %s", file, s.Flag, s.Value, def)
				}
			}
			for _, kc := range roleKeyCases(role) {
				c := roleCmd(t, role, "--config", testenv.WriteFile(t, "test.conf", kc.key+"="+kc.value+"\n"))
				if strings.HasSuffix(file, ".yml") {
					c = roleCmd(t, role, "--config", testenv.WriteFile(t, "test.yml", kc.key+": "+kc.value+"\n"))
				}
				if _, err := loadConfig(c, role, io.Discard); err != nil {
					t.Errorf("%s=%s: %v", kc.key, kc.value, err)
					continue
				}
				if kc.flag == "" {
					continue // a fixed key at its only value
				}
				if got := flagValue(t, c, kc.flag); got != kc.want {
					t.Errorf("%s=%s: --%s=%s, want %s", kc.key, kc.value, kc.flag, got, kc.want)
				}
			}
		})
	}
}

// TestConfigPrecedence: flag > MAGNETAR_<FLAG> > PULSAR_PREFIX_<key> >
// file > default.
func TestConfigPrecedence(t *testing.T) {
	path := testenv.WriteFile(t, "test.conf", "maxMessageSize=1000000\nclusterName=from-file\nkeepAliveIntervalSeconds=5\n")
	t.Setenv("PULSAR_PREFIX_maxMessageSize", "2000000")
	t.Setenv("PULSAR_PREFIX_clusterName", "from-pulsar-env")
	t.Setenv("MAGNETAR_MAX_MESSAGE_SIZE", "3000000")
	t.Setenv("MAGNETAR_DATA_DIR", "/from/env")
	c := roleCmd(t, "standalone", "--config", path, "--max-message-size", "4000000")
	res, err := loadConfig(c, "standalone", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{
		"max-message-size":    "4000000",         // command line
		"cluster-name":        "from-pulsar-env", // PULSAR_PREFIX_ over the file
		"keep-alive-interval": "5s",              // the file
		"data-dir":            "/from/env",       // MAGNETAR_ for a Magnetar-only flag
		"dispatch-batch":      "100",             // default
	} {
		if got := flagValue(t, c, flag); got != want {
			t.Errorf("--%s=%s, want %s", flag, got, want)
		}
	}
	origins := map[string]string{}
	for _, s := range res.Sources {
		origins[s.Flag] = s.Origin
	}
	if origins["max-message-size"] != "command line" || origins["cluster-name"] != "PULSAR_PREFIX_clusterName (clusterName)" ||
		!strings.HasPrefix(origins["keep-alive-interval"], path+":3") || origins["data-dir"] != "MAGNETAR_DATA_DIR" {
		t.Errorf("origins %v", origins)
	}
	// Without the flag, MAGNETAR_ beats PULSAR_PREFIX_.
	c = roleCmd(t, "standalone", "--config", path)
	if _, err := loadConfig(c, "standalone", io.Discard); err != nil {
		t.Fatal(err)
	}
	if got := flagValue(t, c, "max-message-size"); got != "3000000" {
		t.Errorf("max-message-size %s, want MAGNETAR_'s 3000000", got)
	}
}

// TestConfigBadValues: a bad value is an error naming the key and where
// it came from; unknown keys are reported in one line, not fatal.
func TestConfigBadValues(t *testing.T) {
	for _, tc := range []struct {
		role, body string
		want       []string
	}{
		{"standalone", "# c\n\nmaxMessageSize=lots\n", []string{"test.conf:3", "maxMessageSize", `"lots"`}},
		{"standalone", "maxMessageSize=9223372036854775808\n", []string{"test.conf:1", "maxMessageSize", "whole number"}},
		{"standalone", "maxMessageSize=4294967296\n", []string{"test.conf:1", "maxMessageSize", "out of range"}},
		{"standalone", "brokerServicePort=65536\n", []string{"test.conf:1", "brokerServicePort", "65535"}},
		{"standalone", "keepAliveIntervalSeconds=x\n", []string{"keepAliveIntervalSeconds", "whole number"}},
		{"standalone", "allowAutoTopicCreationType=both\n", []string{"test.conf:1", "allowAutoTopicCreationType", "want partitioned or non-partitioned"}},
		{"standalone", "defaultNumPartitions=0\n", []string{"test.conf:1", "defaultNumPartitions", "must be positive"}},
		{"standalone", "managedLedgerDefaultEnsembleSize=3\n", []string{"managedLedgerDefaultEnsembleSize", "one bookie"}},
		{"broker", "metadataStoreUrl=etcd:h:2379\n", []string{"metadataStoreUrl", "ZooKeeper"}},
		{"bookie", "journalDirectories=/a,/b\n", []string{"journalDirectories", "one journal"}},
		{"bookie", "metadataServiceUri=zk+hierarchical://h:2181/other\n", []string{"metadataServiceUri", "/ledgers"}},
		{"bookie", "flushInterval=0\n", []string{"flushInterval", "positive"}},
		{"bookie", "journalMaxGroupWaitMSec=-1\n", []string{"journalMaxGroupWaitMSec", ">= 0"}},
		{"bookie", "journalMaxGroupWaitMSec=9223372036854775807\n", []string{"journalMaxGroupWaitMSec", ">= 0"}},
		{"bookie", "not a key value line\n", []string{"test.conf:1", "not key=value"}},
	} {
		c := roleCmd(t, tc.role, "--config", testenv.WriteFile(t, "test.conf", tc.body))
		_, err := loadConfig(c, tc.role, io.Discard)
		if err == nil {
			t.Errorf("%s %q: accepted", tc.role, tc.body)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s %q: error %q lacks %q", tc.role, tc.body, err, w)
			}
		}
	}
	t.Setenv("PULSAR_PREFIX_dispatcherMaxReadBatchSize", "x")
	c := roleCmd(t, "standalone")
	if _, err := loadConfig(c, "standalone", io.Discard); err == nil || !strings.Contains(err.Error(), "PULSAR_PREFIX_dispatcherMaxReadBatchSize") {
		t.Errorf("bad environment value: %v", err)
	}
	t.Setenv("PULSAR_PREFIX_dispatcherMaxReadBatchSize", "")

	var warn bytes.Buffer
	c = roleCmd(t, "standalone", "--config", testenv.WriteFile(t, "test.conf", "tlsEnabled=true\nfooBar=1\nmaxMessageSize=1048576\n"))
	res, err := loadConfig(c, "standalone", &warn)
	// Security keys (tlsEnabled) are known: they set the flag of the same name.
	if err != nil || !slices.Equal(res.Unknown, []string{"fooBar"}) || strings.Count(warn.String(), "\n") != 1 ||
		!strings.Contains(warn.String(), "fooBar") || flagValue(t, c, "max-message-size") != "1048576" ||
		flagValue(t, c, "tlsEnabled") != "true" {
		t.Errorf("unknown keys: %v %v %q", res.Unknown, err, warn.String())
	}
}

// TestConfigDump runs `magnetar config dump` in process.
func TestConfigDump(t *testing.T) {
	path := testenv.WriteFile(t, "test.conf", "maxMessageSize=1048576\n")
	var out bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetArgs([]string{"config", "dump", "standalone", "--config", path, "--cluster-name", "dumped"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"max-message-size=1048576\t# " + path + ":1 (maxMessageSize)", "cluster-name=dumped\t# command line", "data-dir=./data\t# default"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dump lacks %q:\n%s", want, out.String())
		}
	}
}

// TestServiceFlagsLimits: Pulsar's 0 ("unlimited") for the unacked and
// partition limits becomes the broker's negative "unlimited"; other
// values pass through.
func TestServiceFlagsLimits(t *testing.T) {
	var c brokerconf.Config
	(&serviceFlags{maxUnackedC: 0, maxUnackedS: 7, maxPartitions: 0}).apply(&c)
	if c.MaxUnackedPerConsumer != -1 || c.MaxUnackedPerSubscription != 7 || c.MaxPartitionsPerTopic != -1 {
		t.Fatalf("limits %d %d %d", c.MaxUnackedPerConsumer, c.MaxUnackedPerSubscription, c.MaxPartitionsPerTopic)
	}
	c.EnsureDefaults()
	if c.MaxUnackedPerConsumer != -1 || c.MaxPartitionsPerTopic != -1 {
		t.Fatal("EnsureDefaults replaced an explicit unlimited")
	}
}
