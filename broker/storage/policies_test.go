package storage

import (
	"context"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/policy"
)

// TestApplyPersistence: a persistence policy sets the managed ledger's
// quorum and spaces cursor persists by 1/managedLedgerMaxMarkDeleteRate.
func TestApplyPersistence(t *testing.T) {
	cfg := mledger.Config{CursorPersistInterval: 100 * time.Millisecond}
	applyPersistence(context.Background(), &cfg)
	if cfg.Quorum != (mledger.Quorum{}) || cfg.CursorPersistInterval != 100*time.Millisecond {
		t.Fatalf("no policy changed the config: %+v", cfg)
	}
	p := &policy.PersistencePolicies{BookkeeperEnsemble: 3, BookkeeperWriteQuorum: 2, BookkeeperAckQuorum: 2, ManagedLedgerMaxMarkDeleteRate: 2}
	applyPersistence(WithLedgerPolicies(context.Background(), &policy.Resolved{ResolvedExtras: policy.ResolvedExtras{Persistence: p}}), &cfg)
	if cfg.Quorum != (mledger.Quorum{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2}) || cfg.CursorPersistInterval != 500*time.Millisecond {
		t.Fatalf("config %+v", cfg)
	}
	for rate, want := range map[float64]time.Duration{0: 0, -1: 0, 1e-9: time.Hour, 1000: time.Millisecond} {
		if got := markDeleteInterval(rate); got != want {
			t.Errorf("markDeleteInterval(%v) = %v, want %v", rate, got, want)
		}
	}
}
