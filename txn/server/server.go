package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
	"github.com/magnetar-mq/magnetar/txn"
)

// DefaultCoordinators is the partition count the assign topic is created
// with (Pulsar's default).
const DefaultCoordinators = 16

// requestTimeout bounds the storage and metadata work of one request.
const requestTimeout = 30 * time.Second

// Config configures a broker's transactions (Pulsar's
// transactionCoordinatorEnabled and related keys).
type Config struct {
	// Coordinators is the partition count of the assign topic when this
	// broker creates it (0: DefaultCoordinators).
	Coordinators int
	// MaxActivePerCoordinator bounds the open transactions of one
	// coordinator (0: unlimited).
	MaxActivePerCoordinator int
	// PendingAckTrimRecords: a subscription's pending-ack log is trimmed
	// behind its oldest open transaction after this many new records (0:
	// 1000).
	PendingAckTrimRecords int
}

// Server is a broker's transactions: the coordinators it serves and the
// participant side of its topics. It is a broker.Feature; Enable builds
// and registers it.
type Server struct {
	b   *broker.Broker
	cfg Config
	log *slog.Logger

	topics broker.TopicSlot[topicTxn]
	subs   broker.SubSlot[pendingAcks]

	tc     *coordinators
	remote remoteEnds

	// life ends at Close; the server's goroutines (command work, log
	// trims) run under it and Close waits for them (spawn).
	life     context.Context
	lifeStop context.CancelFunc
	mu       struct {
		sync.Mutex
		closed bool
	}
	wg sync.WaitGroup
}

// spawn runs f on a goroutine of the server's, unless the server closed
// (it then reports false and f never runs).
func (s *Server) spawn(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
	return true
}

var (
	_ txn.Participant           = (*Server)(nil)
	_ broker.SendInterceptor    = (*Server)(nil)
	_ broker.DispatchFilter     = (*Server)(nil)
	_ broker.AckHook            = (*Server)(nil)
	_ broker.TopicHook          = (*Server)(nil)
	_ broker.TopicTicker        = (*Server)(nil)
	_ broker.BundleObserver     = (*Server)(nil)
	_ broker.Lifecycle          = (*Server)(nil)
	_ broker.CommandSource      = (*Server)(nil)
	_ broker.PublishInterceptor = (*txnSend)(nil)
)

// Enable turns transactions on for b (before Start): it builds the
// server and registers it.
func Enable(b *broker.Broker, cfg Config) (*Server, error) {
	if cfg.Coordinators <= 0 {
		cfg.Coordinators = DefaultCoordinators
	}
	s := &Server{b: b, cfg: cfg, log: b.Logger(),
		topics: broker.NewTopicSlot[topicTxn](b), subs: broker.NewSubSlot[pendingAcks](b)}
	s.life, s.lifeStop = context.WithCancel(context.Background())
	s.remote.s = s
	s.tc = newCoordinators(s)
	if err := b.Use(s); err != nil {
		return nil, err
	}
	return s, nil
}

// Name implements broker.Feature.
func (s *Server) Name() string { return "transactions" }

// Start implements broker.Lifecycle: the coordinators.
func (s *Server) Start(ctx context.Context) error { return s.tc.start(ctx) }

// Close implements broker.Lifecycle: it closes the coordinators (before
// the topics close: ending a transaction calls them) and the client
// towards other brokers.
func (s *Server) Close() {
	s.mu.Lock()
	s.mu.closed = true
	s.mu.Unlock()
	s.lifeStop()
	s.tc.close()
	s.wg.Wait()
	s.remote.close()
}

// BundleReleased implements broker.BundleObserver: the coordinators of
// the bundle's assign partitions close (the next owner recovers them).
func (s *Server) BundleReleased(key string) { s.tc.dropBundle(key) }

// topicTxn is a persistent topic's transaction state (its TopicSlot).
type topicTxn struct {
	t broker.Topic
	// buf is the transaction buffer (buffer.go), nil until the topic
	// first stores a transactional entry; mu serialises its creation and
	// guards ackLogs.
	buf atomic.Pointer[buffer]
	mu  sync.Mutex
	// ackLogs are the open pending-ack logs by subscription
	// (pendingack.go).
	ackLogs map[string]*ackLog
}

// LoadTopic implements broker.TopicHook: a persistent topic's buffer is
// rebuilt from its snapshot, its subscriptions' pending acks from their
// logs.
func (s *Server) LoadTopic(ctx context.Context, t broker.Topic) error {
	if !t.Persistent() {
		return nil
	}
	tt := &topicTxn{t: t}
	s.topics.Set(t, tt)
	if err := s.recoverBuffer(ctx, tt); err != nil {
		return fmt.Errorf("recover the transaction buffer: %w", err)
	}
	if err := s.recoverPendingAcks(ctx, tt); err != nil {
		return fmt.Errorf("recover the pending acks: %w", err)
	}
	return nil
}

