package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/protocol/bkproto"
)

// Open opens ledger id for reading, running recovery if it is not CLOSED
// (docs/replication.md section 5): mark IN_RECOVERY, fence the last ensemble
// (fence-read of entry -1, enough answers in every write set), read forward
// from the highest LAC found and re-replicate every entry that exists,
// then close the ledger at the last one. The writer, if alive, gets
// ErrFenced from then on.
//
// Recovery is idempotent and restartable: ErrRecoveryFailed (too few
// bookies answered) leaves the ledger IN_RECOVERY, never closed short, and
// Open may simply be called again.
func (c *Client) Open(ctx context.Context, id int64) (*ReadHandle, error) {
	m, v, err := readMetadata(ctx, c.store, id)
	if err != nil {
		return nil, err
	}
	for m.State == StateOpen { // step 1: mark
		m2 := m.clone()
		m2.State = StateInRecovery
		v2, err := c.store.Put(ctx, LedgerPath(id), encodeMetadata(&m2), v)
		if err == nil {
			m, v = m2, v2
			break
		}
		if !errors.Is(err, metadata.ErrBadVersion) {
			return nil, err
		}
		if m, v, err = readMetadata(ctx, c.store, id); err != nil {
			return nil, err
		}
	}
	key := MasterKey(m.Password)
	if m.State == StateClosed {
		return &ReadHandle{c: c, id: id, key: key, meta: m, lac: m.LastEntryID, length: m.Length}, nil
	}
	lac, err := c.fence(ctx, id, &m, key) // steps 2 and 3
	if err != nil {
		return nil, err
	}
	first := lac + 1
	lac, length, newEns, err := c.recoverForward(ctx, id, &m, key, lac) // step 4
	if err != nil {
		return nil, err
	}
	for { // step 5: close
		m2 := m.clone()
		m2.State, m2.LastEntryID, m2.Length = StateClosed, lac, length
		if newEns != nil {
			if last := &m2.Ensembles[len(m2.Ensembles)-1]; last.FirstEntry == first {
				last.Bookies = newEns
			} else {
				m2.Ensembles = append(m2.Ensembles, Segment{FirstEntry: first, Bookies: newEns})
			}
		}
		_, err := c.store.Put(ctx, LedgerPath(id), encodeMetadata(&m2), v)
		if err == nil {
			c.opts.Logger.Info("ledger: recovered", "ledger", id, "lastEntryId", lac, "length", length)
			return &ReadHandle{c: c, id: id, key: key, meta: m2, lac: lac, length: length}, nil
		}
		if !errors.Is(err, metadata.ErrBadVersion) {
			return nil, err
		}
		if m, v, err = readMetadata(ctx, c.store, id); err != nil {
			return nil, err
		}
		if m.State == StateClosed {
			if m.LastEntryID < lac {
				return nil, fmt.Errorf("%w: ledger %d closed by another client at %d, recovered up to %d", ErrRecoveryFailed, id, m.LastEntryID, lac)
			}
			return &ReadHandle{c: c, id: id, key: key, meta: m, lac: m.LastEntryID, length: m.Length}, nil
		}
	}
}

// fence sends the fence-read of entry -1 to every bookie of the last
// ensemble and returns the LAC to recover from: the highest piggybacked
// LAC answered, at least the last ensemble's first entry - 1. It fails
// unless every write set has Qw-Qa+1 answers (OK, ENOENTRY or ENOLEDGER).
func (c *Client) fence(ctx context.Context, id int64, m *Metadata, key []byte) (int64, error) {
	last := m.Last()
	type answer struct {
		ok    bool
		entry []byte
		err   error
	}
	answers := make([]answer, len(last.Bookies))
	var wg sync.WaitGroup
	for i, b := range last.Bookies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bc, err := c.bookies.Client(b)
			if err != nil {
				answers[i].err = err
				return
			}
			rctx, cancel := context.WithTimeout(ctx, c.opts.ReadTimeout)
			defer cancel()
			v, err := bc.ReadEntry(rctx, id, -1, true, key)
			switch {
			case err == nil:
				answers[i] = answer{ok: true, entry: v}
			case errors.Is(err, bkproto.ErrNoEntry), errors.Is(err, bkproto.ErrNoLedger):
				answers[i] = answer{ok: true}
			default:
				answers[i].err = fmt.Errorf("bookie %s: %w", b, err)
			}
		}()
	}
	wg.Wait()
	var errs []error
	for _, a := range answers {
		if errors.Is(a.err, bkproto.ErrUnauthorized) {
			return 0, fmt.Errorf("%w: fencing ledger %d: %w", ErrUnauthorized, id, a.err)
		}
		if a.err != nil {
			errs = append(errs, a.err)
		}
	}
	ok := make([]bool, len(answers))
	for i, a := range answers {
		ok[i] = a.ok
	}
	if start, n := fenceQuorum(ok, m.WriteQuorum, m.AckQuorum); start >= 0 {
		return 0, fmt.Errorf("%w: ledger %d: write set at %d has %d fence answers, need %d: %w",
			ErrRecoveryFailed, id, start, n, m.WriteQuorum-m.AckQuorum+1, errors.Join(errs...))
	}
	lac := last.FirstEntry - 1
	for _, a := range answers {
		if a.entry == nil {
			continue
		}
		if h, _, err := bkproto.DecodeEntry(a.entry); err == nil && h.LedgerID == id {
			lac = max(lac, h.LAC)
		}
	}
	return lac, nil
}

