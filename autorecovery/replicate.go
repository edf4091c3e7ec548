package autorecovery

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/protocol/bkproto"
)

// Replicator copies the fragments of a ledger held by lost bookies to new
// bookies and updates the ledger's ensembles. The worker and the shell's
// recover command use it. Safe for concurrent use on different ledgers.
type Replicator struct {
	store   metadata.Store
	lc      *ledger.Client
	bookies ledger.BookieResolver
	opts    Options
	pace    pacer
}

// NewReplicator returns a replicator. opts is completed with
// EnsureDefaults.
func NewReplicator(store metadata.Store, lc *ledger.Client, bookies ledger.BookieResolver, opts Options) (*Replicator, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Replicator{store: store, lc: lc, bookies: bookies, opts: opts, pace: pacer{rate: opts.EntriesPerSecond}}, nil
}

// Result describes one ReplicateLedger run.
type Result struct {
	// Deleted: the ledger no longer exists; nothing to do.
	Deleted bool
	// Lost are the unavailable bookies found in the ledger's ensembles
	// when the run started (empty: healthy).
	Lost []string
	// Recovered: the ledger was open and was fenced and closed first.
	Recovered bool
	// Replaced counts the (segment, bookie) slots given a new bookie;
	// Copied the entries copied.
	Replaced, Copied int
	// Remaining are the lost bookies still in the ensembles after the run
	// (the last segment of a ledger left open, see ErrOpenLedger).
	Remaining []string
}

// ReplicateLedger re-replicates ledger id (docs/replication.md section 6): it
// finds the segments holding unavailable bookies, copies the entries each
// such bookie held from surviving replicas to a writable bookie outside the
// segment, and CAS-updates the segment in the metadata. A ledger still OPEN
// whose last segment holds a lost bookie is first fenced and recovered
// (ledger.Client.Open) if openSince is at least OpenLedgerGrace ago;
// otherwise its earlier segments are repaired and ErrOpenLedger returned.
//
// onCopied, if not nil, is called after each entry copied (progress).
func (r *Replicator) ReplicateLedger(ctx context.Context, id int64, openSince time.Time, onCopied func()) (Result, error) {
	var res Result
	m, _, err := r.lc.Metadata(ctx, id)
	if errors.Is(err, ledger.ErrNoSuchLedger) {
		res.Deleted = true
		return res, nil
	}
	if err != nil {
		return res, err
	}
	reg, err := ListBookies(ctx, r.store)
	if err != nil {
		return res, err
	}
	res.Lost = LostIn(&m, reg)
	if len(res.Lost) == 0 {
		return res, nil
	}
	lastLost := slices.ContainsFunc(m.Last().Bookies, func(b string) bool { return !reg.Available(b) })
	if m.State != ledger.StateClosed && lastLost {
		if time.Since(openSince) >= r.opts.OpenLedgerGrace {
			r.opts.Logger.Info("autorecovery: fencing open ledger", "ledger", id, "lost", res.Lost)
			if _, err := r.lc.Open(ctx, id); err != nil {
				return res, fmt.Errorf("autorecovery: recovering ledger %d: %w", id, err)
			}
			res.Recovered = true
			if m, _, err = r.lc.Metadata(ctx, id); err != nil {
				return res, err
			}
		}
	}
	var firstErr error
	for i := range m.Ensembles {
		if m.State != ledger.StateClosed && i == len(m.Ensembles)-1 {
			break // the writer's segment: only after recovery
		}
		seg := m.Ensembles[i]
		last := m.LastEntryID
		if i+1 < len(m.Ensembles) {
			last = m.Ensembles[i+1].FirstEntry - 1
		}
		for j, b := range seg.Bookies {
			if reg.Available(b) {
				continue
			}
			n, err := r.replaceSlot(ctx, id, &m, i, j, seg.FirstEntry, last, reg, onCopied)
			res.Copied += n
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			res.Replaced++
		}
	}
	if m2, _, err := r.lc.Metadata(ctx, id); err == nil {
		res.Remaining = LostIn(&m2, reg)
		if firstErr == nil && len(res.Remaining) > 0 && m2.State != ledger.StateClosed {
			firstErr = fmt.Errorf("%w: ledger %d, last ensemble %v", ErrOpenLedger, id, m2.Last().Bookies)
		}
	} else if !errors.Is(err, ledger.ErrNoSuchLedger) && firstErr == nil {
		firstErr = err
	}
	return res, firstErr
}

