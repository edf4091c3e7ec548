package tools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/magnetar-mq/magnetar/autorecovery"
	"github.com/magnetar-mq/magnetar/ledger"
)

// Repair summarizes Recover and Decommission.
type Repair struct {
	Bookie    string   `json:"bookie"`
	Ledgers   int      `json:"ledgers"`
	Repaired  []int64  `json:"repaired"`
	Recovered []int64  `json:"recovered,omitempty"` // open ledgers fenced and closed first
	Copied    int      `json:"copied"`
	Failed    []int64  `json:"failed,omitempty"`
	Errors    []string `json:"errors,omitempty"`
}

// Text is a one-line summary.
func (o Repair) Text() string {
	s := fmt.Sprintf("bookie %s: %d ledgers, %d repaired, %d entries copied", o.Bookie, o.Ledgers, len(o.Repaired), o.Copied)
	if len(o.Recovered) > 0 {
		s += fmt.Sprintf(", %d open ledgers fenced", len(o.Recovered))
	}
	if len(o.Failed) > 0 {
		s += fmt.Sprintf(", %d failed: %s", len(o.Failed), strings.Join(o.Errors, "; "))
	}
	return s + "\n"
}

// ledgersOn lists the ledgers with a segment on bookie.
func ledgersOn(ctx context.Context, c Cluster, bookie string) ([]int64, error) {
	ids, err := c.Ledgers.Ledgers(ctx)
	if err != nil {
		return nil, err
	}
	var on []int64
	for _, id := range ids {
		m, _, err := c.Ledgers.Metadata(ctx, id)
		if errors.Is(err, ledger.ErrNoSuchLedger) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if slices.Contains(DescribeLedger(id, &m).Bookies, bookie) {
			on = append(on, id)
		}
	}
	return on, nil
}

// repairBookie re-replicates every ledger with a segment on bookie (which
// must not count as available) from this process, fencing open ledgers at
// once. rate bounds the entries copied per second (0: no limit).
func repairBookie(ctx context.Context, c Cluster, bookie string, rate int, p Progress) (Repair, error) {
	out := Repair{Bookie: bookie, Repaired: []int64{}}
	rep, err := autorecovery.NewReplicator(c.Store, c.Ledgers, c.Resolver, autorecovery.Options{
		OpenLedgerGrace: time.Nanosecond, EntriesPerSecond: rate})
	if err != nil {
		return out, err
	}
	todo, err := ledgersOn(ctx, c, bookie)
	if err != nil {
		return out, err
	}
	out.Ledgers = len(todo)
	p = orNone(p)
	p.Start(int64(len(todo)), "re-replicating "+bookie, false)
	defer p.Finish()
	n := &counter{p: p}
	for _, id := range todo {
		var res autorecovery.Result
		var err error
		for attempt := 0; attempt < 3; attempt++ { // a racing worker may change a segment under us
			if res, err = rep.ReplicateLedger(ctx, id, time.Time{}, nil); err == nil || ctx.Err() != nil {
				break
			}
		}
		n.add(1)
		out.Copied += res.Copied
		if res.Recovered {
			out.Recovered = append(out.Recovered, id)
		}
		if err != nil {
			out.Failed = append(out.Failed, id)
			out.Errors = append(out.Errors, err.Error())
			continue
		}
		if err := autorecovery.Unmark(ctx, c.Store, id); err != nil {
			return out, err
		}
		out.Repaired = append(out.Repaired, id)
	}
	if len(out.Failed) > 0 {
		return out, fmt.Errorf("%d of %d ledgers not repaired (first: %s)", len(out.Failed), len(todo), out.Errors[0])
	}
	return out, nil
}

// Recover re-replicates, from this process, every ledger with a copy on
// a lost bookie: the entries it held are copied to other bookies and the
// ledgers' ensembles updated, ledger by ledger. Open ledgers on it are
// fenced and closed first (their writers roll to new ledgers). The
// bookie must be down (not registered); Decommission moves data off a
// live one.
func Recover(ctx context.Context, c Cluster, bookie string, rate int, p Progress) (Repair, error) {
	s, err := autorecovery.ListBookies(ctx, c.Store)
	if err != nil {
		return Repair{Bookie: bookie}, err
	}
	if s.Available(bookie) {
		return Repair{Bookie: bookie}, fmt.Errorf("bookie %s is registered and serving: nothing is lost (stop it first, or use decommission)", bookie)
	}
	return repairBookie(ctx, c, bookie, rate, p)
}

// Decommission records a decommission request for bookie (its copies
// stop counting; the auditor marks its ledgers), re-replicates each of
// its ledgers from this process (reading from the bookie itself if it
// still serves), checks that no ledger names it any more, and deletes
// the request and its cookie so the id may be reused.
func Decommission(ctx context.Context, c Cluster, bookie string, rate int, p Progress) (Repair, error) {
	if err := autorecovery.RequestDecommission(ctx, c.Store, bookie); err != nil {
		return Repair{Bookie: bookie}, err
	}
	out, err := repairBookie(ctx, c, bookie, rate, p)
	if err == nil {
		var left []int64
		if left, err = ledgersOn(ctx, c, bookie); err == nil && len(left) > 0 {
			err = fmt.Errorf("ledger %d still has a segment on %s", left[0], bookie)
		}
	}
	if err == nil {
		err = autorecovery.FinishDecommission(ctx, c.Store, bookie)
	}
	return out, err
}
