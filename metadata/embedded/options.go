package embedded

import (
	"errors"
	"log/slog"
	"time"
)

// Options configures Open. The zero value is usable.
type Options struct {
	// Logger receives warnings; nil discards them.
	Logger *slog.Logger
	// LockTimeout bounds the wait for the file lock held by another process
	// (default 5 s). The store is single-process; handles opened in the same
	// process share one database.
	LockTimeout time.Duration
	// MaxBatch caps how many queued writes are committed in one transaction
	// (one pair of fsyncs). Default 512.
	MaxBatch int
}

// EnsureDefaults fills unset fields.
func (o *Options) EnsureDefaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.LockTimeout == 0 {
		o.LockTimeout = 5 * time.Second
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = 512
	}
}

// Validate reports nonsensical settings.
func (o *Options) Validate() error {
	if o.LockTimeout < 0 {
		return errors.New("embedded: negative LockTimeout")
	}
	if o.MaxBatch < 1 {
		return errors.New("embedded: MaxBatch must be at least 1")
	}
	return nil
}
