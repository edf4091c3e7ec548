package broker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/policy"
)

// Config configures a Broker. The zero value plus EnsureDefaults is a
// usable single-node configuration listening on the Pulsar default ports.
type Config struct {
	// ServiceAddr is the binary-protocol listen address (default ":6650";
	// "127.0.0.1:0" picks a free port). "-" disables the plaintext port.
	ServiceAddr string
	// TLSServiceAddr and TLSHTTPAddr are the pulsar+ssl and https listen
	// addresses ("" = none); they need Security's TLS settings.
	TLSServiceAddr string
	TLSHTTPAddr    string
	// Security holds the TLS, authentication and authorization settings
	// (nil: none). See package auth and security.go.
	Security *auth.Config
	// HTTPAddr is the admin/lookup HTTP listen address (default ":8080").
	// "-" disables the HTTP listener.
	HTTPAddr string
	// AdvertisedHost is the host put into lookup answers (default
	// "localhost"). The port is always the actual service port.
	AdvertisedHost string
	// ClusterName is reported by the admin API (default "standalone").
	ClusterName string
	// MaxMessageSize is advertised in CONNECTED and bounds inbound frames
	// (default 5 MiB; the Go client's test suite expects 1 MiB).
	MaxMessageSize int
	// KeepAliveInterval is how often the broker pings an idle client
	// (default 30s). A connection that sends nothing for IdleTimeout is
	// closed (default 2.5x KeepAliveInterval).
	KeepAliveInterval time.Duration
	IdleTimeout       time.Duration
	// ConnectTimeout closes a connection that has not completed CONNECT
	// within it (default 10s; see handshake.go).
	ConnectTimeout time.Duration
	// MaxOutboundBytes bounds a connection's unsent output (default 64
	// MiB): dispatch to a connection pauses above half of it, and the
	// connection is closed if it is exceeded anyway.
	MaxOutboundBytes int
	// WriteTimeout disconnects a client that accepts no bytes for this
	// long while the broker has output for it (default 30s).
	WriteTimeout time.Duration
	// DisableAutoTopicCreation makes unknown topics an error instead of
	// creating them on first use.
	DisableAutoTopicCreation bool
	// Deduplication drops re-sent messages by (producer name, sequence id).
	Deduplication bool
	// DedupRecoveryEntries is how many of a topic's last entries are read
	// at load to rebuild deduplication state (default 1000); producers
	// whose last entry is older than that start afresh.
	DedupRecoveryEntries int
	// DispatchBatch is the maximum number of entries one dispatcher read
	// fetches (default 100).
	DispatchBatch int
	// MaxUnackedPerConsumer is Pulsar's maxUnackedMessagesPerConsumer:
	// dispatch to a Shared or Key_Shared consumer holding that many
	// unacknowledged messages stops until acks bring it to half (default
	// 50,000; negative: unlimited). MaxUnackedPerSubscription is the same
	// for a whole subscription (default 200,000; negative: unlimited).
	// Namespace policies override both.
	MaxUnackedPerConsumer     int
	MaxUnackedPerSubscription int
	// MaxPartitionsPerTopic is Pulsar's
	// maxNumPartitionsPerPartitionedTopic: creating or growing a
	// partitioned topic beyond it is refused (default 10,000; negative:
	// only the int32 range applies).
	MaxPartitionsPerTopic int
	// Cluster, when set, makes the broker one of a cluster sharing the
	// metadata store (see ClusterConfig); nil is a single node that owns
	// every topic.
	Cluster *ClusterConfig
	// HistoryInterval is how often the history sampler records every
	// loaded topic's rates, backlog and storage size (history.go; default
	// 5s, at least MinHistoryInterval; negative: no sampler).
	// HistoryLength samples are kept per topic (default: 15 minutes'
	// worth, at most MaxHistoryLength); a sample is 56 bytes, so the
	// default costs about 10 KiB per loaded topic.
	HistoryInterval time.Duration
	HistoryLength   int
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
}

// Defaults of the limits (Pulsar's, except MaxPartitionsPerTopic, which
// Pulsar leaves unlimited: see docs/limits.md).
const (
	DefaultMaxUnackedPerConsumer     = 50000
	DefaultMaxUnackedPerSubscription = 200000
	DefaultMaxPartitionsPerTopic     = 10000
)

