package broker

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

	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
	"github.com/magnetar-mq/magnetar/txn"
	"github.com/magnetar-mq/magnetar/txn/coordinator"
)

// Names of the transaction system topics (Pulsar's).
const (
	// TxnAssignTopic is partitioned into the coordinators: partition N
	// is owned by whichever broker serves coordinator N.
	TxnAssignTopic = "persistent://pulsar/system/transaction_coordinator_assign"
	// TxnLogPrefix + N names coordinator N's log (a managed ledger).
	TxnLogPrefix = "persistent://pulsar/system/__transaction_log_"
	// txnLogCursor is the log's cursor: its mark-delete position is the
	// trim point.
	txnLogCursor = "transaction.subscription"
	// DefaultTransactionCoordinators is the partition count the assign
	// topic is created with (Pulsar's default).
	DefaultTransactionCoordinators = 16
	// txnCoordinatorsPath lists the coordinators that have a log, so a
	// restarted broker recovers them without waiting for a client:
	// /transaction-coordinators/<id>.
	txnCoordinatorsPath = "/transaction-coordinators"
)

// errTxnDisabled answers transaction requests when the broker runs no
// coordinator.
var errTxnDisabled = errors.New("the broker doesn't enable the transaction coordinator (transactionCoordinatorEnabled=false)")

// tcService holds the coordinators of this broker; nil when
// TransactionCoordinatorEnabled is off (the plain paths never look at it).
type tcService struct {
	b    *Broker
	n    int // partitions of the assign topic
	part *tcParticipant
	mu   struct {
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

// startTxnCoordinators creates the assign topic (once per cluster) and
// recovers the coordinators that have a log (on a single node; in a
// cluster a coordinator loads when its assign partition is looked up).
func (b *Broker) startTxnCoordinators(ctx context.Context) error {
	if !b.cfg.TransactionCoordinatorEnabled {
		return nil
	}
	tn, _ := parseTopicName(TxnAssignTopic)
	n, err := b.reg.partitions(ctx, tn)
	if err != nil {
		return fmt.Errorf("broker: transaction coordinator assign topic: %w", err)
	}
	if n == 0 {
		err := b.reg.setPartitions(ctx, tn, PartitionedMetadata{Partitions: b.cfg.TransactionCoordinators}, true)
		if err != nil && !errors.Is(err, ErrAlreadyExists) {
			return fmt.Errorf("broker: create %s: %w", TxnAssignTopic, err)
		}
		if n, err = b.reg.partitions(ctx, tn); err != nil {
			return err
		}
	}
	s := &tcService{b: b, n: n, part: &tcParticipant{b: b}}
	s.mu.coords = map[uint64]*tcLoad{}
	b.tc = s
	if b.cluster != nil {
		return nil
	}
	ids, err := childrenOf(ctx, b.deps.Metadata, txnCoordinatorsPath)
	if err != nil {
		return err
	}
	for _, idS := range ids {
		id, err := strconv.ParseUint(idS, 10, 64)
		if err != nil || id >= uint64(n) {
			continue
		}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			ctx, cancel := context.WithTimeout(b.life, requestTimeout)
			defer cancel()
			if _, err := s.get(ctx, id); err != nil {
				b.log.Warn("transaction coordinator recovery", "tc", id, "err", err)
			}
		}()
	}
	return nil
}

// closeTxnCoordinators closes every loaded coordinator (before the topics
// close: ending a transaction calls them).
func (b *Broker) closeTxnCoordinators() {
	s := b.tc
	if s == nil {
		return
	}
	s.mu.Lock()
	s.mu.closed = true
	loads := make([]*tcLoad, 0, len(s.mu.coords))
	for _, l := range s.mu.coords {
		loads = append(loads, l)
	}
	s.mu.Unlock()
	for _, l := range loads {
		<-l.done
		if l.c != nil {
			l.c.Close()
		}
	}
	s.part.close()
}

// assignPartition is coordinator id's partition of the assign topic.
func assignPartition(id uint64) topicName {
	tn, _ := parseTopicName(TxnAssignTopic + "-partition-" + strconv.FormatUint(id, 10))
	return tn
}

// get returns coordinator id, loading (recovering) it if needed.
func (s *tcService) get(ctx context.Context, id uint64) (*coordinator.Coordinator, error) {
	if id >= uint64(s.n) {
		return nil, fmt.Errorf("%w: transaction coordinator %d (there are %d)", coordinator.ErrWrongCoordinator, id, s.n)
	}
	bundle, err := s.b.topicBundle(ctx, assignPartition(id))
	if err != nil {
		s.drop(id)
		return nil, err
	}
	for {
		s.mu.Lock()
		if s.mu.closed {
			s.mu.Unlock()
			return nil, ErrClosed
		}
		l := s.mu.coords[id]
		if l == nil {
			l = &tcLoad{done: make(chan struct{}), bundle: bundle}
			s.mu.coords[id] = l
			s.mu.Unlock()
			l.c, l.log, l.err = s.load(id)
			if l.err != nil {
				s.mu.Lock()
				delete(s.mu.coords, id)
				s.mu.Unlock()
			}
			close(l.done)
			return l.c, l.err
		}
		s.mu.Unlock()
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
			s.mu.Lock()
			if s.mu.coords[id] == l {
				delete(s.mu.coords, id)
			}
			s.mu.Unlock()
			continue
		default:
		}
		return l.c, nil
	}
}

