package ledger

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/protocol/bkproto"
)

// MaxEntrySize is the largest payload an add accepts: what fits in one
// bkproto frame with the add request's fields, a 32-byte master key and
// the entry header.
const MaxEntrySize = bkproto.MaxFrameSize - 10 - 16 - 2 - 32 - bkproto.EntryHeaderSize

// WriteHandle is a ledger opened for writing by its single writer.
//
// Adds are pipelined: AddAsync frames the entry, sends it to the Qw bookies
// of its write set and returns. An add completes when Qa of them acked it
// and every earlier add completed; callbacks run one at a time, in entry
// order, on the handle's delivery goroutine (never on the AddAsync caller).
// That goroutine runs only while there are completions to deliver: an
// idle open handle holds none (a broker keeps one open per live topic).
// After a failure every later add fails too.
//
// Safe for concurrent use.
type WriteHandle struct {
	c    *Client
	id   int64
	path string
	key  []byte
	e    int
	wq   int
	aq   int
	// affinity restricts replacements as it restricted the first
	// ensemble (nil: none).
	affinity *Affinity

	// metaMu serializes metadata writes (ensemble changes, close); it
	// guards meta and version. Lock order: metaMu before mu.
	metaMu  sync.Mutex
	meta    Metadata
	version metadata.Version

	mu struct {
		sync.Mutex
		ensemble []string // the last ensemble (every pending entry is in it)
		next     int64    // next entry id
		length   int64    // cumulative length of every assigned entry
		lac      int64
		lacLen   int64         // ledger length at lac
		pending  []*pendingAdd // entries lac+1 .. next-1
		ready    []completion  // completions to deliver, in order
		err      error         // sticky failure
		closing  bool
		stopped  bool // no more background goroutines may start
		// delivering: a goroutine delivers ready (started by kickLocked,
		// returns once ready is empty).
		delivering bool
		changing   bool
		failed     map[int]string  // ensemble index -> failed bookie awaiting replacement
		excluded   map[string]bool // bookies that failed; never chosen again
		drained    chan struct{}   // closed when pending empties (Close waits)
	}
	stop chan struct{}
	wg   sync.WaitGroup
	// dwg tracks the delivery goroutines (Close waits for them).
	dwg sync.WaitGroup
}

type pendingAdd struct {
	id     int64
	length int64 // ledger length including this entry
	frame  []byte
	cb     func(int64, error)
	acked  uint64 // bit per ensemble index
	n      int
}

type completion struct {
	id  int64
	err error
	cb  func(int64, error)
}

type send struct {
	idx    int
	bookie string
	id     int64
	frame  []byte
}

func newWriteHandle(c *Client, id int64, m Metadata, v metadata.Version, aff *Affinity) *WriteHandle {
	h := &WriteHandle{
		c: c, id: id, path: LedgerPath(id), key: MasterKey(m.Password), affinity: aff,
		e: m.EnsembleSize, wq: m.WriteQuorum, aq: m.AckQuorum,
		meta: m, version: v,
		stop: make(chan struct{}),
	}
	h.mu.ensemble = slices.Clone(m.Last().Bookies)
	h.mu.lac = -1
	h.mu.failed = map[int]string{}
	h.mu.excluded = map[string]bool{}
	if c.opts.ExplicitLACInterval > 0 {
		h.wg.Add(1)
		go h.explicitLACLoop(c.opts.ExplicitLACInterval)
	}
	return h
}

// explicitLACLoop sends the LAC to the current ensemble whenever it
// advanced, every interval, until Close.
func (h *WriteHandle) explicitLACLoop(interval time.Duration) {
	defer h.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	sent := int64(-1)
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		h.mu.Lock()
		lac, ens := h.mu.lac, slices.Clone(h.mu.ensemble)
		h.mu.Unlock()
		if lac <= sent {
			continue
		}
		ctx, cancel := context.WithTimeout(h.c.ctx, h.c.opts.ReadTimeout)
		for _, b := range ens {
			if bc, err := h.c.bookies.Client(b); err == nil {
				if err := bc.WriteLAC(ctx, h.id, lac, h.key, nil); err != nil {
					h.c.opts.Logger.Debug("ledger: explicit LAC", "ledger", h.id, "bookie", b, "err", err)
				}
			}
		}
		cancel()
		sent = lac
	}
}