// fenceQuorum applies docs/replication.md section 5's rule to the fence answers of an ensemble
// (answered[i]: position i answered OK, ENOENTRY or ENOLEDGER): fencing is
// effective once every write set has at least Qw-Qa+1 answers. It returns
// -1 if so, else the first write set (by its start position) short of it
// and its answer count.
func fenceQuorum(answered []bool, wq, aq int) (start, n int) {
	need := wq - aq + 1
	for start := range answered {
		n := 0
		for _, idx := range writeSet(int64(start), len(answered), wq) {
			if answered[idx] {
				n++
			}
		}
		if n < need {
			return start, n
		}
	}
	return -1, 0
}

// entryOutcome is recoveryRead's verdict on one entry.
type entryOutcome int

const (
	entryUndecided entryOutcome = iota // wait for more answers
	entryExists                        // a valid copy was found: re-replicate it
	entryAbsent                        // Qw-Qa+1 bookies lack it: the ledger ends before it
	entryUnknown                       // every answer is in and neither holds: fail
)

// decideEntry decides on one entry of a Qw-bookie write set from the
// answers so far: valid copies found, "no such entry/ledger" answers, and
// other failures.
func decideEntry(found, missing, failed, wq, aq int) entryOutcome {
	switch {
	case found > 0:
		return entryExists
	case missing >= wq-aq+1:
		return entryAbsent
	case found+missing+failed >= wq:
		return entryUnknown
	}
	return entryUndecided
}

// recoverForward reads entries after lac with fencing recovery reads and
// re-replicates each one found with recovery adds (recoveryWrite). It
// returns the last entry id, the ledger length, and, if a bookie had to be
// replaced during the adds, the new last ensemble (nil otherwise).
func (c *Client) recoverForward(ctx context.Context, id int64, m *Metadata, key []byte, lac int64) (int64, int64, []string, error) {
	length := int64(-1)
	first := lac + 1
	var frames [][]byte
	for e := first; ; e++ {
		frame, found, err := c.recoveryRead(ctx, id, m, key, e)
		if err != nil {
			return 0, 0, nil, err
		}
		if !found {
			break
		}
		h, _ := bkproto.DecodeEntryHeader(frame)
		frames = append(frames, frame)
		lac, length = e, h.Length
	}
	newEns, err := c.recoveryWrite(ctx, id, m, key, first, frames)
	if err != nil {
		return 0, 0, nil, err
	}
	if length < 0 {
		length = 0
		if lac >= 0 {
			_, h, err := c.readEntry(ctx, id, m, key, lac, false)
			if err != nil {
				return 0, 0, nil, fmt.Errorf("%w: reading entry %d of ledger %d: %w", ErrRecoveryFailed, lac, id, err)
			}
			length = h.Length
		}
	}
	return lac, length, newEns, nil
}

