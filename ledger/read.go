package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/protocol/bkproto"
)

// ReadHandle is a ledger opened for reading: closed (or recovered), or
// still open and read up to the LAC learned from bookies.
//
// Safe for concurrent use.
type ReadHandle struct {
	c      *Client
	id     int64
	key    []byte
	meta   Metadata
	lac    int64
	length int64
}

// ID returns the ledger id.
func (r *ReadHandle) ID() int64 { return r.id }

// LastAddConfirmed returns the last readable entry id; -1 if none.
func (r *ReadHandle) LastAddConfirmed() int64 { return r.lac }

// Length returns the ledger's length in bytes up to LastAddConfirmed.
func (r *ReadHandle) Length() int64 { return r.length }

// Metadata returns the metadata the handle was opened with.
func (r *ReadHandle) Metadata() Metadata { return r.meta.clone() }

// Closed reports whether the ledger was CLOSED when opened (the LAC is
// final).
func (r *ReadHandle) Closed() bool { return r.meta.State == StateClosed }

// Read returns the payloads of entries first..last inclusive.
func (r *ReadHandle) Read(ctx context.Context, first, last int64) ([][]byte, error) {
	if last > r.lac || first < 0 || first > last {
		return nil, fmt.Errorf("%w: %d..%d, LAC %d", ErrReadBeyondLAC, first, last, r.lac)
	}
	return r.c.readRange(ctx, r.id, &r.meta, r.key, first, last)
}

// Close releases the handle.
func (r *ReadHandle) Close() error { return nil }

// OpenNoRecovery opens ledger id for reading without fencing: a CLOSED
// ledger up to its lastEntryId, an OPEN one up to the LAC learned from the
// bookies of its last ensemble (the maximum of explicit and piggybacked
// LACs), which may lag the writer.
func (c *Client) OpenNoRecovery(ctx context.Context, id int64) (*ReadHandle, error) {
	m, _, err := readMetadata(ctx, c.store, id)
	if err != nil {
		return nil, err
	}
	r := &ReadHandle{c: c, id: id, key: MasterKey(m.Password), meta: m, lac: m.LastEntryID, length: m.Length}
	if m.State == StateClosed {
		return r, nil
	}
	last := m.Last()
	lac := last.FirstEntry - 1
	var mu sync.Mutex
	var answered atomic.Int32
	var wg sync.WaitGroup
	for _, b := range last.Bookies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bc, err := c.bookies.Client(b)
			if err != nil {
				return
			}
			rctx, cancel := context.WithTimeout(ctx, c.opts.ReadTimeout)
			defer cancel()
			explicit, entry, err := bc.ReadLAC(rctx, id)
			if err != nil && !errors.Is(err, bkproto.ErrNoLedger) && !errors.Is(err, bkproto.ErrNoEntry) {
				return
			}
			answered.Add(1)
			mu.Lock()
			defer mu.Unlock()
			lac = max(lac, explicit)
			if entry != nil {
				if h, _, err := bkproto.DecodeEntry(entry); err == nil && h.LedgerID == id {
					lac = max(lac, h.LAC)
				}
			}
		}()
	}
	wg.Wait()
	if answered.Load() == 0 {
		return nil, fmt.Errorf("%w: no bookie of ledger %d answered", ErrBookieUnavailable, id)
	}
	r.lac = lac
	r.length = 0
	if lac >= 0 {
		_, h, err := c.readEntry(ctx, id, &m, r.key, lac, false)
		if err != nil {
			return nil, err
		}
		r.length = h.Length
	}
	return r, nil
}