// drop closes coordinator id if loaded (its bundle is no longer ours).
func (s *tcService) drop(id uint64) {
	s.mu.Lock()
	l := s.mu.coords[id]
	if l != nil {
		delete(s.mu.coords, id)
	}
	s.mu.Unlock()
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
func (s *tcService) dropBundle(key string) {
	s.mu.Lock()
	var ids []uint64
	for id, l := range s.mu.coords {
		if l.bundle == key {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	for _, id := range ids {
		s.drop(id)
	}
}

func (s *tcService) load(id uint64) (*coordinator.Coordinator, *mlTxnLog, error) {
	ctx, cancel := context.WithTimeout(s.b.life, requestTimeout)
	defer cancel()
	b := s.b
	key := txnCoordinatorsPath + "/" + strconv.FormatUint(id, 10)
	if _, err := b.deps.Metadata.Put(ctx, key, nil, metadata.NotExists); err != nil && !errors.Is(err, metadata.ErrExists) {
		return nil, nil, fmt.Errorf("broker: register transaction coordinator %d: %w", id, err)
	}
	name := TxnLogPrefix + strconv.FormatUint(id, 10)
	ml, err := b.deps.OpenLedger(ctx, name)
	if err != nil {
		return nil, nil, fmt.Errorf("broker: open transaction log %s: %w", name, err)
	}
	cur, err := ml.OpenCursor(txnLogCursor, initialEarliest)
	if err != nil {
		ml.Close()
		return nil, nil, fmt.Errorf("broker: open transaction log cursor of %s: %w", name, err)
	}
	log := &mlTxnLog{name: name, ml: ml, cur: cur}
	c, err := coordinator.Open(ctx, coordinator.Config{
		ID: id, Log: log, Participant: s.part,
		MaxActive: b.cfg.MaxActiveTransactionsPerCoordinator,
		Logger:    b.log.With("component", "txn-coordinator"),
	})
	if err != nil {
		ml.Close()
		return nil, nil, err
	}
	return c, log, nil
}

// mlTxnLog is a coordinator.Log on a managed ledger. It remembers the
// positions of the records it replayed or appended, so TrimBefore can
// mark-delete up to the record before a given one.
type mlTxnLog struct {
	name string
	ml   ManagedLedger
	cur  cursor
	mu   sync.Mutex
	pos  []position // retained records, ascending
}

func (l *mlTxnLog) Append(rec []byte, cb func(coordinator.Pos, error)) {
	l.ml.AddEntry(rec, 0, 1, func(p position, err error) {
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
			return fmt.Errorf("broker: read transaction log: %w", err)
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

// handleTxnCoordinator serves one coordinator command; the work (a
// durable log append, ending on participants) runs off the read loop.
func (c *conn) handleTxnCoordinator(f *pulsarproto.Frame) error {
	cmd := f.Cmd
	switch f.Type {
	case pb.BaseCommand_TC_CLIENT_CONNECT_REQUEST:
		m := cmd.TcClientConnectRequest
		if m == nil {
			return fmt.Errorf("%w: %s without body", ErrProtocol, f.Type)
		}
		go c.tcConnect(m)
	case pb.BaseCommand_NEW_TXN:
		m := cmd.NewTxn
		if m == nil {
			return fmt.Errorf("%w: %s without body", ErrProtocol, f.Type)
		}
		go c.newTxn(m)
	case pb.BaseCommand_ADD_PARTITION_TO_TXN:
		m := cmd.AddPartitionToTxn
		if m == nil {
			return fmt.Errorf("%w: %s without body", ErrProtocol, f.Type)
		}
		go c.addPartitionToTxn(m)
	case pb.BaseCommand_ADD_SUBSCRIPTION_TO_TXN:
		m := cmd.AddSubscriptionToTxn
		if m == nil {
			return fmt.Errorf("%w: %s without body", ErrProtocol, f.Type)
		}
		go c.addSubscriptionToTxn(m)
	case pb.BaseCommand_END_TXN:
		m := cmd.EndTxn
		if m == nil {
			return fmt.Errorf("%w: %s without body", ErrProtocol, f.Type)
		}
		go c.endTxn(m)
	}
	return nil
}

// txnError maps an error to the ServerError Pulsar answers with.
func txnError(err error) (pb.ServerError, string) {
	switch {
	case errors.Is(err, errTxnDisabled):
		return pb.ServerError_NotAllowedError, err.Error()
	case errors.Is(err, coordinator.ErrTxnNotFound):
		return pb.ServerError_TransactionNotFound, err.Error()
	case errors.Is(err, coordinator.ErrInvalidStatus):
		return pb.ServerError_InvalidTxnStatus, err.Error()
	case errors.Is(err, coordinator.ErrWrongCoordinator), errors.Is(err, coordinator.ErrClosed):
		return pb.ServerError_TransactionCoordinatorNotFound, err.Error()
	case errors.Is(err, coordinator.ErrTooManyActive), errors.Is(err, coordinator.ErrSequenceExhausted),
		errors.Is(err, coordinator.ErrBadArgument):
		return pb.ServerError_NotAllowedError, err.Error()
	case errors.Is(err, ErrInvalidTopicName):
		return pb.ServerError_InvalidTopicName, err.Error()
	case errors.Is(err, cluster.ErrNotOwned), errors.Is(err, cluster.ErrUnloading), errors.Is(err, ErrClosed):
		return pb.ServerError_ServiceNotReady, err.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return pb.ServerError_ServiceNotReady, "timed out: " + err.Error()
	}
	return pb.ServerError_UnknownError, err.Error()
}

// coordinatorFor returns the coordinator that owns transaction ids with
// most bits tc.
func (c *conn) coordinatorFor(ctx context.Context, tc uint64) (*coordinator.Coordinator, error) {
	s := c.b.tc
	if s == nil {
		return nil, errTxnDisabled
	}
	return s.get(ctx, tc)
}

func (c *conn) tcConnect(m *pb.CommandTcClientConnectRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	rid := m.GetRequestId()
	resp := &pb.CommandTcClientConnectResponse{RequestId: &rid}
	if _, err := c.coordinatorFor(ctx, m.GetTcId()); err != nil {
		code, msg := txnError(err)
		resp.Error, resp.Message = code.Enum(), &msg
	}
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_TC_CLIENT_CONNECT_RESPONSE.Enum(), TcClientConnectResponse: resp})
}

// txnTTL converts NEW_TXN's txn_ttl_seconds, which clients fill in
// milliseconds (Pulsar's coordinator reads it so too).
func txnTTL(ms uint64) time.Duration {
	const maxMs = uint64(1<<63-1) / uint64(time.Millisecond)
	return time.Duration(min(ms, maxMs)) * time.Millisecond
}

func (c *conn) newTxn(m *pb.CommandNewTxn) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	rid := m.GetRequestId()
	resp := &pb.CommandNewTxnResponse{RequestId: &rid}
	co, err := c.coordinatorFor(ctx, m.GetTcId())
	var id txn.ID
	if err == nil {
		id, err = co.NewTxn(ctx, txnTTL(m.GetTxnTtlSeconds()))
	}
	if err != nil {
		code, msg := txnError(err)
		resp.Error, resp.Message = code.Enum(), &msg
	} else {
		resp.TxnidMostBits, resp.TxnidLeastBits = &id.Most, &id.Least
	}
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_NEW_TXN_RESPONSE.Enum(), NewTxnResponse: resp})
}

func (c *conn) addPartitionToTxn(m *pb.CommandAddPartitionToTxn) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	rid, most, least := m.GetRequestId(), m.GetTxnidMostBits(), m.GetTxnidLeastBits()
	resp := &pb.CommandAddPartitionToTxnResponse{RequestId: &rid, TxnidMostBits: &most, TxnidLeastBits: &least}
	err := func() error {
		topics := make([]string, 0, len(m.GetPartitions()))
		for _, p := range m.GetPartitions() {
			tn, err := parseTopicName(p)
			if err != nil {
				return err
			}
			topics = append(topics, tn.String())
		}
		co, err := c.coordinatorFor(ctx, most)
		if err != nil {
			return err
		}
		return co.AddPartitions(ctx, txn.ID{Most: most, Least: least}, topics)
	}()
	if err != nil {
		code, msg := txnError(err)
		resp.Error, resp.Message = code.Enum(), &msg
	}
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_ADD_PARTITION_TO_TXN_RESPONSE.Enum(), AddPartitionToTxnResponse: resp})
}