// recoveryWrite sends the recovery adds of entries first.. (frames) to the
// write sets of the last ensemble, all in flight at once, and waits for
// every answer. A bookie that fails is replaced, locally, by a writable
// bookie outside the ensemble (docs/replication.md section 5 step 4), and every entry of its
// positions is sent to the replacement; the changed ensemble is returned
// for the close to record, keyed at first. No replacement available, or
// an EUA, fails the recovery.
func (c *Client) recoveryWrite(ctx context.Context, id int64, m *Metadata, key []byte, first int64, frames [][]byte) ([]string, error) {
	if len(frames) == 0 {
		return nil, nil
	}
	ens := slices.Clone(m.Last().Bookies)
	changed := false
	failedBookies := map[string]bool{}
	acked := make([]uint64, len(frames)) // bit per ensemble position
	for round := 0; ; round++ {
		type answer struct {
			i, idx int
			err    error
		}
		var sends int
		ch := make(chan answer, len(frames)*m.WriteQuorum)
		for i, f := range frames {
			e := first + int64(i)
			for _, idx := range writeSet(e, m.EnsembleSize, m.WriteQuorum) {
				if acked[i]&(1<<idx) != 0 {
					continue
				}
				sends++
				b := ens[idx]
				bc, err := c.bookies.Client(b)
				if err != nil {
					ch <- answer{i, idx, err}
					continue
				}
				bc.AddEntry(id, e, key, f, true, func(err error) {
					if err != nil {
						err = fmt.Errorf("bookie %s: %w", b, err)
					}
					ch <- answer{i, idx, err}
				})
			}
		}
		failed := map[int]error{}
		for range sends {
			var a answer
			select {
			case a = <-ch:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if a.err == nil {
				acked[a.i] |= 1 << a.idx
				continue
			}
			if errors.Is(a.err, bkproto.ErrUnauthorized) {
				return nil, fmt.Errorf("%w: recovery add: %w", ErrUnauthorized, a.err)
			}
			failed[a.idx] = a.err
		}
		if len(failed) == 0 {
			break
		}
		avail, err := c.WritableBookies(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: listing bookies: %w", ErrRecoveryFailed, err)
		}
		for idx := range failed {
			failedBookies[ens[idx]] = true
		}
		repl, err := pickBookies(avail, len(failed), func(b string) bool { return failedBookies[b] || slices.Contains(ens, b) })
		if err != nil {
			var errs []error
			for _, e := range failed {
				errs = append(errs, e)
			}
			return nil, fmt.Errorf("%w: recovery adds failed and no replacement: %w: %w", ErrRecoveryFailed, err, errors.Join(errs...))
		}
		n := 0
		for idx := range failed {
			c.opts.Logger.Warn("ledger: replacing bookie during recovery", "ledger", id, "bookie", ens[idx], "with", repl[n], "err", failed[idx])
			ens[idx] = repl[n]
			n++
			for i := range acked {
				acked[i] &^= 1 << idx
			}
		}
		changed = true
	}
	if !changed {
		return nil, nil
	}
	return ens, nil
}

// recoveryRead asks every bookie of entry e's write set for it with the
// fence flag. found: some bookie returned a valid copy. Not found: at least
// Qw-Qa+1 said no such entry/ledger (so it never reached Qa). Anything else
// is ErrRecoveryFailed.
func (c *Client) recoveryRead(ctx context.Context, id int64, m *Metadata, key []byte, e int64) ([]byte, bool, error) {
	seg := m.EnsembleAt(e)
	ws := writeSet(e, m.EnsembleSize, m.WriteQuorum)
	results := make(chan readResult, len(ws))
	rctx, cancel := context.WithTimeout(ctx, c.opts.ReadTimeout)
	defer cancel()
	for _, idx := range ws {
		b := seg.Bookies[idx]
		bc, err := c.bookies.Client(b)
		if err != nil {
			results <- readResult{err: err}
			continue
		}
		c.goTracked(func() {
			v, err := bc.ReadEntry(rctx, id, e, true, key)
			if err != nil {
				err = fmt.Errorf("bookie %s: %w", b, err)
			}
			results <- readResult{entry: v, err: err}
		})
	}
	missing, failed := 0, 0
	var errs []error
	for {
		var r readResult
		select {
		case r = <-results:
		case <-rctx.Done():
			r.err = rctx.Err()
		}
		found := 0
		switch {
		case r.err == nil:
			h, _, err := bkproto.DecodeEntry(r.entry)
			if err == nil && h.LedgerID == id && h.EntryID == e {
				found = 1
			} else {
				failed++
				errs = append(errs, fmt.Errorf("%w: entry %d/%d", bkproto.ErrCorrupt, h.LedgerID, h.EntryID))
			}
		case errors.Is(r.err, bkproto.ErrUnauthorized):
			return nil, false, fmt.Errorf("%w: %w", ErrUnauthorized, r.err)
		case errors.Is(r.err, bkproto.ErrNoEntry), errors.Is(r.err, bkproto.ErrNoLedger):
			missing++
		case errors.Is(r.err, context.DeadlineExceeded), errors.Is(r.err, context.Canceled):
			errs = append(errs, r.err)
			failed = len(ws) // the remaining answers will not come
		default:
			failed++
			errs = append(errs, r.err)
		}
		switch decideEntry(found, missing, failed, len(ws), m.AckQuorum) {
		case entryExists:
			return r.entry, true, nil
		case entryAbsent:
			return nil, false, nil
		case entryUnknown:
			return nil, false, fmt.Errorf("%w: ledger %d entry %d: %d of %d needed no-entry answers: %w",
				ErrRecoveryFailed, id, e, missing, len(ws)-m.AckQuorum+1, errors.Join(errs...))
		}
	}
}
