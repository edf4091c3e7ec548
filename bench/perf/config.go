package perf

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/magnetar-mq/magnetar/pulsarclient"
)

// Common holds the options shared by producers and consumers.
type Common struct {
	ServiceURL string   // pulsar://host:port
	Topics     []string // one or more topics; each gets its own producers/consumers
	// Partitions > 0 creates each topic as a partitioned topic with that
	// many partitions through AdminURL before the run (an existing one is
	// kept). The client then spreads load over the partitions.
	Partitions int
	AdminURL   string // http://host:port, needed with Partitions
	// AuthPlugin and AuthParams are pulsar-perf's --auth-plugin and
	// --auth-params (as Pulsar clients name them); the trust file
	// verifies pulsar+ssl:// brokers.
	AuthPlugin, AuthParams string
	TLSTrustCertPath       string
	TLSAllowInsecure       bool
	// NumMessages stops the run after this many messages in total (0 =
	// no limit); Duration stops it after this long (0 = no limit).
	NumMessages int64
	Duration    time.Duration
	// Window > 0 splits the run into windows of this length and reports
	// each window's latency percentiles (Summary.Windows); 0: none.
	Window time.Duration
	// Progress receives a one-line report every ProgressInterval (nil: none).
	Progress         io.Writer
	ProgressInterval time.Duration
	// Timeline keeps every ProgressInterval's figures in
	// Summary.Timeline (for reports), with or without Progress.
	Timeline bool
}

func (c *Common) ensureDefaults() {
	if c.ServiceURL == "" {
		c.ServiceURL = "pulsar://127.0.0.1:6650"
	}
	if c.ProgressInterval <= 0 {
		c.ProgressInterval = time.Second
	}
}

func (c *Common) validate() error {
	if len(c.Topics) == 0 {
		return invalid("at least one topic is required")
	}
	for _, t := range c.Topics {
		if strings.TrimSpace(t) == "" {
			return invalid("empty topic name")
		}
	}
	if !strings.HasPrefix(c.ServiceURL, "pulsar://") && !strings.HasPrefix(c.ServiceURL, "pulsar+ssl://") {
		return invalid("service URL %q must start with pulsar://", c.ServiceURL)
	}
	if c.Partitions < 0 {
		return invalid("partitions must be >= 0")
	}
	if c.Partitions > 0 && c.AdminURL == "" {
		return invalid("partitions need an admin URL")
	}
	if c.NumMessages < 0 || c.Duration < 0 {
		return invalid("num-messages and test-duration must be >= 0")
	}
	if c.Window < 0 {
		return invalid("window must be >= 0")
	}
	return nil
}

// ProduceConfig configures Produce.
type ProduceConfig struct {
	Common
	Rate         float64 // total messages per second over all producers; 0 = as fast as possible
	Size         int     // payload bytes
	NumProducers int     // per topic
	MaxPending   int     // per producer
	// MemoryLimit is the client's memory limit for pending messages in bytes
	// (0: the client default, 64 MiB).
	MemoryLimit      int64
	DisableBatching  bool
	BatchMaxMessages uint
	BatchMaxBytes    uint
	BatchDelay       time.Duration
	Compression      string // none, lz4, zlib, zstd, snappy
	// PayloadTimestamp writes each message's send time into the first 8
	// bytes of its payload (window.go), for consumers with
	// ConsumeConfig.PayloadTimestamp. Needs Size >= 8; not with raw mode.
	PayloadTimestamp bool
}

// EnsureDefaults fills zero fields with the defaults.
func (c *ProduceConfig) EnsureDefaults() {
	c.ensureDefaults()
	if c.Size == 0 {
		c.Size = 1024
	}
	if c.NumProducers == 0 {
		c.NumProducers = 1
	}
	if c.MaxPending == 0 {
		c.MaxPending = 1000
	}
	if c.BatchMaxMessages == 0 {
		c.BatchMaxMessages = 1000
	}
	if c.BatchMaxBytes == 0 {
		c.BatchMaxBytes = 128 << 10
	}
	if c.BatchDelay == 0 {
		c.BatchDelay = time.Millisecond
	}
	if c.Compression == "" {
		c.Compression = "none"
	}
}