// replaceSlot copies entries first..last of ensemble position j of segment
// i (those whose write set holds j) to a new bookie and writes it into the
// metadata. It updates *m to the metadata written.
func (r *Replicator) replaceSlot(ctx context.Context, id int64, m *ledger.Metadata, i, j int, first, last int64, reg Bookies, onCopied func()) (int, error) {
	seg := m.Ensembles[i]
	lost := seg.Bookies[j]
	var cand []string
	for _, b := range reg.Writable {
		if !slices.Contains(seg.Bookies, b) && reg.Available(b) {
			cand = append(cand, b)
		}
	}
	if len(cand) == 0 {
		return 0, fmt.Errorf("%w: ledger %d segment %d (ensemble %v)", ErrNoTarget, id, seg.FirstEntry, seg.Bookies)
	}
	target := cand[rand.IntN(len(cand))]
	n, err := r.copyEntries(ctx, id, m, seg, j, first, last, reg, target, onCopied)
	if err != nil {
		return n, err
	}
	// CAS the replacement in; the ledger package re-validates the segment
	// against the current record.
	cur, _, err := r.lc.ReplaceBookie(ctx, id, ledger.Fragment{First: seg.FirstEntry, Last: last, Pos: j}, lost, target)
	if err != nil {
		return n, fmt.Errorf("autorecovery: ledger %d segment %d: %w", id, seg.FirstEntry, err)
	}
	*m = cur
	r.opts.Logger.Info("autorecovery: replaced bookie", "ledger", id, "segment", seg.FirstEntry, "lost", lost, "new", target, "entries", n)
	return n, nil
}

// copyEntries reads each entry of position j from a surviving replica and
// sends it to target as a recovery add, Window at a time.
func (r *Replicator) copyEntries(ctx context.Context, id int64, m *ledger.Metadata, seg ledger.Segment, j int, first, last int64, reg Bookies, target string, onCopied func()) (int, error) {
	tc, err := r.bookies.Client(target)
	if err != nil {
		return 0, err
	}
	key := ledger.MasterKey(m.Password)
	sem := make(chan struct{}, r.opts.Window)
	var mu sync.Mutex
	var addErr error
	var wg sync.WaitGroup
	copied := 0
	for e := first; e <= last; e++ {
		if !m.InWriteSet(e, j) {
			continue
		}
		if err := r.pace.wait(ctx); err != nil {
			addErr = err
			break
		}
		frame, err := r.readSurvivor(ctx, id, m, seg, j, e, reg)
		if err != nil {
			mu.Lock()
			addErr = err
			mu.Unlock()
			break
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			mu.Lock()
			addErr = ctx.Err()
			mu.Unlock()
		}
		mu.Lock()
		stop := addErr != nil
		mu.Unlock()
		if stop {
			break
		}
		wg.Add(1)
		tc.AddEntry(id, e, key, frame, true, func(err error) {
			defer wg.Done()
			<-sem
			mu.Lock()
			defer mu.Unlock()
			if err != nil && addErr == nil {
				addErr = fmt.Errorf("autorecovery: ledger %d entry %d to %s: %w", id, e, target, err)
			}
			if err == nil {
				copied++
				if onCopied != nil {
					onCopied()
				}
			}
		})
	}
	wg.Wait()
	return copied, addErr
}

// readSurvivor returns entry e's frame from a replica other than position
// j, verifying digest and ids.
func (r *Replicator) readSurvivor(ctx context.Context, id int64, m *ledger.Metadata, seg ledger.Segment, j int, e int64, reg Bookies) ([]byte, error) {
	var errs []error
	missing := 0
	var order []int
	for k := 0; k < m.WriteQuorum; k++ {
		if idx := int((e + int64(k)) % int64(m.EnsembleSize)); idx != j {
			order = append(order, idx)
		}
	}
	order = append(order, j) // last resort: a decommissioned bookie still serves reads
	for _, idx := range order {
		b := seg.Bookies[idx]
		registered := slices.Contains(reg.Writable, b) || slices.Contains(reg.ReadOnly, b)
		if !registered {
			continue // lost
		}
		bc, err := r.bookies.Client(b)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, r.opts.RequestTimeout)
		frame, err := bc.ReadEntry(rctx, id, e, false, nil)
		cancel()
		if err == nil {
			h, _, derr := bkproto.DecodeEntry(frame)
			if derr == nil && (h.LedgerID != id || h.EntryID != e) {
				derr = fmt.Errorf("%w: got %d/%d", bkproto.ErrCorrupt, h.LedgerID, h.EntryID)
			}
			if derr == nil {
				return frame, nil
			}
			err = derr
		}
		if errors.Is(err, bkproto.ErrNoEntry) || errors.Is(err, bkproto.ErrNoLedger) {
			missing++
		}
		errs = append(errs, fmt.Errorf("bookie %s: %w", b, err))
	}
	if len(errs) == missing {
		return nil, fmt.Errorf("%w: ledger %d entry %d (%v)", ErrEntryLost, id, e, errors.Join(errs...))
	}
	return nil, fmt.Errorf("autorecovery: reading ledger %d entry %d: %w", id, e, errors.Join(errs...))
}

// pacer spaces copies to at most rate per second (0: no limit).
type pacer struct {
	rate int
	mu   sync.Mutex
	next time.Time
}

func (p *pacer) wait(ctx context.Context) error {
	if p.rate <= 0 {
		return ctx.Err()
	}
	p.mu.Lock()
	now := time.Now()
	if p.next.Before(now) {
		p.next = now
	}
	at := p.next
	p.next = p.next.Add(time.Second / time.Duration(p.rate))
	p.mu.Unlock()
	if d := time.Until(at); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
