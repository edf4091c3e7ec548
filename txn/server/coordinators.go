package server

// The transaction coordinators this broker serves (package
// txn/coordinator): the TC_CLIENT_CONNECT, NEW_TXN, ADD_PARTITION_TO_TXN,
// ADD_SUBSCRIPTION_TO_TXN and END_TXN commands, the assign topic, and each
// coordinator's log on a managed ledger of its own. See
// docs/transactions.md.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
	"github.com/magnetar-mq/magnetar/topicreg"
	"github.com/magnetar-mq/magnetar/txn"
	"github.com/magnetar-mq/magnetar/txn/coordinator"
)

// Names of the transaction system topics (Pulsar's).
const (
	// AssignTopic is partitioned into the coordinators: partition N is
	// owned by whichever broker serves coordinator N.
	AssignTopic = "persistent://pulsar/system/transaction_coordinator_assign"
	// LogPrefix + N names coordinator N's log (a managed ledger).
	LogPrefix = "persistent://pulsar/system/__transaction_log_"
	// logCursor is the log's cursor: its mark-delete position is the
	// trim point.
	logCursor = "transaction.subscription"
	// coordinatorsPath lists the coordinators that have a log, so a
	// restarted broker recovers them without waiting for a client:
	// /transaction-coordinators/<id>.
	coordinatorsPath = "/transaction-coordinators"
)

// coordinators holds the coordinators of this broker.
type coordinators struct {
	s  *Server
	n  int // partitions of the assign topic
	mu struct {
		sync.Mutex
		coords map[uint64]*tcLoad
		closed bool
	}
}

type tcLoad struct {
	done   chan struct{}
	c      *coordinator.Coordinator
	log    *mlTxnLog
	err    error
	bundle string // the assign partition's bundle key ("" on a single node)
}

func newCoordinators(s *Server) *coordinators {
	c := &coordinators{s: s}
	c.mu.coords = map[uint64]*tcLoad{}
	return c
}

// start creates the assign topic (once per cluster) and recovers the
// coordinators that have a log (on a single node; in a cluster a
// coordinator loads when a client connects to it at the owner of its
// assign partition).
func (cs *coordinators) start(ctx context.Context) error {
	b := cs.s.b
	n, err := b.Registry().Partitions(ctx, AssignTopic)
	if err != nil {
		return fmt.Errorf("txn/server: transaction coordinator assign topic: %w", err)
	}
	if n == 0 {
		err := b.Registry().CreatePartitioned(ctx, AssignTopic, topicreg.PartitionedMetadata{Partitions: cs.s.cfg.Coordinators})
		if err != nil && !errors.Is(err, broker.ErrAlreadyExists) {
			return fmt.Errorf("txn/server: create %s: %w", AssignTopic, err)
		}
		if n, err = b.Registry().Partitions(ctx, AssignTopic); err != nil {
			return err
		}
	}
	cs.n = n
	if b.Ownership() != nil {
		return nil
	}
	ids, err := b.Metadata().Children(ctx, coordinatorsPath)
	if err != nil && !errors.Is(err, metadata.ErrNotFound) {
		return err
	}
	for _, idS := range ids {
		id, err := strconv.ParseUint(idS, 10, 64)
		if err != nil || id >= uint64(n) {
			continue
		}
		cs.s.spawn(func() {
			ctx, cancel := context.WithTimeout(cs.s.life, requestTimeout)
			defer cancel()
			if _, err := cs.get(ctx, id); err != nil {
				cs.s.log.Warn("transaction coordinator recovery", "tc", id, "err", err)
			}
		})
	}
	return nil
}

// close closes every loaded coordinator.
func (cs *coordinators) close() {
	cs.mu.Lock()
	cs.mu.closed = true
	loads := make([]*tcLoad, 0, len(cs.mu.coords))
	for _, l := range cs.mu.coords {
		loads = append(loads, l)
	}
	cs.mu.Unlock()
	for _, l := range loads {
		<-l.done
		if l.c != nil {
			l.c.Close()
		}
	}
}