// Validate reports the first invalid option.
func (c *ProduceConfig) Validate() error {
	if err := c.validate(); err != nil {
		return err
	}
	switch {
	case c.Rate < 0:
		return invalid("rate must be >= 0")
	case c.Size <= 0:
		return invalid("size must be > 0")
	case c.NumProducers <= 0:
		return invalid("num-producers must be > 0")
	case c.MaxPending <= 0:
		return invalid("max-pending must be > 0")
	case c.MemoryLimit < 0:
		return invalid("memory-limit must be >= 0")
	case c.BatchDelay < 0:
		return invalid("batch-delay must be >= 0")
	case c.PayloadTimestamp && c.Size < payloadStampSize:
		return invalid("payload-timestamp needs a size of at least %d bytes", payloadStampSize)
	}
	if _, err := ParseCompression(c.Compression); err != nil {
		return err
	}
	return nil
}

// ConsumeConfig configures Consume.
type ConsumeConfig struct {
	Common
	NumConsumers      int    // per topic
	Subscription      string // subscription name
	SubscriptionType  string // exclusive, shared, failover, key_shared
	Position          string // latest or earliest (catch-up)
	ReceiverQueueSize int
	// IdleTimeout ends the run once no message arrived for this long
	// after the first one (0 = never); the summary then ends at the last
	// message, so catch-up runs can stop when the backlog is drained.
	IdleTimeout time.Duration
	// AckMode is individual, cumulative or none. Empty means the mode's
	// default: individual for Consume; for RawConsume
	// cumulative on exclusive and failover subscriptions, individual on
	// shared and key_shared ones. Cumulative acks are refused on shared
	// and key_shared subscriptions (Pulsar does not allow them).
	AckMode string
	// PayloadTimestamp measures end-to-end latency from the send time a
	// producer with ProduceConfig.PayloadTimestamp wrote into the payload
	// (microseconds) instead of the message's publish time
	// (milliseconds); messages without a plausible stamp get no sample.
	PayloadTimestamp bool
}

// EnsureDefaults fills zero fields with the defaults.
func (c *ConsumeConfig) EnsureDefaults() {
	c.ensureDefaults()
	if c.NumConsumers == 0 {
		c.NumConsumers = 1
	}
	if c.Subscription == "" {
		c.Subscription = "perf-sub"
	}
	if c.SubscriptionType == "" {
		c.SubscriptionType = "exclusive"
	}
	if c.Position == "" {
		c.Position = "latest"
	}
	if c.ReceiverQueueSize == 0 {
		c.ReceiverQueueSize = 1000
	}
}

// Validate reports the first invalid option.
func (c *ConsumeConfig) Validate() error {
	if err := c.validate(); err != nil {
		return err
	}
	st, err := ParseSubscriptionType(c.SubscriptionType)
	if err != nil {
		return err
	}
	if _, err := ParsePosition(c.Position); err != nil {
		return err
	}
	switch {
	case c.NumConsumers <= 0:
		return invalid("num-consumers must be > 0")
	case st == pulsarclient.Exclusive && c.NumConsumers > 1:
		return invalid("an exclusive subscription takes one consumer per topic; use shared, failover or key_shared")
	case c.ReceiverQueueSize <= 0:
		return invalid("receiver-queue-size must be > 0")
	case c.IdleTimeout < 0:
		return invalid("idle-timeout must be >= 0")
	case c.Subscription == "":
		return invalid("subscription name is empty")
	}
	am, err := ParseAckMode(c.AckMode)
	if err != nil {
		return err
	}
	if am == AckCumulative && (st == pulsarclient.Shared || st == pulsarclient.KeyShared) {
		return invalid("cumulative acks are not allowed on %s subscriptions", c.SubscriptionType)
	}
	return nil
}