// ID returns the ledger id.
func (h *WriteHandle) ID() int64 { return h.id }

// LastAddConfirmed returns the highest entry id such that it and all before
// it completed; -1 if none.
func (h *WriteHandle) LastAddConfirmed() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mu.lac
}

// Length returns the ledger's length in bytes up to LastAddConfirmed.
func (h *WriteHandle) Length() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mu.lacLen
}

// Metadata returns a copy of the handle's current metadata.
func (h *WriteHandle) Metadata() Metadata {
	h.metaMu.Lock()
	defer h.metaMu.Unlock()
	return h.meta.clone()
}

// Add appends data and waits for it to complete.
func (h *WriteHandle) Add(ctx context.Context, data []byte) (int64, error) {
	type res struct {
		id  int64
		err error
	}
	ch := make(chan res, 1)
	h.AddAsync(data, func(id int64, err error) { ch <- res{id, err} })
	select {
	case r := <-ch:
		return r.id, r.err
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}

// AddAsync appends data as the next entry. data is copied before AddAsync
// returns. cb receives the entry id, or an error (ErrFenced, ErrClosed,
// ErrNotEnoughBookies, bkproto.ErrUnauthorized wrapped...).
func (h *WriteHandle) AddAsync(data []byte, cb func(entryID int64, err error)) {
	h.add(data, nil, cb)
}

// EntryHeadroom is the room AddWithHeadroom needs in front of an entry's
// data to frame it in place: the BookKeeper entry header.
const EntryHeadroom = bkproto.EntryHeaderSize

// AddWithHeadroom is AddAsync for data = buf[off:] without the copy: with
// off >= EntryHeadroom the entry header is written into
// buf[off-EntryHeadroom:off] and that part of buf is sent to the bookies
// as the framed entry, byte for byte what AddAsync would build. buf[off:]
// must never be modified afterwards, and buf[:off] must not be used again
// by the caller (in particular not passed to a second add: a bookie may
// still be reading the first frame after an add failed). With a smaller
// off it is AddAsync(buf[off:], cb).
func (h *WriteHandle) AddWithHeadroom(buf []byte, off int, cb func(entryID int64, err error)) {
	if off < EntryHeadroom {
		h.add(buf[off:], nil, cb)
		return
	}
	h.add(buf[off:], buf[off-EntryHeadroom:len(buf):len(buf)], cb)
}

// add appends data; frame, if not nil, is EntryHeadroom bytes of room
// followed by data, to frame it in place.
func (h *WriteHandle) add(data, frame []byte, cb func(entryID int64, err error)) {
	h.mu.Lock()
	if h.mu.err != nil || h.mu.closing {
		err := h.mu.err
		if err == nil {
			err = ErrClosed
		}
		if h.mu.stopped {
			h.mu.Unlock()
			h.c.goTracked(func() { cb(-1, err) })
			return
		}
		h.mu.ready = append(h.mu.ready, completion{-1, err, cb})
		h.kickLocked()
		h.mu.Unlock()
		return
	}
	if len(data) > MaxEntrySize {
		h.failLocked(fmt.Errorf("%w: %d bytes, max %d", ErrEntryTooLarge, len(data), MaxEntrySize))
		h.mu.ready = append(h.mu.ready, completion{-1, h.mu.err, cb})
		h.kickLocked()
		h.mu.Unlock()
		return
	}
	id := h.mu.next
	h.mu.next++
	h.mu.length += int64(len(data))
	eh := bkproto.EntryHeader{LedgerID: h.id, EntryID: id, LAC: h.mu.lac, Length: h.mu.length}
	if frame != nil {
		putEntryHeader(frame, eh)
	} else {
		frame = make([]byte, 0, bkproto.EntryHeaderSize+len(data))
		frame = bkproto.AppendEntry(frame, eh, data)
	}
	h.mu.pending = append(h.mu.pending, &pendingAdd{id: id, length: h.mu.length, frame: frame, cb: cb})
	var buf [8]send
	sends := buf[:0]
	for i := range h.wq {
		idx := int((id + int64(i)) % int64(h.e))
		sends = append(sends, send{idx, h.mu.ensemble[idx], id, frame})
	}
	h.mu.Unlock()
	h.dispatch(sends, false)
}

// dispatch sends adds; it must be called without mu held (in-process
// bookies may complete them on this goroutine).
func (h *WriteHandle) dispatch(sends []send, recovery bool) {
	for _, s := range sends {
		bc, err := h.c.bookies.Client(s.bookie)
		if err != nil {
			h.addDone(s.idx, s.bookie, s.id, err)
			continue
		}
		idx, b, id := s.idx, s.bookie, s.id
		bc.AddEntry(h.id, s.id, h.key, s.frame, recovery, func(err error) { h.addDone(idx, b, id, err) })
	}
}

// addDone records one bookie's answer to an add.
func (h *WriteHandle) addDone(idx int, bookie string, id int64, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.err != nil || h.mu.ensemble[idx] != bookie {
		return // failed already, or an answer from a replaced bookie
	}
	if err != nil {
		if errors.Is(err, bkproto.ErrFenced) {
			h.failLocked(fmt.Errorf("%w: bookie %s: %w", ErrFenced, bookie, err))
			return
		}
		if errors.Is(err, bkproto.ErrUnauthorized) {
			h.failLocked(fmt.Errorf("%w: bookie %s: %w", ErrUnauthorized, bookie, err))
			return
		}
		// One line per bookie failure, not per pending add (a bookie
		// that dies under load fails every add in flight to it).
		if h.mu.failed[idx] != bookie && !h.mu.excluded[bookie] {
			h.c.opts.Logger.Warn("ledger: add failed, replacing bookie", "ledger", h.id, "entry", id, "bookie", bookie, "err", err)
		}
		h.mu.failed[idx] = bookie
		if !h.mu.changing && !h.mu.stopped {
			h.mu.changing = true
			h.wg.Add(1)
			go h.ensembleChangeLoop()
		}
		return
	}
	if len(h.mu.pending) == 0 {
		return
	}
	i := id - h.mu.pending[0].id
	if i < 0 || i >= int64(len(h.mu.pending)) {
		return
	}
	p := h.mu.pending[i]
	if bit := uint64(1) << idx; p.acked&bit == 0 {
		p.acked |= bit
		p.n++
	}
	h.completeLocked()
}

// completeLocked completes the pending adds at the head that reached Qa,
// unless an ensemble change holds completions.
func (h *WriteHandle) completeLocked() {
	if h.mu.changing || h.mu.err != nil {
		return
	}
	n := 0
	for _, p := range h.mu.pending {
		if p.n < h.aq {
			break
		}
		h.mu.lac, h.mu.lacLen = p.id, p.length
		h.mu.ready = append(h.mu.ready, completion{p.id, nil, p.cb})
		n++
	}
	if n == 0 {
		return
	}
	clear(h.mu.pending[:n])
	h.mu.pending = h.mu.pending[n:]
	h.kickLocked()
	h.checkDrainedLocked()
}

func (h *WriteHandle) checkDrainedLocked() {
	if len(h.mu.pending) == 0 && h.mu.drained != nil {
		close(h.mu.drained)
		h.mu.drained = nil
	}
}

// failLocked makes err sticky and fails every pending add with it.
func (h *WriteHandle) failLocked(err error) {
	if h.mu.err != nil {
		return
	}
	h.mu.err = err
	for _, p := range h.mu.pending {
		h.mu.ready = append(h.mu.ready, completion{p.id, err, p.cb})
	}
	h.mu.pending = nil
	h.kickLocked()
	h.checkDrainedLocked()
}

// kickLocked starts the delivery goroutine unless one is running: it
// delivers what is ready (one goroutine at a time, so in order).
func (h *WriteHandle) kickLocked() {
	if h.mu.delivering || len(h.mu.ready) == 0 {
		return
	}
	h.mu.delivering = true
	if h.mu.stopped {
		// After Close's wait: the client tracks it instead.
		h.c.goTracked(h.deliver)
		return
	}
	h.dwg.Add(1)
	go func() {
		defer h.dwg.Done()
		h.deliver()
	}()
}

// deliver runs the ready completions in order until none is left.
func (h *WriteHandle) deliver() {
	for {
		h.mu.Lock()
		batch := h.mu.ready
		h.mu.ready = nil
		if len(batch) == 0 {
			h.mu.delivering = false
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
		for _, c := range batch {
			c.cb(c.id, c.err)
		}
	}
}

// ensembleChangeLoop replaces failed bookies until none is left (docs/replication.md section 4).
func (h *WriteHandle) ensembleChangeLoop() {
	defer h.wg.Done()
	for {
		h.mu.Lock()
		if h.mu.err != nil || len(h.mu.failed) == 0 {
			h.mu.changing = false
			h.completeLocked()
			h.mu.Unlock()
			return
		}
		failed := h.mu.failed
		h.mu.failed = map[int]string{}
		for idx, b := range failed {
			h.mu.excluded[b] = true
			if h.mu.ensemble[idx] != b {
				delete(failed, idx) // reported again while being replaced
			}
		}
		if len(failed) == 0 {
			h.mu.Unlock()
			continue
		}
		cur := slices.Clone(h.mu.ensemble)
		key := h.mu.lac + 1
		excluded := make(map[string]bool, len(h.mu.excluded))
		for b := range h.mu.excluded {
			excluded[b] = true
		}
		h.mu.Unlock()

		newEns, revived, err := h.replace(cur, failed, key, excluded)
		h.mu.Lock()
		for _, b := range revived {
			delete(h.mu.excluded, b)
		}
		if err != nil {
			h.failLocked(err)
			h.mu.changing = false
			h.mu.Unlock()
			return
		}
		h.mu.ensemble = newEns
		var sends []send
		for _, p := range h.mu.pending {
			for idx := range failed {
				if !inWriteSet(p.id, idx, h.e, h.wq) {
					continue
				}
				if bit := uint64(1) << idx; p.acked&bit != 0 {
					p.acked &^= bit
					p.n--
				}
				sends = append(sends, send{idx, newEns[idx], p.id, p.frame})
			}
		}
		h.mu.Unlock()
		h.dispatch(sends, false)
	}
}

// replace picks replacements for the failed indexes and writes the new
// ensemble (key: first entry not yet confirmed) to the metadata by CAS,
// only while the ledger is OPEN. A bookie excluded after an earlier
// failure is a candidate again if it is registered and answers a probe
// now (it came back); those are returned in revived.
func (h *WriteHandle) replace(cur []string, failed map[int]string, key int64, excluded map[string]bool) (_ []string, revived []string, _ error) {
	ctx, cancel := context.WithTimeout(h.c.ctx, h.c.opts.MetadataTimeout)
	defer cancel()
	avail, err := h.c.WritableBookies(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: listing bookies: %w", ErrNotEnoughBookies, err)
	}
	for _, b := range h.c.answering(ctx, h.id, avail, func(b string) bool { return excluded[b] && !slices.Contains(cur, b) }) {
		delete(excluded, b)
		revived = append(revived, b)
	}
	newEns := slices.Clone(cur)
	aff, err := h.c.affinityExcluded(ctx, h.affinity, avail, h.e)
	if err != nil {
		return nil, revived, fmt.Errorf("%w: reading the rack information: %w", ErrNotEnoughBookies, err)
	}
	repl, err := pickBookies(avail, len(failed), func(b string) bool { return excluded[b] || aff[b] || slices.Contains(cur, b) })
	if err != nil {
		return nil, revived, fmt.Errorf("%w (ensemble %v, failed %v, excluded %v)", err, cur, failed, slices.Sorted(maps.Keys(excluded)))
	}
	i := 0
	for idx := range failed {
		newEns[idx] = repl[i]
		i++
	}
	h.metaMu.Lock()
	defer h.metaMu.Unlock()
	for {
		m := h.meta.clone()
		if last := &m.Ensembles[len(m.Ensembles)-1]; last.FirstEntry == key {
			last.Bookies = newEns
		} else {
			m.Ensembles = append(m.Ensembles, Segment{FirstEntry: key, Bookies: newEns})
		}
		v, err := h.c.store.Put(ctx, h.path, encodeMetadata(&m), h.version)
		if err == nil {
			h.meta, h.version = m, v
			h.c.opts.Logger.Info("ledger: ensemble changed", "ledger", h.id, "from", key, "ensemble", newEns)
			return newEns, revived, nil
		}
		if !errors.Is(err, metadata.ErrBadVersion) {
			return nil, revived, fmt.Errorf("ledger: ensemble change of %d: %w", h.id, err)
		}
		m2, v2, err := readMetadata(ctx, h.c.store, h.id)
		if err != nil {
			return nil, revived, err
		}
		if m2.State != StateOpen {
			return nil, revived, fmt.Errorf("%w: ledger %d is %s", ErrFenced, h.id, m2.State)
		}
		h.meta, h.version = m2, v2
	}
}

// Read returns the payloads of entries first..last (last <=
// LastAddConfirmed).
func (h *WriteHandle) Read(ctx context.Context, first, last int64) ([][]byte, error) {
	if lac := h.LastAddConfirmed(); last > lac || first < 0 || first > last {
		return nil, fmt.Errorf("%w: %d..%d, LAC %d", ErrReadBeyondLAC, first, last, lac)
	}
	m := h.Metadata()
	return h.c.readRange(ctx, h.id, &m, h.key, first, last)
}

// Close waits for pending adds, then closes the ledger at LastAddConfirmed
// (metadata CLOSED with lastEntryId and length). Further adds fail with
// ErrClosed. A fenced handle returns ErrFenced and leaves the metadata to
// the recovering client.
func (h *WriteHandle) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.mu.closing {
		h.mu.Unlock()
		return nil
	}
	h.mu.closing = true
	var wait chan struct{}
	if len(h.mu.pending) > 0 {
		wait = make(chan struct{})
		h.mu.drained = wait
	}
	h.mu.Unlock()
	var err error
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			h.mu.Lock()
			h.failLocked(fmt.Errorf("%w: closed with adds pending", ErrClosed))
			h.mu.Unlock()
			err = ctx.Err()
		}
	}
	h.mu.Lock()
	h.mu.stopped = true
	ferr, lac, length := h.mu.err, h.mu.lac, h.mu.lacLen
	h.mu.Unlock()
	close(h.stop)
	h.wg.Wait()
	h.dwg.Wait()
	if errors.Is(ferr, ErrFenced) || errors.Is(ferr, ErrUnauthorized) {
		return ferr
	}
	if cerr := h.closeMetadata(ctx, lac, length); cerr != nil {
		return cerr
	}
	return err
}

func (h *WriteHandle) closeMetadata(ctx context.Context, lac, length int64) error {
	h.metaMu.Lock()
	defer h.metaMu.Unlock()
	for {
		m := h.meta.clone()
		m.State, m.LastEntryID, m.Length = StateClosed, lac, length
		v, err := h.c.store.Put(ctx, h.path, encodeMetadata(&m), h.version)
		if err == nil {
			h.meta, h.version = m, v
			return nil
		}
		if !errors.Is(err, metadata.ErrBadVersion) {
			return fmt.Errorf("ledger: closing %d: %w", h.id, err)
		}
		m2, v2, err := readMetadata(ctx, h.c.store, h.id)
		if err != nil {
			return err
		}
		switch {
		case m2.State == StateClosed && m2.LastEntryID == lac:
			h.meta, h.version = m2, v2
			return nil
		case m2.State != StateOpen:
			return fmt.Errorf("%w: ledger %d is %s (lastEntryId %d)", ErrFenced, h.id, m2.State, m2.LastEntryID)
		}
		h.meta, h.version = m2, v2
	}
}