// assignPartition is coordinator id's partition of the assign topic.
func assignPartition(id uint64) string {
	return AssignTopic + "-partition-" + strconv.FormatUint(id, 10)
}

// get returns coordinator id, loading (recovering) it if needed.
func (cs *coordinators) get(ctx context.Context, id uint64) (*coordinator.Coordinator, error) {
	if id >= uint64(cs.n) {
		return nil, fmt.Errorf("%w: transaction coordinator %d (there are %d)", coordinator.ErrWrongCoordinator, id, cs.n)
	}
	bundle, err := cs.s.b.OwnedBundle(ctx, assignPartition(id))
	if err != nil {
		cs.drop(id)
		return nil, err
	}
	for {
		cs.mu.Lock()
		if cs.mu.closed {
			cs.mu.Unlock()
			return nil, broker.ErrClosed
		}
		l := cs.mu.coords[id]
		if l == nil {
			l = &tcLoad{done: make(chan struct{}), bundle: bundle}
			cs.mu.coords[id] = l
			cs.mu.Unlock()
			l.c, l.log, l.err = cs.load(id)
			if l.err != nil {
				cs.mu.Lock()
				delete(cs.mu.coords, id)
				cs.mu.Unlock()
			}
			close(l.done)
			return l.c, l.err
		}
		cs.mu.Unlock()
		select {
		case <-l.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if l.err != nil {
			return nil, l.err
		}
		select {
		case <-l.c.Closed():
			// Closed after a failure or a lost bundle: load again.
			cs.mu.Lock()
			if cs.mu.coords[id] == l {
				delete(cs.mu.coords, id)
			}
			cs.mu.Unlock()
			continue
		default:
		}
		return l.c, nil
	}
}

// drop closes coordinator id if loaded (its bundle is no longer ours).
func (cs *coordinators) drop(id uint64) {
	cs.mu.Lock()
	l := cs.mu.coords[id]
	if l != nil {
		delete(cs.mu.coords, id)
	}
	cs.mu.Unlock()
	if l != nil {
		<-l.done
		if l.c != nil {
			l.c.Close()
		}
	}
}

// dropBundle closes the coordinators whose assign partition is in the
// bundle with key (the bundle was unloaded or lost): the next owner
// recovers them from their logs.
func (cs *coordinators) dropBundle(key string) {
	cs.mu.Lock()
	var ids []uint64
	for id, l := range cs.mu.coords {
		if l.bundle == key {
			ids = append(ids, id)
		}
	}
	cs.mu.Unlock()
	for _, id := range ids {
		cs.drop(id)
	}
}

func (cs *coordinators) load(id uint64) (*coordinator.Coordinator, *mlTxnLog, error) {
	ctx, cancel := context.WithTimeout(cs.s.life, requestTimeout)
	defer cancel()
	b := cs.s.b
	key := coordinatorsPath + "/" + strconv.FormatUint(id, 10)
	if _, err := b.Metadata().Put(ctx, key, nil, metadata.NotExists); err != nil && !errors.Is(err, metadata.ErrExists) {
		return nil, nil, fmt.Errorf("txn/server: register transaction coordinator %d: %w", id, err)
	}
	name := LogPrefix + strconv.FormatUint(id, 10)
	ml, err := b.OpenLedger(ctx, name)
	if err != nil {
		return nil, nil, fmt.Errorf("txn/server: open transaction log %s: %w", name, err)
	}
	cur, err := ml.OpenCursor(logCursor, storage.InitialEarliest)
	if err != nil {
		ml.Close()
		return nil, nil, fmt.Errorf("txn/server: open transaction log cursor of %s: %w", name, err)
	}
	log := &mlTxnLog{name: name, ml: ml, cur: cur}
	c, err := coordinator.Open(ctx, coordinator.Config{
		ID: id, Log: log, Participant: &cs.s.remote,
		MaxActive: cs.s.cfg.MaxActivePerCoordinator,
		Logger:    cs.s.log.With("component", "txn-coordinator"),
	})
	if err != nil {
		ml.Close()
		return nil, nil, err
	}
	return c, log, nil
}

// loaded lists the ids of the coordinators this broker serves now,
// ascending.
func (cs *coordinators) loaded() []uint64 {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := make([]uint64, 0, len(cs.mu.coords))
	for id, l := range cs.mu.coords {
		select {
		case <-l.done:
			if l.err == nil {
				out = append(out, id)
			}
		default:
		}
	}
	slices.Sort(out)
	return out
}

// mlTxnLog is a coordinator.Log on a managed ledger. It remembers the
// positions of the records it replayed or appended, so TrimBefore can
// mark-delete up to the record before a given one.
type mlTxnLog struct {
	name string
	ml   storage.ManagedLedger
	cur  storage.Cursor
	mu   sync.Mutex
	pos  []storage.Position // retained records, ascending
}

func (l *mlTxnLog) Append(rec []byte, cb func(coordinator.Pos, error)) {
	l.ml.AddEntry(rec, 0, 1, func(p storage.Position, err error) {
		if err == nil {
			l.mu.Lock()
			l.pos = append(l.pos, p)
			l.mu.Unlock()
		}
		cb(coordinator.Pos{Ledger: p.LedgerID, Entry: p.EntryID}, err)
	})
}

func (l *mlTxnLog) Replay(ctx context.Context, fn func(coordinator.Pos, []byte) error) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		es, err := l.cur.ReadEntries(100)
		if err != nil {
			return fmt.Errorf("txn/server: read transaction log: %w", err)
		}
		if len(es) == 0 {
			return nil
		}
		for _, e := range es {
			l.mu.Lock()
			l.pos = append(l.pos, e.Pos)
			l.mu.Unlock()
			if err := fn(coordinator.Pos{Ledger: e.Pos.LedgerID, Entry: e.Pos.EntryID}, e.Data); err != nil {
				return err
			}
		}
	}
}