// readRange reads entries first..last with up to ReadParallelism in flight.
func (c *Client) readRange(ctx context.Context, id int64, m *Metadata, key []byte, first, last int64) ([][]byte, error) {
	out := make([][]byte, last-first+1)
	if len(out) == 1 || c.opts.ReadParallelism == 1 {
		for i := range out {
			p, _, err := c.readEntry(ctx, id, m, key, first+int64(i), false)
			if err != nil {
				return nil, err
			}
			out[i] = p
		}
		return out, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	next.Store(first)
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	for range min(c.opts.ReadParallelism, len(out)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				e := next.Add(1) - 1
				if e > last || firstErr.Load() != nil {
					return
				}
				p, _, err := c.readEntry(ctx, id, m, key, e, false)
				if err != nil {
					firstErr.CompareAndSwap(nil, &err)
					cancel()
					return
				}
				out[e-first] = p
			}
		}()
	}
	wg.Wait()
	if p := firstErr.Load(); p != nil {
		return nil, *p
	}
	return out, nil
}

type readResult struct {
	entry []byte
	err   error
}

// readEntry reads entry e from its write set: replicas in write-set order,
// moving on at once on an error and, for remote bookies, also after
// SpeculativeReadTimeout without an answer. It returns the payload and
// header of the first copy whose digest and header check out.
func (c *Client) readEntry(ctx context.Context, id int64, m *Metadata, key []byte, e int64, fence bool) ([]byte, bkproto.EntryHeader, error) {
	seg := m.EnsembleAt(e)
	ws := writeSet(e, m.EnsembleSize, m.WriteQuorum)
	results := make(chan readResult, len(ws))
	rctx, cancel := context.WithTimeout(ctx, c.opts.ReadTimeout)
	defer cancel()
	launched, answered := 0, 0
	var errs []error
	launch := func() bool {
		if launched >= len(ws) {
			return false
		}
		b := seg.Bookies[ws[launched]]
		launched++
		bc, err := c.bookies.Client(b)
		if err != nil {
			results <- readResult{err: err}
			return true
		}
		if lc, ok := bc.(LocalClient); ok && lc.Local() {
			v, err := bc.ReadEntry(rctx, id, e, fence, key)
			results <- readResult{entry: v, err: err}
			return true
		}
		c.goTracked(func() {
			v, err := bc.ReadEntry(rctx, id, e, fence, key)
			results <- readResult{entry: v, err: err}
		})
		return true
	}
	launch()
	var timer *time.Timer
	var timeout <-chan time.Time
	if c.opts.SpeculativeReadTimeout > 0 {
		timer = time.NewTimer(c.opts.SpeculativeReadTimeout)
		defer timer.Stop()
		timeout = timer.C
	}
	for answered < launched {
		select {
		case r := <-results:
			answered++
			if r.err == nil {
				h, p, err := bkproto.DecodeEntry(r.entry)
				if err == nil && (h.LedgerID != id || h.EntryID != e) {
					err = fmt.Errorf("%w: got entry %d/%d", bkproto.ErrCorrupt, h.LedgerID, h.EntryID)
				}
				if err == nil {
					return p, h, nil
				}
				r.err = err
			}
			errs = append(errs, r.err)
			launch()
		case <-timeout:
			if launch() {
				timer.Reset(c.opts.SpeculativeReadTimeout)
			}
		case <-rctx.Done():
			errs = append(errs, rctx.Err())
			answered = launched
		}
	}
	return nil, bkproto.EntryHeader{}, readError(id, e, errs)
}

// readError classifies the failures of every replica of one entry.
func readError(id, e int64, errs []error) error {
	missing, corrupt := 0, 0
	for _, err := range errs {
		switch {
		case errors.Is(err, bkproto.ErrNoEntry), errors.Is(err, bkproto.ErrNoLedger):
			missing++
		case errors.Is(err, bkproto.ErrCorrupt):
			corrupt++
		}
	}
	joined := errors.Join(errs...)
	switch {
	case missing == len(errs):
		return fmt.Errorf("%w: ledger %d entry %d: %w", ErrNoSuchEntry, id, e, joined)
	case corrupt > 0 && corrupt+missing == len(errs):
		return fmt.Errorf("%w: ledger %d entry %d: %w", ErrDigestMismatch, id, e, joined)
	}
	return fmt.Errorf("%w: ledger %d entry %d: %w", ErrBookieUnavailable, id, e, joined)
}