// CloseTopic implements broker.TopicHook: the buffer is snapshotted, the
// pending-ack logs closed.
func (s *Server) CloseTopic(t broker.Topic) {
	tt := s.topics.Get(t)
	if tt == nil {
		return
	}
	if tb := tt.buf.Load(); tb != nil {
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		if err := tb.snapshot(ctx); err != nil {
			s.log.Warn("transaction buffer snapshot at close", "topic", t.Name(), "err", err)
		}
		cancel()
	}
	tt.mu.Lock()
	logs := tt.ackLogs
	tt.ackLogs = nil
	tt.mu.Unlock()
	for sub, l := range logs {
		if err := l.ml.Close(); err != nil {
			s.log.Warn("close pending-ack log", "topic", t.Name(), "sub", sub, "err", err)
		}
	}
}

// TickTopic implements broker.TopicTicker: the buffer is snapshotted
// when due.
func (s *Server) TickTopic(t broker.Topic) {
	if tt := s.topics.Get(t); tt != nil {
		if tb := tt.buf.Load(); tb != nil && !t.Closed() {
			tb.maybeSnapshot(true)
		}
	}
}

// InterceptSend implements broker.SendInterceptor: a SEND with a txn id
// is stamped with the id and registered with the topic's transaction
// buffer (invisible until the transaction commits).
func (s *Server) InterceptSend(p broker.Producer, m *pb.CommandSend, e *broker.Entry) error {
	if m.TxnidMostBits == nil && m.TxnidLeastBits == nil {
		return nil
	}
	id := txn.ID{Most: m.GetTxnidMostBits(), Least: m.GetTxnidLeastBits()}
	tt := s.topics.Get(p.Topic())
	if tt == nil {
		return &broker.SendError{Code: pb.ServerError_NotAllowedError, Msg: "Transactions need a persistent topic"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	tb, err := s.buffer(ctx, tt)
	if err != nil {
		return &broker.SendError{Code: errorCode(err), Msg: err.Error()}
	}
	if how, ended := tb.ended(id); ended {
		return &broker.SendError{Code: pb.ServerError_InvalidTxnStatus, Msg: fmt.Sprintf("Transaction %s is already %s", id, pastTense(how))}
	}
	if err := stampTxnID(e, id); err != nil {
		return &broker.SendError{Code: pb.ServerError_UnknownError, Msg: "Bad message metadata: " + err.Error()}
	}
	e.Attach(&txnSend{id: id, tb: tb})
	return nil
}

// SkipEntry implements broker.DispatchFilter: entries of aborted
// transactions are never delivered.
func (s *Server) SkipEntry(t broker.Topic, md *pulsarproto.Metadata) bool {
	if md == nil || !md.HasTxnid {
		return false
	}
	tt := s.topics.Get(t)
	if tt == nil {
		return false
	}
	tb := tt.buf.Load()
	return tb != nil && tb.isAborted(txn.ID{Most: md.TxnidMostBits, Least: md.TxnidLeastBits})
}

// InterceptAck implements broker.AckHook: an ACK with a txn id is a
// pending ack (pendingack.go).
func (s *Server) InterceptAck(r *broker.AckRequest) bool {
	if r.Cmd.TxnidMostBits == nil && r.Cmd.TxnidLeastBits == nil {
		return false
	}
	s.handleAck(r)
	return true
}

// HeldEntry implements broker.AckHook: an entry an open transaction
// acknowledged whole is withheld until it ends.
func (s *Server) HeldEntry(l broker.SubLoop, w broker.Withheld) bool {
	pa := s.subs.Get(l)
	return pa != nil && pa.heldRead(w)
}

// ErrConflict: a transactional acknowledgement conflicts with another
// transaction's or with an acknowledgement outside transactions, or a
// transaction is ended both ways.
var ErrConflict = errors.New("txn/server: transaction conflict")

// errorCode maps an error of the participant side to a ServerError.
func errorCode(err error) pb.ServerError {
	switch {
	case errors.Is(err, ErrConflict):
		return pb.ServerError_TransactionConflict
	case errors.Is(err, broker.ErrNotAllowed):
		return pb.ServerError_NotAllowedError
	case errors.Is(err, broker.ErrTopicNotFound):
		return pb.ServerError_TopicNotFound
	case errors.Is(err, broker.ErrSubscriptionNotFound):
		return pb.ServerError_SubscriptionNotFound
	case errors.Is(err, broker.ErrClosed), errors.Is(err, context.DeadlineExceeded):
		return pb.ServerError_ServiceNotReady
	}
	return pb.ServerError_UnknownError
}

func pastTense(a txn.Action) string {
	if a == txn.Abort {
		return "aborted"
	}
	return "committed"
}