func (c *conn) addSubscriptionToTxn(m *pb.CommandAddSubscriptionToTxn) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	rid, most, least := m.GetRequestId(), m.GetTxnidMostBits(), m.GetTxnidLeastBits()
	resp := &pb.CommandAddSubscriptionToTxnResponse{RequestId: &rid, TxnidMostBits: &most, TxnidLeastBits: &least}
	err := func() error {
		subs := make([]coordinator.SubRef, 0, len(m.GetSubscription()))
		for _, s := range m.GetSubscription() {
			tn, err := parseTopicName(s.GetTopic())
			if err != nil {
				return err
			}
			if strings.TrimSpace(s.GetSubscription()) == "" {
				return fmt.Errorf("%w: empty subscription name", coordinator.ErrBadArgument)
			}
			subs = append(subs, coordinator.SubRef{Topic: tn.String(), Subscription: s.GetSubscription()})
		}
		co, err := c.coordinatorFor(ctx, most)
		if err != nil {
			return err
		}
		return co.AddSubscriptions(ctx, txn.ID{Most: most, Least: least}, subs)
	}()
	if err != nil {
		code, msg := txnError(err)
		resp.Error, resp.Message = code.Enum(), &msg
	}
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_ADD_SUBSCRIPTION_TO_TXN_RESPONSE.Enum(), AddSubscriptionToTxnResponse: resp})
}

