package ledger

import (
	"fmt"
	"log/slog"
	"time"
)

// Options configures a Client. Call EnsureDefaults then Validate (NewClient
// does both).
type Options struct {
	// Logger receives the client's logs (default: discard).
	Logger *slog.Logger
	// Bookies, if set, is the fixed set of bookie ids placement picks from
	// (standalone). Otherwise it lists the writable bookies registered
	// under AvailablePath.
	Bookies []string
	// ReadOnly, with Bookies, reports whether a bookie of that fixed set
	// currently refuses writes (the standalone's in-process bookie on a
	// full disk): placement skips it, as it skips bookies registered
	// under ReadOnlyPath, so no ledger is created on it. Nil: none is.
	ReadOnly func(id string) bool
	// ReadTimeout bounds one bookie read, fence or LAC request (default
	// 10 s).
	ReadTimeout time.Duration
	// SpeculativeReadTimeout: a read not answered within it is also sent
	// to the next replica (default 100 ms; negative disables).
	SpeculativeReadTimeout time.Duration
	// ReadParallelism is how many entries one range read fetches at once
	// (default 16).
	ReadParallelism int
	// ExplicitLACInterval, if positive, makes write handles send their LAC
	// to the bookies of the current ensemble (WRITE_LAC) at this period
	// whenever it advanced since the last time, so readers opening without
	// recovery see the last entry even when the writer goes idle (the
	// piggybacked LAC lags one entry). Default 0: off, as in BookKeeper.
	ExplicitLACInterval time.Duration
	// MetadataTimeout bounds metadata updates made in the background
	// (ensemble changes; default 30 s).
	MetadataTimeout time.Duration
}

// EnsureDefaults fills unset fields.
func (o *Options) EnsureDefaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = 10 * time.Second
	}
	if o.SpeculativeReadTimeout == 0 {
		o.SpeculativeReadTimeout = 100 * time.Millisecond
	}
	if o.ReadParallelism == 0 {
		o.ReadParallelism = 16
	}
	if o.MetadataTimeout == 0 {
		o.MetadataTimeout = 30 * time.Second
	}
}

// Validate reports nonsensical settings.
func (o *Options) Validate() error {
	if o.ReadTimeout < 0 || o.ReadParallelism < 1 || o.MetadataTimeout < 0 {
		return fmt.Errorf("%w: ReadTimeout %v, ReadParallelism %d, MetadataTimeout %v",
			ErrInvalidOptions, o.ReadTimeout, o.ReadParallelism, o.MetadataTimeout)
	}
	return nil
}

// CreateOptions describes a new ledger.
type CreateOptions struct {
	// Ensemble (E), WriteQuorum (Qw), AckQuorum (Qa): E >= Qw >= Qa >= 1,
	// E <= 64. Zero values default to 1.
	Ensemble, WriteQuorum, AckQuorum int
	// Password is hashed into the master key bookies check.
	Password []byte
	// Custom is stored in the metadata as is.
	Custom map[string][]byte
	// Affinity restricts the ledger's bookies (first ensemble and
	// replacements) to groups of the rack information (affinity.go);
	// nil: any writable bookie.
	Affinity *Affinity
}

func (o *CreateOptions) ensureDefaults() {
	if o.Ensemble == 0 {
		o.Ensemble = 1
	}
	if o.WriteQuorum == 0 {
		o.WriteQuorum = min(o.Ensemble, max(o.AckQuorum, 1))
	}
	if o.AckQuorum == 0 {
		o.AckQuorum = o.WriteQuorum
	}
}

func (o *CreateOptions) validate() error {
	if !(o.Ensemble >= o.WriteQuorum && o.WriteQuorum >= o.AckQuorum && o.AckQuorum >= 1) || o.Ensemble > 64 {
		return fmt.Errorf("%w: E=%d Qw=%d Qa=%d", ErrInvalidOptions, o.Ensemble, o.WriteQuorum, o.AckQuorum)
	}
	return nil
}
