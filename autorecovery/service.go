package autorecovery

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata"
)

// Service runs an auditor candidate and a replication worker over one
// metadata store session. Start it with Start; Close stops both and waits
// for them.
type Service struct {
	store metadata.Store
	eph   metadata.Ephemeraler
	lc    *ledger.Client
	rep   *Replicator
	opts  Options
	token string // election value: ID and a random suffix

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	electionKick chan struct{} // election node changed or session expired
	bookiesKick  chan struct{} // registrations or decommission requests changed
	marksKick    chan struct{} // marks changed

	leader  atomic.Bool
	audits  atomic.Int64
	handled atomic.Int64
	errs    atomic.Int64
}

// Stats are counters of a Service.
type Stats struct {
	Leader bool  // this service is the auditor now
	Audits int64 // audits run as auditor
	// Repaired counts ledgers the worker unmarked; Failed its failed
	// attempts (retried after a backoff).
	Repaired, Failed int64
}

// Start starts the service. store must implement metadata.Ephemeraler and
// metadata.Watcher; bookies resolves the bookie ids found in ledger
// metadata (the same resolver as lc's).
func Start(store metadata.Store, lc *ledger.Client, bookies ledger.BookieResolver, opts Options) (*Service, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	eph, ok := store.(metadata.Ephemeraler)
	if !ok {
		return nil, fmt.Errorf("%w: store has no ephemeral nodes", ErrInvalidOptions)
	}
	w, ok := store.(metadata.Watcher)
	if !ok {
		return nil, fmt.Errorf("%w: store has no watches", ErrInvalidOptions)
	}
	rep, err := NewReplicator(store, lc, bookies, opts)
	if err != nil {
		return nil, err
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	s := &Service{
		store: store, eph: eph, lc: lc, rep: rep, opts: opts,
		token:        opts.ID + "/" + hex.EncodeToString(rnd[:]),
		electionKick: make(chan struct{}, 1),
		bookiesKick:  make(chan struct{}, 1),
		marksKick:    make(chan struct{}, 1),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	for _, p := range []string{Root, MarksPath, LocksPath, DecommissionPath, ledger.AvailablePath} {
		if _, err := store.Put(ctx, p, nil, metadata.NotExists); err != nil && !errors.Is(err, metadata.ErrExists) {
			s.cancel()
			return nil, fmt.Errorf("autorecovery: creating %s: %w", p, err)
		}
	}
	kick := func(ch chan struct{}) func(metadata.Event) {
		return func(ev metadata.Event) {
			s.opts.Logger.Debug("autorecovery: watch event", "path", ev.Path, "type", ev.Type)
			notify(ch)
			if ev.Type == metadata.EventSessionExpired {
				notify(s.electionKick)
				notify(s.bookiesKick)
				notify(s.marksKick)
			}
		}
	}
	watches := []struct {
		path string
		ch   chan struct{}
	}{
		{ElectionPath, s.electionKick},
		{ledger.AvailablePath, s.bookiesKick},
		{ledger.ReadOnlyPath, s.bookiesKick},
		{DecommissionPath, s.bookiesKick},
		{MarksPath, s.marksKick},
	}
	for _, wt := range watches {
		if err := w.Watch(s.ctx, wt.path, kick(wt.ch)); err != nil {
			s.cancel()
			return nil, fmt.Errorf("autorecovery: watching %s: %w", wt.path, err)
		}
	}
	if !opts.DisableAuditor {
		s.wg.Add(1)
		go s.electionLoop()
	}
	if !opts.DisableWorker {
		s.wg.Add(1)
		go s.workerLoop()
	}
	return s, nil
}

// Close stops the auditor and the worker and waits for them; the auditor
// gives up its election node.
func (s *Service) Close() error {
	s.cancel()
	s.wg.Wait()
	return nil
}

// Stats returns the service's counters.
func (s *Service) Stats() Stats {
	return Stats{Leader: s.leader.Load(), Audits: s.audits.Load(), Repaired: s.handled.Load(), Failed: s.errs.Load()}
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// wait blocks until one of chans fires, d passes (d <= 0: no timer) or
// the service stops; false on stop.
func (s *Service) wait(d time.Duration, chans ...chan struct{}) bool {
	var timer <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	var a, b chan struct{}
	if len(chans) > 0 {
		a = chans[0]
	}
	if len(chans) > 1 {
		b = chans[1]
	}
	select {
	case <-s.ctx.Done():
		return false
	case <-a:
	case <-b:
	case <-timer:
	}
	return true
}

// electionLoop competes for ElectionPath and audits while it holds it.
func (s *Service) electionLoop() {
	defer s.wg.Done()
	log := s.opts.Logger
	for s.ctx.Err() == nil {
		err := s.eph.PutEphemeral(s.ctx, ElectionPath, []byte(s.token))
		switch {
		case err == nil:
			log.Info("autorecovery: elected auditor", "id", s.opts.ID)
			s.leader.Store(true)
			s.lead()
			s.leader.Store(false)
			log.Info("autorecovery: auditor stepped down", "id", s.opts.ID)
		case errors.Is(err, metadata.ErrExists):
			s.wait(s.opts.PollInterval, s.electionKick)
		default:
			if s.ctx.Err() == nil {
				log.Warn("autorecovery: election", "err", err)
			}
			s.wait(s.opts.MinBackoff)
		}
	}
	// Give up the node so that another candidate takes over at once.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if s.stillLeader(ctx) {
		_ = s.store.Delete(ctx, ElectionPath, metadata.AnyVersion)
	}
}

// stillLeader reports whether ElectionPath holds this service's token.
func (s *Service) stillLeader(ctx context.Context) bool {
	b, _, err := s.store.Get(ctx, ElectionPath)
	return err == nil && string(b) == s.token
}

// lead runs audits until leadership is lost or the service stops.
func (s *Service) lead() {
	a := &auditor{s: s, firstMissing: map[string]time.Time{}}
	var due time.Time // next audit without a change: delay or AuditInterval
	lastReg := ""
	for s.ctx.Err() == nil {
		if !s.stillLeader(s.ctx) {
			return
		}
		next, err := a.audit(s.ctx)
		s.audits.Add(1)
		if err != nil && s.ctx.Err() == nil {
			s.opts.Logger.Warn("autorecovery: audit failed", "err", err)
			next = s.opts.MinBackoff
		}
		if next <= 0 || next > s.opts.AuditInterval {
			next = s.opts.AuditInterval
		}
		due = time.Now().Add(next)
		lastReg = a.lastReg
		// Wait for a watch event, the due time, or a change of the
		// registrations seen by the periodic check.
		for s.ctx.Err() == nil {
			d := min(time.Until(due), s.opts.BookieCheckInterval)
			if d <= 0 || s.waitKicked(d, s.bookiesKick, s.electionKick) {
				break
			}
			if reg, err := ListBookies(s.ctx, s.store); err == nil && regKey(reg) != lastReg {
				s.opts.Logger.Info("autorecovery: bookie change found by the periodic check")
				break
			}
		}
	}
}

// regKey is a comparable summary of a registration snapshot.
func regKey(r Bookies) string {
	return fmt.Sprint(r.Writable, r.ReadOnly, r.Decommissioned)
}

// waitKicked waits up to d for one of two channels; true if one fired or
// the service stopped.
func (s *Service) waitKicked(d time.Duration, a, b chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.ctx.Done():
		return true
	case <-a:
		return true
	case <-b:
		return true
	case <-t.C:
		return false
	}
}

// auditor is the state of one term as auditor.
type auditor struct {
	s            *Service
	lastReg      string               // regKey of the last audit's snapshot
	firstMissing map[string]time.Time // bookie → when an audit first found it lost
}

// audit marks every ledger with a copy on a bookie lost for at least
// LostBookieDelay and returns when the next bookie's delay runs out (0:
// none pending).
func (a *auditor) audit(ctx context.Context) (time.Duration, error) {
	s := a.s
	reg, err := ListBookies(ctx, s.store)
	if err != nil {
		return 0, err
	}
	ids, err := s.lc.Ledgers(ctx)
	if err != nil {
		return 0, err
	}
	a.lastReg = regKey(reg)
	now := time.Now()
	var next time.Duration
	seen := map[string]bool{}
	for _, id := range ids {
		m, _, err := s.lc.Metadata(ctx, id)
		if errors.Is(err, ledger.ErrNoSuchLedger) {
			continue
		}
		if err != nil {
			return 0, err
		}
		var due []string
		for _, b := range LostIn(&m, reg) {
			seen[b] = true
			t, ok := a.firstMissing[b]
			if !ok {
				t = now
				a.firstMissing[b] = t
				s.opts.Logger.Info("autorecovery: bookie lost", "bookie", b, "delay", s.opts.LostBookieDelay)
			}
			if left := s.opts.LostBookieDelay - now.Sub(t); left > 0 {
				if next == 0 || left < next {
					next = left
				}
				continue
			}
			due = append(due, b)
		}
		if len(due) > 0 {
			if err := MarkUnderReplicated(ctx, s.store, id, due); err != nil {
				return 0, err
			}
		}
	}
	for b := range a.firstMissing {
		if !seen[b] {
			delete(a.firstMissing, b)
		}
	}
	s.opts.Logger.Debug("autorecovery: audit", "ledgers", len(ids), "bookies", len(reg.Writable)+len(reg.ReadOnly), "lost", len(seen), "took", time.Since(now))
	return next, nil
}

// Audit runs one audit now, as the auditor would with a zero delay, and
// returns the ledgers marked (shell tools; no election).
func Audit(ctx context.Context, store metadata.Store, lc *ledger.Client) ([]int64, error) {
	reg, err := ListBookies(ctx, store)
	if err != nil {
		return nil, err
	}
	ids, err := lc.Ledgers(ctx)
	if err != nil {
		return nil, err
	}
	var marked []int64
	for _, id := range ids {
		m, _, err := lc.Metadata(ctx, id)
		if errors.Is(err, ledger.ErrNoSuchLedger) {
			continue
		}
		if err != nil {
			return marked, err
		}
		if lost := LostIn(&m, reg); len(lost) > 0 {
			if err := MarkUnderReplicated(ctx, store, id, lost); err != nil {
				return marked, err
			}
			marked = append(marked, id)
		}
	}
	return marked, nil
}

// backoff is the retry state of one ledger in the worker.
type backoff struct {
	next  time.Time
	delay time.Duration
}

// workerLoop repairs marked ledgers one at a time, each under its lock.
func (s *Service) workerLoop() {
	defer s.wg.Done()
	retry := map[int64]*backoff{}
	for s.ctx.Err() == nil {
		marks, err := UnderReplicated(s.ctx, s.store)
		if err != nil {
			if s.ctx.Err() == nil {
				s.opts.Logger.Warn("autorecovery: listing marks", "err", err)
			}
			s.wait(s.opts.MinBackoff)
			continue
		}
		for id := range retry {
			if _, ok := marks[id]; !ok {
				delete(retry, id)
			}
		}
		ids := make([]int64, 0, len(marks))
		for id := range marks {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		sleep := s.opts.PollInterval
		for _, id := range ids {
			if s.ctx.Err() != nil {
				return
			}
			if b := retry[id]; b != nil {
				if d := time.Until(b.next); d > 0 {
					sleep = min(sleep, d)
					continue
				}
			}
			done, err := s.handle(id)
			if done {
				delete(retry, id)
				s.handled.Add(1)
				continue
			}
			if err == nil {
				continue // locked by another worker
			}
			s.errs.Add(1)
			b := retry[id]
			if b == nil {
				b = &backoff{}
				retry[id] = b
			}
			switch {
			case errors.Is(err, ErrOpenLedger):
				b.delay = max(s.opts.MinBackoff, time.Until(marks[id].SinceTime().Add(s.opts.OpenLedgerGrace)))
			case errors.Is(err, ErrEntryLost):
				b.delay = s.opts.MaxBackoff
			case b.delay == 0:
				b.delay = s.opts.MinBackoff
			default:
				b.delay = min(2*b.delay, s.opts.MaxBackoff)
			}
			b.next = time.Now().Add(b.delay)
			sleep = min(sleep, b.delay)
			if s.ctx.Err() == nil {
				s.opts.Logger.Warn("autorecovery: ledger not repaired", "ledger", id, "retry", b.delay, "err", err)
			}
		}
		s.wait(sleep, s.marksKick, s.bookiesKick)
	}
}

// handle locks ledger id, repairs it and unmarks it. done: the mark is
// gone; (false, nil): another worker holds the lock.
func (s *Service) handle(id int64) (done bool, err error) {
	ctx := s.ctx
	if err := s.eph.PutEphemeral(ctx, lockPath(id), []byte(s.token)); err != nil {
		if errors.Is(err, metadata.ErrExists) {
			return false, nil
		}
		return false, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.store.Delete(dctx, lockPath(id), metadata.AnyVersion)
	}()
	b, v, err := s.store.Get(ctx, markPath(id))
	if errors.Is(err, metadata.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	mark := decodeMark(b)
	res, err := s.rep.ReplicateLedger(ctx, id, mark.SinceTime(), nil)
	if err != nil {
		return false, err
	}
	if !res.Deleted && len(res.Remaining) > 0 {
		return false, fmt.Errorf("autorecovery: ledger %d still holds %v", id, res.Remaining)
	}
	if res.Replaced > 0 || res.Recovered {
		s.opts.Logger.Info("autorecovery: ledger repaired", "ledger", id, "lost", res.Lost, "replaced", res.Replaced, "copied", res.Copied, "recovered", res.Recovered)
	}
	// Unmark only the mark we read: a newer one (another lost bookie)
	// stays for the next round.
	if err := s.store.Delete(ctx, markPath(id), v); err != nil {
		if errors.Is(err, metadata.ErrNotFound) {
			return true, nil
		}
		if errors.Is(err, metadata.ErrBadVersion) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}
