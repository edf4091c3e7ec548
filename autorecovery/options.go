package autorecovery

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"
)

// Options configures the auditor and the replication worker. Call
// EnsureDefaults then Validate (Start does both).
type Options struct {
	// ID names this participant in the election and lock nodes (default
	// "hostname-pid").
	ID string
	// LostBookieDelay: the auditor marks a lost bookie's ledgers this long
	// after it disappeared from /ledgers/available (default 0, as in
	// BookKeeper's lostBookieRecoveryDelay). Negative is refused.
	LostBookieDelay time.Duration
	// AuditInterval is the period of the auditor's full check, on top of
	// the check run on every change of the registered bookies (default
	// 1 h).
	AuditInterval time.Duration
	// BookieCheckInterval is how often the auditor lists the registered
	// bookies without a watch event, auditing when the set changed
	// (default 10 s): a safety net should a watch event be missed.
	BookieCheckInterval time.Duration
	// OpenLedgerGrace: a ledger still OPEN with a lost bookie in its last
	// ensemble is fenced and recovered by the worker only once it has been
	// marked this long (default 30 s, openLedgerRereplicationGracePeriod).
	OpenLedgerGrace time.Duration
	// PollInterval is how often the worker rescans the under-replicated
	// ledgers without a watch event (default 10 s).
	PollInterval time.Duration
	// MinBackoff and MaxBackoff bound the per-ledger retry delay after a
	// failed attempt; it doubles on each failure (defaults 1 s and 5 min).
	MinBackoff, MaxBackoff time.Duration
	// Window is how many recovery adds one copy keeps in flight (default
	// 64).
	Window int
	// EntriesPerSecond caps the copy rate of one worker (0: unlimited), so
	// re-replication does not crowd out foreground traffic.
	EntriesPerSecond int
	// RequestTimeout bounds one bookie read or add of a copy (default 10 s).
	RequestTimeout time.Duration
	// DisableAuditor and DisableWorker turn off either part of a Service.
	DisableAuditor, DisableWorker bool
	// Logger receives the service's logs (default: discard).
	Logger *slog.Logger
}

// EnsureDefaults fills unset fields.
func (o *Options) EnsureDefaults() {
	if o.ID == "" {
		h, _ := os.Hostname()
		o.ID = h + "-" + strconv.Itoa(os.Getpid())
	}
	if o.AuditInterval == 0 {
		o.AuditInterval = time.Hour
	}
	if o.BookieCheckInterval == 0 {
		o.BookieCheckInterval = 10 * time.Second
	}
	if o.OpenLedgerGrace == 0 {
		o.OpenLedgerGrace = 30 * time.Second
	}
	if o.PollInterval == 0 {
		o.PollInterval = 10 * time.Second
	}
	if o.MinBackoff == 0 {
		o.MinBackoff = time.Second
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = 5 * time.Minute
	}
	if o.Window == 0 {
		o.Window = 64
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports nonsensical settings.
func (o *Options) Validate() error {
	switch {
	case o.LostBookieDelay < 0, o.AuditInterval <= 0, o.BookieCheckInterval <= 0, o.OpenLedgerGrace < 0, o.PollInterval <= 0:
		return fmt.Errorf("%w: LostBookieDelay %v, AuditInterval %v, OpenLedgerGrace %v, PollInterval %v",
			ErrInvalidOptions, o.LostBookieDelay, o.AuditInterval, o.OpenLedgerGrace, o.PollInterval)
	case o.MinBackoff <= 0 || o.MaxBackoff < o.MinBackoff:
		return fmt.Errorf("%w: backoff %v..%v", ErrInvalidOptions, o.MinBackoff, o.MaxBackoff)
	case o.Window < 1 || o.EntriesPerSecond < 0 || o.RequestTimeout <= 0:
		return fmt.Errorf("%w: Window %d, EntriesPerSecond %d, RequestTimeout %v", ErrInvalidOptions, o.Window, o.EntriesPerSecond, o.RequestTimeout)
	}
	return nil
}