// AckMode says how a consumer acknowledges what it received.
type AckMode int

// Ack modes.
const (
	// AckDefault is the mode's default (see ConsumeConfig.AckMode).
	AckDefault AckMode = iota
	// AckIndividual acknowledges every message (Consume) or entry
	// (raw) by id.
	AckIndividual
	// AckCumulative acknowledges everything up to an id.
	AckCumulative
	// AckNone never acknowledges.
	AckNone
)

// ParseAckMode maps individual, cumulative, none or "" (AckDefault).
func ParseAckMode(s string) (AckMode, error) {
	switch strings.ToLower(s) {
	case "":
		return AckDefault, nil
	case "individual":
		return AckIndividual, nil
	case "cumulative":
		return AckCumulative, nil
	case "none":
		return AckNone, nil
	}
	return 0, invalid("unknown ack mode %q (individual, cumulative, none)", s)
}

// validateRaw reports options the raw (own protocol client) mode does not
// support.
func (c *Common) validateRaw() error {
	if !strings.HasPrefix(c.ServiceURL, "pulsar://") {
		return invalid("raw mode speaks plain TCP only: service URL %q must start with pulsar://", c.ServiceURL)
	}
	if c.AuthPlugin != "" {
		return invalid("raw mode sends no credentials: --auth-plugin needs the default mode")
	}
	return nil
}

// validateRaw reports options the raw mode does not support for consuming:
// those of Common, and payload timestamps.
func (c *ConsumeConfig) validateRaw() error {
	if err := c.Common.validateRaw(); err != nil {
		return err
	}
	if c.PayloadTimestamp {
		return invalid("raw mode does not read payload timestamps (payload-timestamp)")
	}
	return nil
}

// validateRaw reports options the raw mode does not support for producing:
// those of Common, and compression.
func (c *ProduceConfig) validateRaw() error {
	if err := c.Common.validateRaw(); err != nil {
		return err
	}
	if c.Compression != "none" {
		return invalid("raw mode does not compress (compression %q)", c.Compression)
	}
	if c.PayloadTimestamp {
		return invalid("raw mode does not stamp payloads (payload-timestamp)")
	}
	return nil
}

// ParseCompression maps a codec name to the client's type.
func ParseCompression(s string) (pulsarclient.CompressionType, error) {
	switch strings.ToLower(s) {
	case "", "none":
		return pulsarclient.NoCompression, nil
	case "lz4":
		return pulsarclient.LZ4, nil
	case "zlib":
		return pulsarclient.ZLib, nil
	case "zstd":
		return pulsarclient.ZSTD, nil
	case "snappy":
		return pulsarclient.Snappy, nil
	}
	return 0, invalid("unknown compression %q (none, lz4, zlib, zstd, snappy)", s)
}

// ParseSubscriptionType maps a subscription type name to the client's type.
func ParseSubscriptionType(s string) (pulsarclient.SubscriptionType, error) {
	switch strings.ToLower(strings.ReplaceAll(s, "-", "_")) {
	case "exclusive":
		return pulsarclient.Exclusive, nil
	case "shared":
		return pulsarclient.Shared, nil
	case "failover":
		return pulsarclient.Failover, nil
	case "key_shared", "keyshared":
		return pulsarclient.KeyShared, nil
	}
	return 0, invalid("unknown subscription type %q (exclusive, shared, failover, key_shared)", s)
}

// ParsePosition maps latest/earliest to the client's initial position.
func ParsePosition(s string) (pulsarclient.SubscriptionInitialPosition, error) {
	switch strings.ToLower(s) {
	case "latest":
		return pulsarclient.SubscriptionPositionLatest, nil
	case "earliest":
		return pulsarclient.SubscriptionPositionEarliest, nil
	}
	return 0, invalid("unknown subscription position %q (latest, earliest)", s)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
}