func (l *mlTxnLog) TrimBefore(_ context.Context, p coordinator.Pos) error {
	l.mu.Lock()
	i := 0
	for i < len(l.pos) && (l.pos[i].LedgerID < p.Ledger || (l.pos[i].LedgerID == p.Ledger && l.pos[i].EntryID < p.Entry)) {
		i++
	}
	if i == 0 {
		l.mu.Unlock()
		return nil
	}
	last := l.pos[i-1]
	l.pos = append(l.pos[:0], l.pos[i:]...)
	l.mu.Unlock()
	return l.cur.AckCumulative(last)
}

func (l *mlTxnLog) Close() error { return l.ml.Close() }

// Commands implements broker.CommandSource: the coordinator commands and
// END_TXN_ON_PARTITION / END_TXN_ON_SUBSCRIPTION, which only a
// coordinator (another broker's client, a superuser) may send.
func (s *Server) Commands() []broker.Command {
	return []broker.Command{
		{Type: pb.BaseCommand_TC_CLIENT_CONNECT_REQUEST, Handle: s.tcConnect},
		{Type: pb.BaseCommand_NEW_TXN, Handle: s.newTxn},
		{Type: pb.BaseCommand_ADD_PARTITION_TO_TXN, Handle: s.addPartitionToTxn},
		{Type: pb.BaseCommand_ADD_SUBSCRIPTION_TO_TXN, Handle: s.addSubscriptionToTxn},
		{Type: pb.BaseCommand_END_TXN, Handle: s.endTxn},
		{Type: pb.BaseCommand_END_TXN_ON_PARTITION, SuperUserOnly: true, Handle: s.endTxnOnPartition},
		{Type: pb.BaseCommand_END_TXN_ON_SUBSCRIPTION, SuperUserOnly: true, Handle: s.endTxnOnSubscription},
	}
}

// errBody: a command without its body (the connection is closed).
func errBody(t pb.BaseCommand_Type) error {
	return fmt.Errorf("%w: %s without body", broker.ErrProtocol, t)
}