func (c *conn) endTxn(m *pb.CommandEndTxn) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	rid, most, least := m.GetRequestId(), m.GetTxnidMostBits(), m.GetTxnidLeastBits()
	resp := &pb.CommandEndTxnResponse{RequestId: &rid, TxnidMostBits: &most, TxnidLeastBits: &least}
	err := func() error {
		if m.TxnAction == nil {
			return fmt.Errorf("%w: END_TXN without txn_action", coordinator.ErrBadArgument)
		}
		co, err := c.coordinatorFor(ctx, most)
		if err != nil {
			return err
		}
		return co.End(ctx, txn.ID{Most: most, Least: least}, txn.Action(m.GetTxnAction()))
	}()
	if err != nil {
		code, msg := txnError(err)
		resp.Error, resp.Message = code.Enum(), &msg
	}
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_END_TXN_RESPONSE.Enum(), EndTxnResponse: resp})
}

// TxnCoordinator returns coordinator id, loading it if needed (admin).
func (b *Broker) TxnCoordinator(ctx context.Context, id uint64) (*coordinator.Coordinator, error) {
	if b.tc == nil {
		return nil, errTxnDisabled
	}
	return b.tc.get(ctx, id)
}

// TxnCoordinatorCount returns the partitions of the assign topic (0:
// transactions disabled).
func (b *Broker) TxnCoordinatorCount() int {
	if b.tc == nil {
		return 0
	}
	return b.tc.n
}

// ErrTxnDisabled reports transaction admin calls on a broker without a
// coordinator.
var ErrTxnDisabled = errTxnDisabled

// LoadedTxnCoordinators lists the ids of the coordinators this broker
// serves now, ascending.
func (b *Broker) LoadedTxnCoordinators() []uint64 {
	if b.tc == nil {
		return nil
	}
	s := b.tc
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]uint64, 0, len(s.mu.coords))
	for id, l := range s.mu.coords {
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

// TxnLogStats is a coordinator log's managed-ledger name and internal
// stats (Pulsar's coordinatorInternalStats).
func (b *Broker) TxnLogStats(ctx context.Context, id uint64) (string, InternalStats, error) {
	if _, err := b.TxnCoordinator(ctx, id); err != nil {
		return "", InternalStats{}, err
	}
	b.tc.mu.Lock()
	l := b.tc.mu.coords[id]
	b.tc.mu.Unlock()
	if l == nil || l.log == nil {
		return "", InternalStats{}, fmt.Errorf("%w: transaction coordinator %d was unloaded", coordinator.ErrClosed, id)
	}
	// Pulsar's managed-ledger naming: tenant/namespace/domain/local.
	name := "pulsar/system/persistent/" + strings.TrimPrefix(l.log.name, "persistent://pulsar/system/")
	return name, internalStatsOf(l.log.ml.Stats()), nil
}
