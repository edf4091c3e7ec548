package mledger

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/magnetar-mq/magnetar/metadata"
)

// Options configure a Factory: the stores shared by all managed ledgers, the
// broker-wide entry cache and the background loop.
type Options struct {
	// Ledgers creates, opens and deletes ledgers. Required.
	Ledgers LedgerStore
	// Metadata holds managed-ledger info and cursor nodes. Required.
	Metadata metadata.Store
	// RootPath is the metadata prefix; default "/managed-ledgers".
	RootPath string
	// CacheSize is the entry cache budget in bytes; default 64 MiB.
	CacheSize int64
	// CacheEvictionWatermark: on overflow evict down to this fraction of
	// the budget; default 0.9.
	CacheEvictionWatermark float64
	// CacheEvictionAge: entries older than this are evicted by the
	// background loop; default 1s.
	CacheEvictionAge time.Duration
	// TickInterval is the period of the background loop (cursor flushes,
	// time-based rollover, trimming, cache eviction); default 100ms. A
	// negative value disables the loop: the caller then calls Tick.
	TickInterval time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
	// Now returns the current time; default time.Now.
	Now func() time.Time
	// Offloader reads and deletes offloaded ledgers of managed ledgers
	// whose Config names none (the broker's configured offloader); nil:
	// none.
	Offloader Offloader
}

// EnsureDefaults fills zero fields with defaults.
func (o *Options) EnsureDefaults() {
	if o.RootPath == "" {
		o.RootPath = "/managed-ledgers"
	}
	if o.CacheSize == 0 {
		o.CacheSize = 64 << 20
	}
	if o.CacheEvictionWatermark == 0 {
		o.CacheEvictionWatermark = 0.9
	}
	if o.CacheEvictionAge == 0 {
		o.CacheEvictionAge = time.Second
	}
	if o.TickInterval == 0 {
		o.TickInterval = 100 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Validate reports an unusable configuration.
func (o *Options) Validate() error {
	switch {
	case o.Ledgers == nil:
		return errors.New("mledger: Options.Ledgers is required")
	case o.Metadata == nil:
		return errors.New("mledger: Options.Metadata is required")
	case o.CacheSize < 0:
		return errors.New("mledger: negative CacheSize")
	case o.CacheEvictionWatermark <= 0 || o.CacheEvictionWatermark > 1:
		return fmt.Errorf("mledger: CacheEvictionWatermark %v not in (0,1]", o.CacheEvictionWatermark)
	}
	return nil
}

// Config configures one managed ledger.
type Config struct {
	// MaxEntriesPerLedger rolls the ledger after this many entries;
	// default 50000.
	MaxEntriesPerLedger int64
	// MaxSizePerLedger rolls the ledger after this many bytes; default
	// 2 GiB.
	MaxSizePerLedger int64
	// MaxLedgerRolloverTime rolls a non-empty ledger this long after its
	// creation, plus a random 0-5% per managed ledger; default 4h.
	// Negative: every non-empty ledger is past it, so one rolls after each
	// add once past MinLedgerRolloverTime (Pulsar's maximum of 0).
	MaxLedgerRolloverTime time.Duration
	// MinLedgerRolloverTime: no size/count/age rollover before the ledger
	// is this old (a write error always rolls); default 10m, negative
	// means no minimum.
	MinLedgerRolloverTime time.Duration
	// RetentionTime keeps consumed ledgers for this long (by close time);
	// -1 forever, 0 (default) not at all.
	RetentionTime time.Duration
	// RetentionSize keeps consumed ledgers while the managed ledger is at
	// most this many bytes; -1 unlimited, 0 (default) none. A consumed
	// ledger is deleted when it violates either retention limit.
	RetentionSize int64
	// TrimInterval is how often the background loop trims; default 1m,
	// negative disables (Trim can still be called).
	TrimInterval time.Duration
	// CursorPersistInterval: durable cursor state is persisted at most
	// this often (and on Close/Flush); default 100ms.
	CursorPersistInterval time.Duration
	// CursorSnapshotMinBytes: a new snapshot (in a new cursor ledger) is
	// written once the deltas since the last one exceed max(this, size of
	// the last snapshot); default 64 KiB.
	CursorSnapshotMinBytes int64
	// CursorMaxEntriesPerLedger also forces a snapshot after this many
	// entries in one cursor ledger; default 50000.
	CursorMaxEntriesPerLedger int64
	// CursorChunkSize splits snapshots into entries of at most this many
	// bytes; default 1 MiB.
	CursorChunkSize int
	// CursorMaxStateBytes caps a snapshot; acks beyond it are kept in
	// memory only (lost on restart, so redelivered) and logged at error
	// level; default 64 MiB.
	CursorMaxStateBytes int
	// CursorMaxInlineBytes caps the state written into the cursor node
	// when no cursor ledger can be created; default 64 KiB.
	CursorMaxInlineBytes int
	// MaxAddRetries is how often one add is re-sent to a new ledger after
	// a write error; default 3.
	MaxAddRetries int
	// Offload is the tiered-storage policy (zero: no automatic offload;
	// see OffloadPolicy).
	Offload OffloadPolicy
	// Quorum is the E/Qw/Qa of the ledgers this managed ledger creates
	// (zero: the ledger store's defaults; quorum.go).
	Quorum Quorum
	// Placement is the bookie groups of the ledgers this managed ledger
	// creates (a namespace's bookie affinity group; zero: any bookie).
	Placement Placement
}

// EnsureDefaults fills zero fields with defaults.
func (c *Config) EnsureDefaults() {
	def := func(p *int64, v int64) {
		if *p == 0 {
			*p = v
		}
	}
	defD := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	defI := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&c.MaxEntriesPerLedger, 50000)
	def(&c.MaxSizePerLedger, 2<<30)
	defD(&c.MaxLedgerRolloverTime, 4*time.Hour)
	defD(&c.MinLedgerRolloverTime, 10*time.Minute)
	defD(&c.TrimInterval, time.Minute)
	defD(&c.CursorPersistInterval, 100*time.Millisecond)
	def(&c.CursorSnapshotMinBytes, 64<<10)
	def(&c.CursorMaxEntriesPerLedger, 50000)
	defI(&c.CursorChunkSize, 1<<20)
	defI(&c.CursorMaxStateBytes, 64<<20)
	defI(&c.CursorMaxInlineBytes, 64<<10)
	defI(&c.MaxAddRetries, 3)
}

// Validate reports an unusable configuration.
func (c *Config) Validate() error {
	switch {
	case c.MaxEntriesPerLedger < 1, c.MaxSizePerLedger < 1:
		return errors.New("mledger: ledger size limits must be positive")
	case c.RetentionTime < -1:
		return errors.New("mledger: RetentionTime must be >= -1")
	case c.RetentionSize < -1:
		return errors.New("mledger: RetentionSize must be >= -1")
	case c.CursorChunkSize < 64:
		return errors.New("mledger: CursorChunkSize too small")
	case c.MaxAddRetries < 0:
		return errors.New("mledger: negative MaxAddRetries")
	}
	return nil
}