// answer runs work off the reader goroutine (a durable log append,
// ending on participants) and sends what it returns; nothing while the
// server closes (the client's request times out and is retried).
func (s *Server) answer(c broker.Conn, work func(ctx context.Context) *pb.BaseCommand) {
	s.spawn(func() {
		ctx, cancel := context.WithTimeout(s.life, requestTimeout)
		defer cancel()
		c.Send(work(ctx))
	})
}

// coordinatorError maps an error to the ServerError Pulsar answers with.
func coordinatorError(err error) (*pb.ServerError, *string) {
	code := pb.ServerError_UnknownError
	msg := err.Error()
	switch {
	case errors.Is(err, coordinator.ErrTxnNotFound):
		code = pb.ServerError_TransactionNotFound
	case errors.Is(err, coordinator.ErrInvalidStatus):
		code = pb.ServerError_InvalidTxnStatus
	case errors.Is(err, coordinator.ErrWrongCoordinator), errors.Is(err, coordinator.ErrClosed):
		code = pb.ServerError_TransactionCoordinatorNotFound
	case errors.Is(err, coordinator.ErrTooManyActive), errors.Is(err, coordinator.ErrSequenceExhausted),
		errors.Is(err, coordinator.ErrBadArgument):
		code = pb.ServerError_NotAllowedError
	case errors.Is(err, broker.ErrInvalidTopicName):
		code = pb.ServerError_InvalidTopicName
	case errors.Is(err, cluster.ErrNotOwned), errors.Is(err, cluster.ErrUnloading), errors.Is(err, broker.ErrClosed):
		code = pb.ServerError_ServiceNotReady
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		code, msg = pb.ServerError_ServiceNotReady, "timed out: "+msg
	}
	return code.Enum(), &msg
}

func (s *Server) tcConnect(c broker.Conn, cmd *pb.BaseCommand) error {
	m := cmd.TcClientConnectRequest
	if m == nil {
		return errBody(pb.BaseCommand_TC_CLIENT_CONNECT_REQUEST)
	}
	s.answer(c, func(ctx context.Context) *pb.BaseCommand {
		rid := m.GetRequestId()
		resp := &pb.CommandTcClientConnectResponse{RequestId: &rid}
		if _, err := s.tc.get(ctx, m.GetTcId()); err != nil {
			resp.Error, resp.Message = coordinatorError(err)
		}
		return &pb.BaseCommand{Type: pb.BaseCommand_TC_CLIENT_CONNECT_RESPONSE.Enum(), TcClientConnectResponse: resp}
	})
	return nil
}

// txnTTL converts NEW_TXN's txn_ttl_seconds, which clients fill in
// milliseconds (Pulsar's coordinator reads it so too).
func txnTTL(ms uint64) time.Duration {
	const maxMs = uint64(1<<63-1) / uint64(time.Millisecond)
	return time.Duration(min(ms, maxMs)) * time.Millisecond
}

func (s *Server) newTxn(c broker.Conn, cmd *pb.BaseCommand) error {
	m := cmd.NewTxn
	if m == nil {
		return errBody(pb.BaseCommand_NEW_TXN)
	}
	s.answer(c, func(ctx context.Context) *pb.BaseCommand {
		rid := m.GetRequestId()
		resp := &pb.CommandNewTxnResponse{RequestId: &rid}
		co, err := s.tc.get(ctx, m.GetTcId())
		var id txn.ID
		if err == nil {
			id, err = co.NewTxn(ctx, txnTTL(m.GetTxnTtlSeconds()))
		}
		if err != nil {
			resp.Error, resp.Message = coordinatorError(err)
		} else {
			resp.TxnidMostBits, resp.TxnidLeastBits = &id.Most, &id.Least
		}
		return &pb.BaseCommand{Type: pb.BaseCommand_NEW_TXN_RESPONSE.Enum(), NewTxnResponse: resp}
	})
	return nil
}

