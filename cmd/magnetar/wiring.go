package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/mledger"
)

// ledgerStore adapts the ledger client to the managed ledger's LedgerStore:
// every ledger a managed ledger creates gets the configured E/Qw/Qa.
type ledgerStore struct {
	c    *ledger.Client
	opts ledger.CreateOptions
}

var _ mledger.LedgerStore = ledgerStore{}

func (s ledgerStore) Create(ctx context.Context) (mledger.WriteLedger, error) {
	h, err := s.c.Create(ctx, s.opts)
	if err != nil {
		return nil, err
	}
	return h, nil
}

func (s ledgerStore) Open(ctx context.Context, id int64) (mledger.ReadLedger, error) {
	r, err := s.c.Open(ctx, id)
	if err != nil {
		return nil, err
	}
	return r, nil
}

func (s ledgerStore) Delete(ctx context.Context, id int64) error { return s.c.Delete(ctx, id) }

// newLogger returns the process logger: structured text (or JSON) on stderr
// at the given level.
func newLogger(level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch strings.ToLower(format) {
	case "text", "":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}
