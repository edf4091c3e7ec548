package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/txn"
)

// Errors the coordinator returns; the broker maps them to the wire's
// ServerError codes (TransactionNotFound, InvalidTxnStatus, NotAllowed,
// TransactionCoordinatorNotFound).
var (
	ErrTxnNotFound       = errors.New("transaction not found")
	ErrInvalidStatus     = errors.New("invalid transaction status")
	ErrWrongCoordinator  = errors.New("transaction belongs to another coordinator")
	ErrSequenceExhausted = errors.New("transaction sequence exhausted")
	ErrClosed            = errors.New("transaction coordinator closed")
	ErrTooManyActive     = errors.New("too many active transactions")
	ErrBadArgument       = errors.New("bad argument")
)

// Status is a transaction's state.
type Status int

// The states (docs/transactions.md, "State machine").
const (
	StatusOpen Status = iota
	StatusCommitting
	StatusAborting
	StatusCommitted
	StatusAborted
)

func (s Status) String() string {
	switch s {
	case StatusOpen:
		return "OPEN"
	case StatusCommitting:
		return "COMMITTING"
	case StatusAborting:
		return "ABORTING"
	case StatusCommitted:
		return "COMMITTED"
	case StatusAborted:
		return "ABORTED"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Defaults.
const (
	// DefaultTimeout applies to NEW_TXN with a ttl of 0.
	DefaultTimeout = 60 * time.Second
	// DefaultTrimInterval is how often the log is trimmed behind the
	// oldest live transaction.
	DefaultTrimInterval = time.Second
	// recentEnded is how many ended transactions are remembered, so that
	// a second END_TXN's TransactionNotFound and the stats name the
	// outcome.
	recentEnded = 4096
	// retryMax caps the backoff between attempts to end a transaction on
	// a participant or to log its end.
	retryMax = 5 * time.Second
)

// Config configures a Coordinator.
type Config struct {
	// ID is the coordinator id: the partition of the assign topic, and
	// the most-significant half of every transaction id it hands out.
	ID uint64
	// Log is the coordinator's durable log.
	Log Log
	// Participant ends transactions on topics and subscriptions.
	Participant txn.Participant
	// MaxActive bounds the open transactions (0: unlimited; Pulsar's
	// maxActiveTransactionsPerCoordinator).
	MaxActive int
	// TrimInterval: DefaultTrimInterval when 0.
	TrimInterval time.Duration
	// Now is the clock (time.Now when nil).
	Now    func() time.Time
	Logger *slog.Logger
}

// meta is one live transaction. Guarded by Coordinator.mu.
type meta struct {
	seq        uint64
	status     Status
	openMs     int64
	timeoutMs  uint64
	deadlineMs int64
	partitions []string
	subs       []SubRef
	first      Pos  // position of its first record (trimming)
	logged     bool // its OPEN record is durable
	ending     bool // a finish goroutine runs
	done       chan struct{}
}

// Coordinator is one transaction coordinator: it hands out transaction
// ids, records every state transition in its log before acting on it,
// aborts transactions that outlive their timeout and ends transactions on
// their participants. All methods are safe for concurrent use.
type Coordinator struct {
	cfg Config
	log *slog.Logger
	now func() time.Time

	// appendMu orders state decisions with the log: it is held from the
	// check of a request to the Append of its record, so records enter the
	// log in the order the decisions were taken. Never taken under mu.
	appendMu sync.Mutex
	seq      atomic.Uint64 // the highest sequence handed out

	mu struct {
		sync.Mutex
		txns    map[uint64]*meta
		ended   map[uint64]Status
		endedQ  []uint64 // ring of ended, oldest first
		lastPos Pos      // last applied record
		anyPos  bool
		trimmed Pos // last TrimBefore argument
		closed  bool
		failed  error
	}
	timeouts timeoutQueue

	stats struct {
		created, committed, aborted, timedOut, appended atomic.Int64
	}
	recoverStart, recoverEnd int64

	wake       chan struct{}
	closed     chan struct{}
	life       context.Context // cancelled by Close
	lifeCancel context.CancelFunc
	wg         sync.WaitGroup
}

// Open replays cfg.Log, restores the open transactions, resumes ending
// the ones that were committing or aborting, and starts the timeout timer.
func Open(ctx context.Context, cfg Config) (*Coordinator, error) {
	if cfg.Log == nil || cfg.Participant == nil {
		return nil, fmt.Errorf("%w: coordinator needs a log and a participant", ErrBadArgument)
	}
	if cfg.TrimInterval <= 0 {
		cfg.TrimInterval = DefaultTrimInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Coordinator{cfg: cfg, log: cfg.Logger.With("tc", cfg.ID), now: cfg.Now,
		wake: make(chan struct{}, 1), closed: make(chan struct{})}
	c.life, c.lifeCancel = context.WithCancel(context.Background())
	c.mu.txns = make(map[uint64]*meta)
	c.mu.ended = make(map[uint64]Status)
	c.recoverStart = c.nowMs()
	var maxSeq uint64
	err := cfg.Log.Replay(ctx, func(p Pos, b []byte) error {
		r, err := DecodeRecord(b)
		if err != nil {
			return fmt.Errorf("coordinator %d: record at %s: %w", cfg.ID, p, err)
		}
		maxSeq = max(maxSeq, r.MaxSeq, r.Seq)
		c.mu.Lock()
		c.apply(&r, p, true)
		c.mu.Unlock()
		return nil
	})
	if err != nil {
		c.lifeCancel()
		return nil, err
	}
	c.seq.Store(maxSeq)
	c.recoverEnd = c.nowMs()
	c.mu.Lock()
	var resume []*meta
	for _, m := range c.mu.txns {
		switch m.status {
		case StatusOpen:
			c.timeouts.push(m.deadlineMs, m.seq)
		case StatusCommitting, StatusAborting:
			resume = append(resume, m)
		}
	}
	c.mu.Unlock()
	c.log.Info("transaction coordinator recovered", "open", len(c.mu.txns)-len(resume), "ending", len(resume), "seq", maxSeq)
	for _, m := range resume {
		a := txn.Commit
		if m.status == StatusAborting {
			a = txn.Abort
		}
		c.startFinish(m, a)
	}
	c.wg.Add(1)
	go c.timerLoop()
	return c, nil
}

func (c *Coordinator) nowMs() int64 { return c.now().UnixMilli() }

// ID returns the coordinator id.
func (c *Coordinator) ID() uint64 { return c.cfg.ID }

// apply folds a durable record into the state. replay is set while
// recovering (records of transactions already ended and trimmed may be
// missing their start). Called with mu held.
func (c *Coordinator) apply(r *Record, p Pos, replay bool) {
	c.mu.lastPos, c.mu.anyPos = p, true
	m := c.mu.txns[r.Seq]
	switch r.Op {
	case OpOpen:
		if m == nil {
			m = &meta{seq: r.Seq, done: make(chan struct{})}
			c.mu.txns[r.Seq] = m
		}
		m.openMs, m.timeoutMs, m.first, m.logged = r.TimeMillis, r.Timeout, p, true
		m.deadlineMs = satAdd(r.TimeMillis, r.Timeout)
		return
	case OpCommitted, OpAborted:
		st := StatusCommitted
		switch {
		case replay:
		case r.Op == OpAborted:
			c.stats.aborted.Add(1)
		default:
			c.stats.committed.Add(1)
		}
		if r.Op == OpAborted {
			st = StatusAborted
		}
		if m != nil {
			delete(c.mu.txns, r.Seq)
			close(m.done)
		}
		c.remember(r.Seq, st)
		return
	}
	if m == nil {
		// The transaction's earlier records were trimmed (it ended), or the
		// record is corrupt: nothing to do.
		return
	}
	switch r.Op {
	case OpAddPartitions:
		for _, t := range r.Partitions {
			if !slices.Contains(m.partitions, t) {
				m.partitions = append(m.partitions, t)
			}
		}
	case OpAddSubscriptions:
		for _, s := range r.Subs {
			if !slices.Contains(m.subs, s) {
				m.subs = append(m.subs, s)
			}
		}
	case OpCommitting:
		m.status = StatusCommitting
	case OpAborting:
		m.status = StatusAborting
	}
}

func (c *Coordinator) remember(seq uint64, st Status) {
	if _, ok := c.mu.ended[seq]; !ok {
		c.mu.endedQ = append(c.mu.endedQ, seq)
	}
	c.mu.ended[seq] = st
	if len(c.mu.endedQ) > recentEnded {
		delete(c.mu.ended, c.mu.endedQ[0])
		c.mu.endedQ = slices.Delete(c.mu.endedQ, 0, 1)
	}
}

func satAdd(a int64, b uint64) int64 {
	if b > uint64(math.MaxInt64-max(a, 0)) {
		return math.MaxInt64
	}
	return a + int64(b)
}

// write appends r and waits until it is durable and applied. Called with
// appendMu held; releases it once the record is handed to the log.
func (c *Coordinator) write(ctx context.Context, r *Record) error {
	r.MaxSeq = c.seq.Load()
	r.TimeMillis = c.nowMs()
	done := make(chan error, 1)
	c.cfg.Log.Append(r.Encode(), func(p Pos, err error) {
		if err == nil {
			c.stats.appended.Add(1)
			c.mu.Lock()
			c.apply(r, p, false)
			c.mu.Unlock()
		}
		done <- err
	})
	c.appendMu.Unlock()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Coordinator) checkOpen() error {
	if c.mu.closed {
		return ErrClosed
	}
	return nil
}

// NewTxn starts a transaction that is aborted unless ended within ttl
// (DefaultTimeout when 0).
func (c *Coordinator) NewTxn(ctx context.Context, ttl time.Duration) (txn.ID, error) {
	if ttl <= 0 {
		ttl = DefaultTimeout
	}
	c.appendMu.Lock()
	c.mu.Lock()
	err := c.checkOpen()
	if err == nil && c.cfg.MaxActive > 0 && len(c.mu.txns) >= c.cfg.MaxActive {
		err = fmt.Errorf("%w: %d transactions are open on coordinator %d", ErrTooManyActive, len(c.mu.txns), c.cfg.ID)
	}
	c.mu.Unlock()
	if err == nil && c.seq.Load() == math.MaxUint64 {
		err = fmt.Errorf("%w on coordinator %d", ErrSequenceExhausted, c.cfg.ID)
	}
	if err != nil {
		c.appendMu.Unlock()
		return txn.ID{}, err
	}
	seq := c.seq.Add(1)
	r := &Record{Op: OpOpen, Seq: seq, Timeout: uint64(ttl.Milliseconds())}
	if err := c.write(ctx, r); err != nil {
		return txn.ID{}, fmt.Errorf("coordinator %d: log NEW_TXN: %w", c.cfg.ID, err)
	}
	c.stats.created.Add(1)
	c.mu.Lock()
	m := c.mu.txns[seq]
	if m != nil && m.status == StatusOpen {
		c.timeouts.push(m.deadlineMs, seq)
	}
	c.mu.Unlock()
	c.poke()
	return txn.ID{Most: c.cfg.ID, Least: seq}, nil
}

// lookup returns the live transaction id; with mu held.
func (c *Coordinator) lookup(id txn.ID) (*meta, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	if id.Most != c.cfg.ID {
		return nil, fmt.Errorf("%w: %s is not of coordinator %d", ErrWrongCoordinator, id, c.cfg.ID)
	}
	m := c.mu.txns[id.Least]
	if m == nil || !m.logged {
		if st, ok := c.mu.ended[id.Least]; ok {
			return nil, fmt.Errorf("%w: transaction %s is %s", ErrInvalidStatus, id, st)
		}
		return nil, fmt.Errorf("%w: %s", ErrTxnNotFound, id)
	}
	return m, nil
}

// AddPartitions records that the transaction produces to topics.
func (c *Coordinator) AddPartitions(ctx context.Context, id txn.ID, topics []string) error {
	return c.add(ctx, id, topics, nil)
}

// AddSubscriptions records that the transaction acknowledges on subs.
func (c *Coordinator) AddSubscriptions(ctx context.Context, id txn.ID, subs []SubRef) error {
	return c.add(ctx, id, nil, subs)
}

func (c *Coordinator) add(ctx context.Context, id txn.ID, topics []string, subs []SubRef) error {
	for _, t := range topics {
		if t == "" {
			return fmt.Errorf("%w: empty topic name", ErrBadArgument)
		}
	}
	for _, s := range subs {
		if s.Topic == "" || s.Subscription == "" {
			return fmt.Errorf("%w: empty topic or subscription name", ErrBadArgument)
		}
	}
	c.appendMu.Lock()
	c.mu.Lock()
	m, err := c.lookup(id)
	if err == nil && m.status != StatusOpen {
		err = fmt.Errorf("%w: transaction %s is %s, not OPEN", ErrInvalidStatus, id, m.status)
	}
	var newTopics []string
	var newSubs []SubRef
	if err == nil {
		for _, t := range topics {
			if !slices.Contains(m.partitions, t) && !slices.Contains(newTopics, t) {
				newTopics = append(newTopics, t)
			}
		}
		for _, s := range subs {
			if !slices.Contains(m.subs, s) && !slices.Contains(newSubs, s) {
				newSubs = append(newSubs, s)
			}
		}
	}
	c.mu.Unlock()
	if err != nil || (len(newTopics) == 0 && len(newSubs) == 0) {
		c.appendMu.Unlock()
		return err
	}
	r := &Record{Op: OpAddPartitions, Seq: id.Least, Partitions: newTopics}
	if len(newSubs) > 0 {
		r = &Record{Op: OpAddSubscriptions, Seq: id.Least, Subs: newSubs}
	}
	if err := c.write(ctx, r); err != nil {
		return fmt.Errorf("coordinator %d: log %s: %w", c.cfg.ID, r.Op, err)
	}
	return nil
}

// End commits or aborts the transaction and returns once every
// participant has ended it durably and the end is logged (or ctx ends;
// the coordinator goes on ending it then). As in Pulsar, an ended
// transaction is gone: ending it again, either way, is ErrTxnNotFound
// (the message names the outcome while it is remembered). A second END
// while the first is still in progress waits for it.
func (c *Coordinator) End(ctx context.Context, id txn.ID, a txn.Action) error {
	if a != txn.Commit && a != txn.Abort {
		return fmt.Errorf("%w: action %d", ErrBadArgument, int32(a))
	}
	want := StatusCommitting
	if a == txn.Abort {
		want = StatusAborting
	}
	c.appendMu.Lock()
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		c.appendMu.Unlock()
		return ErrClosed
	}
	if id.Most == c.cfg.ID {
		if st, ok := c.mu.ended[id.Least]; ok && c.mu.txns[id.Least] == nil {
			c.mu.Unlock()
			c.appendMu.Unlock()
			return fmt.Errorf("%w: transaction %s has already ended (%s)", ErrTxnNotFound, id, st)
		}
	}
	m, err := c.lookup(id)
	if err != nil {
		c.mu.Unlock()
		c.appendMu.Unlock()
		return err
	}
	switch m.status {
	case want:
		// Already ending this way: wait for it.
		c.mu.Unlock()
		c.appendMu.Unlock()
		return c.wait(ctx, m)
	case StatusOpen:
	default:
		c.mu.Unlock()
		c.appendMu.Unlock()
		return fmt.Errorf("%w: transaction %s is %s", ErrInvalidStatus, id, m.status)
	}
	m.status = want
	c.mu.Unlock()
	if err := c.logEnding(ctx, m, a); err != nil {
		return err
	}
	return c.wait(ctx, m)
}

// logEnding writes COMMITTING/ABORTING (appendMu held, m.status already
// set) and starts ending on the participants. On a log failure the
// transaction is OPEN again.
func (c *Coordinator) logEnding(ctx context.Context, m *meta, a txn.Action) error {
	op := OpCommitting
	if a == txn.Abort {
		op = OpAborting
	}
	if err := c.write(ctx, &Record{Op: op, Seq: m.seq}); err != nil {
		c.mu.Lock()
		if m.status != StatusCommitted && m.status != StatusAborted && !m.ending {
			m.status = StatusOpen
		}
		c.mu.Unlock()
		return fmt.Errorf("coordinator %d: log %s: %w", c.cfg.ID, op, err)
	}
	c.startFinish(m, a)
	return nil
}

func (c *Coordinator) wait(ctx context.Context, m *meta) error {
	select {
	case <-m.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closed:
		return ErrClosed
	}
}

func (c *Coordinator) startFinish(m *meta, a txn.Action) {
	c.mu.Lock()
	if m.ending || c.mu.closed {
		c.mu.Unlock()
		return
	}
	m.ending = true
	parts, subs := slices.Clone(m.partitions), slices.Clone(m.subs)
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.finish(m.seq, parts, subs, a)
	}()
}

// finish ends the transaction on every participant, retrying each until
// it succeeds, then logs COMMITTED/ABORTED.
func (c *Coordinator) finish(seq uint64, parts []string, subs []SubRef, a txn.Action) {
	id := txn.ID{Most: c.cfg.ID, Least: seq}
	var wg sync.WaitGroup
	for _, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.retry("end on partition", p, func(ctx context.Context) error {
				return c.cfg.Participant.EndOnPartition(ctx, p, id, a)
			})
		}()
	}
	for _, s := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.retry("end on subscription", s.Topic+"/"+s.Subscription, func(ctx context.Context) error {
				return c.cfg.Participant.EndOnSubscription(ctx, s.Topic, s.Subscription, id, a)
			})
		}()
	}
	wg.Wait()
	op := OpCommitted
	if a == txn.Abort {
		op = OpAborted
	}
	c.retry("log end", id.String(), func(ctx context.Context) error {
		c.appendMu.Lock()
		return c.write(ctx, &Record{Op: op, Seq: seq})
	})
}

// retry runs f until it succeeds or the coordinator closes.
func (c *Coordinator) retry(what, where string, f func(context.Context) error) {
	backoff := 50 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(c.life, 30*time.Second)
		err := f(ctx)
		cancel()
		if err == nil {
			return
		}
		c.log.Warn("transaction end: retrying", "what", what, "where", where, "err", err, "in", backoff)
		select {
		case <-c.closed:
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, retryMax)
	}
}

// Close stops the coordinator. Transactions being ended are left as the
// log says; the next Open resumes them.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return nil
	}
	c.mu.closed = true
	c.mu.Unlock()
	close(c.closed)
	c.lifeCancel()
	c.wg.Wait()
	return c.cfg.Log.Close()
}

// Closed is closed once Close has been called.
func (c *Coordinator) Closed() <-chan struct{} { return c.closed }