// EnsureDefaults fills unset fields with their defaults.
func (c *Config) EnsureDefaults() {
	if c.ServiceAddr == "" {
		c.ServiceAddr = ":6650"
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = ":8080"
	}
	if c.HistoryInterval == 0 {
		c.HistoryInterval = DefaultHistoryInterval
	}
	if c.HistoryLength <= 0 && c.HistoryInterval > 0 {
		c.HistoryLength = min(max(int(DefaultHistoryWindow/c.HistoryInterval), 2), MaxHistoryLength)
	}
	if c.AdvertisedHost == "" {
		c.AdvertisedHost = "localhost"
	}
	if c.ClusterName == "" {
		c.ClusterName = "standalone"
	}
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = 5 << 20
	}
	if c.KeepAliveInterval == 0 {
		c.KeepAliveInterval = 30 * time.Second
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 10 * time.Second
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = c.KeepAliveInterval * 5 / 2
	}
	if c.MaxOutboundBytes == 0 {
		c.MaxOutboundBytes = 64 << 20
	}
	if c.DedupRecoveryEntries == 0 {
		c.DedupRecoveryEntries = 1000
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = 30 * time.Second
	}
	if c.DispatchBatch == 0 {
		c.DispatchBatch = 100
	}
	if c.MaxUnackedPerConsumer == 0 {
		c.MaxUnackedPerConsumer = DefaultMaxUnackedPerConsumer
	}
	if c.MaxUnackedPerSubscription == 0 {
		c.MaxUnackedPerSubscription = DefaultMaxUnackedPerSubscription
	}
	if c.MaxPartitionsPerTopic == 0 {
		c.MaxPartitionsPerTopic = DefaultMaxPartitionsPerTopic
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports a configuration that cannot work.
func (c *Config) Validate() error {
	switch {
	case c.HistoryInterval > 0 && c.HistoryInterval < MinHistoryInterval:
		return fmt.Errorf("%w: history sample interval %s below %s", ErrBadConfig, c.HistoryInterval, MinHistoryInterval)
	case c.HistoryLength > MaxHistoryLength:
		return fmt.Errorf("%w: history length %d above %d", ErrBadConfig, c.HistoryLength, MaxHistoryLength)
	case c.MaxMessageSize < 1024:
		return fmt.Errorf("%w: MaxMessageSize %d too small", ErrBadConfig, c.MaxMessageSize)
	case c.KeepAliveInterval < 0 || c.IdleTimeout < 0 || c.ConnectTimeout < 0:
		return fmt.Errorf("%w: negative keep-alive", ErrBadConfig)
	case c.MaxOutboundBytes < c.MaxMessageSize:
		return fmt.Errorf("%w: MaxOutboundBytes below MaxMessageSize", ErrBadConfig)
	case c.DispatchBatch < 1:
		return fmt.Errorf("%w: DispatchBatch < 1", ErrBadConfig)
	}
	return nil
}

// Deps are the broker's collaborators, supplied by the wiring in
// cmd/magnetar (real storage) or by tests (in-memory storage).
type Deps struct {
	// Metadata holds tenants, namespaces, partitioned-topic metadata and
	// schemas.
	Metadata metadata.Store
	// OpenLedger opens (creating if needed) the managed ledger that backs
	// a persistent topic, named by its canonical topic name.
	OpenLedger func(ctx context.Context, name string) (ManagedLedger, error)
	// DeleteLedger, if set, deletes the managed ledger of a deleted topic
	// with its ledgers (mledger.Factory.Delete); nil leaves the data.
	DeleteLedger func(ctx context.Context, name string) error
	// Policies holds tenants, namespaces and their policies; nil: a store
	// over Metadata. Share it with the admin API so that its writes reach
	// the broker at once.
	Policies *policy.Store
	// Bookies, if set, reports the storage nodes to the admin API and
	// /metrics.
	Bookies BookieInfo
	// Collectors are registered on /metrics as they are (e.g. an
	// in-process bookie's (*bookie.Bookie).Collector()).
	Collectors []prometheus.Collector
}