func (s *Server) addPartitionToTxn(c broker.Conn, cmd *pb.BaseCommand) error {
	m := cmd.AddPartitionToTxn
	if m == nil {
		return errBody(pb.BaseCommand_ADD_PARTITION_TO_TXN)
	}
	s.answer(c, func(ctx context.Context) *pb.BaseCommand {
		rid, most, least := m.GetRequestId(), m.GetTxnidMostBits(), m.GetTxnidLeastBits()
		resp := &pb.CommandAddPartitionToTxnResponse{RequestId: &rid, TxnidMostBits: &most, TxnidLeastBits: &least}
		err := func() error {
			// The names are kept as the client sent them, as Pulsar's
			// coordinator keeps them (its transaction metadata shows them
			// so); a topic named two ways is ended twice, which is harmless.
			topics := make([]string, 0, len(m.GetPartitions()))
			for _, p := range m.GetPartitions() {
				if _, err := broker.ParseTopicName(p); err != nil {
					return err
				}
				topics = append(topics, p)
			}
			co, err := s.tc.get(ctx, most)
			if err != nil {
				return err
			}
			return co.AddPartitions(ctx, txn.ID{Most: most, Least: least}, topics)
		}()
		if err != nil {
			resp.Error, resp.Message = coordinatorError(err)
		}
		return &pb.BaseCommand{Type: pb.BaseCommand_ADD_PARTITION_TO_TXN_RESPONSE.Enum(), AddPartitionToTxnResponse: resp}
	})
	return nil
}

func (s *Server) addSubscriptionToTxn(c broker.Conn, cmd *pb.BaseCommand) error {
	m := cmd.AddSubscriptionToTxn
	if m == nil {
		return errBody(pb.BaseCommand_ADD_SUBSCRIPTION_TO_TXN)
	}
	s.answer(c, func(ctx context.Context) *pb.BaseCommand {
		rid, most, least := m.GetRequestId(), m.GetTxnidMostBits(), m.GetTxnidLeastBits()
		resp := &pb.CommandAddSubscriptionToTxnResponse{RequestId: &rid, TxnidMostBits: &most, TxnidLeastBits: &least}
		err := func() error {
			subs := make([]coordinator.SubRef, 0, len(m.GetSubscription()))
			for _, sub := range m.GetSubscription() {
				if _, err := broker.ParseTopicName(sub.GetTopic()); err != nil {
					return err
				}
				if strings.TrimSpace(sub.GetSubscription()) == "" {
					return fmt.Errorf("%w: empty subscription name", coordinator.ErrBadArgument)
				}
				subs = append(subs, coordinator.SubRef{Topic: sub.GetTopic(), Subscription: sub.GetSubscription()})
			}
			co, err := s.tc.get(ctx, most)
			if err != nil {
				return err
			}
			return co.AddSubscriptions(ctx, txn.ID{Most: most, Least: least}, subs)
		}()
		if err != nil {
			resp.Error, resp.Message = coordinatorError(err)
		}
		return &pb.BaseCommand{Type: pb.BaseCommand_ADD_SUBSCRIPTION_TO_TXN_RESPONSE.Enum(), AddSubscriptionToTxnResponse: resp}
	})
	return nil
}

func (s *Server) endTxn(c broker.Conn, cmd *pb.BaseCommand) error {
	m := cmd.EndTxn
	if m == nil {
		return errBody(pb.BaseCommand_END_TXN)
	}
	s.answer(c, func(ctx context.Context) *pb.BaseCommand {
		rid, most, least := m.GetRequestId(), m.GetTxnidMostBits(), m.GetTxnidLeastBits()
		resp := &pb.CommandEndTxnResponse{RequestId: &rid, TxnidMostBits: &most, TxnidLeastBits: &least}
		err := func() error {
			if m.TxnAction == nil {
				return fmt.Errorf("%w: END_TXN without txn_action", coordinator.ErrBadArgument)
			}
			co, err := s.tc.get(ctx, most)
			if err != nil {
				return err
			}
			return co.End(ctx, txn.ID{Most: most, Least: least}, txn.Action(m.GetTxnAction()))
		}()
		if err != nil {
			resp.Error, resp.Message = coordinatorError(err)
		}
		return &pb.BaseCommand{Type: pb.BaseCommand_END_TXN_RESPONSE.Enum(), EndTxnResponse: resp}
	})
	return nil
}
