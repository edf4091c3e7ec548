package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/internal/codec"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// Topic compaction (docs/compaction.md): the compactor keeps, for every
// key, the latest message (an empty payload deletes the key) in a
// compacted ledger, recorded with its horizon in the managed ledger's
// info (mledger/compaction.go). read_compacted subscriptions read the
// compacted ledger, then the topic after the horizon.

// compactionSub is the durable cursor holding the topic's data after the
// horizon (Pulsar's __compaction subscription).
const compactionSub = "__compaction"

// compactedHeader precedes every entry of a compacted ledger: the
// entry's position in the topic, two big-endian u64.
const compactedHeader = 16

// compactableLedger is the storage a topic needs to be compacted
// (implemented by the mledger adapter).
type compactableLedger interface {
	compactionState() (mledger.Compaction, bool)
	beginCompaction(ctx context.Context) (mledger.WriteLedger, error)
	commitCompaction(ctx context.Context, w mledger.WriteLedger, horizon position) (int64, error)
	abortCompaction(ctx context.Context, w mledger.WriteLedger) error
	deleteCompacted(ctx context.Context, id int64) error
	openCompacted(ctx context.Context) (mledger.ReadLedger, mledger.Compaction, error)
	// readAfter calls fn for every entry after from (Earliest: all) up to
	// and including to, in order.
	readAfter(ctx context.Context, from, to position, fn func(position, []byte) error) error
}

// Compaction status values (Pulsar's LongRunningProcessStatus).
const (
	CompactionNotRun  = "NOT_RUN"
	CompactionRunning = "RUNNING"
	CompactionSuccess = "SUCCESS"
	CompactionError   = "ERROR"
)

// compactionState is a topic's compactor status.
type compactionState struct {
	sync.Mutex
	status  string
	lastErr string
	done    chan struct{} // closed when the running compaction ends
}

// compactHookForTest, if set, runs in the middle of writing a compacted
// ledger (after its first entry is stored).
var compactHookForTest func(topic string)

// ErrCompactionRunning is returned when a compaction is already running.
var ErrCompactionRunning = errors.New("broker: compaction already in progress")

// startCompaction starts compacting t in the background.
func (t *topic) startCompaction() error {
	if _, ok := t.ml.(compactableLedger); !ok || !t.persistent() {
		return reason(ErrNotAllowed, "compaction needs a persistent topic")
	}
	t.cstate.Lock()
	if t.cstate.status == CompactionRunning {
		t.cstate.Unlock()
		return ErrCompactionRunning
	}
	t.cstate.status, t.cstate.lastErr = CompactionRunning, ""
	done := make(chan struct{})
	t.cstate.done = done
	t.cstate.Unlock()
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		err := t.compact(ctx)
		t.cstate.Lock()
		if err != nil {
			t.cstate.status, t.cstate.lastErr = CompactionError, err.Error()
			t.log.Warn("compaction failed", "topic", t.full, "err", err)
		} else {
			t.cstate.status = CompactionSuccess
		}
		t.cstate.Unlock()
	}()
	return nil
}

// compactionStatus returns the status of the last compaction.
func (t *topic) compactionStatus() (string, string) {
	t.cstate.Lock()
	defer t.cstate.Unlock()
	if t.cstate.status == "" {
		return CompactionNotRun, ""
	}
	return t.cstate.status, t.cstate.lastErr
}

// msgRef names one message: an entry and a batch index (-1: not a batch).
type msgRef struct {
	pos   position
	index int32
}

// compactMsg is one message of an entry as the compactor sees it.
type compactMsg struct {
	key       string
	hasKey    bool
	tombstone bool
	dropped   bool   // a batch slot an earlier compactor marked compacted_out
	smm       []byte // batch: the serialized SingleMessageMetadata
	payload   []byte // batch: the message payload (uncompressed)
}

// entryMessages splits an entry into its messages, opening compressed
// batches (internal/codec). whole is true when the messages cannot be read
// (an encrypted batch, or a compressed one that does not decompress):
// the entry is then kept as it is.
func entryMessages(data []byte) (msgs []compactMsg, whole bool, err error) {
	e, err := pulsarproto.ParseEntry(data)
	if err != nil {
		return nil, false, err
	}
	var md pulsarproto.Metadata
	if err := pulsarproto.ParseMetadata(e.Metadata, &md); err != nil {
		return nil, false, err
	}
	if !md.Batch {
		empty := len(e.Payload) == 0 || (md.Compression != pb.CompressionType_NONE && md.UncompressedSize == 0)
		return []compactMsg{{key: string(md.PartitionKey), hasKey: md.PartitionKey != nil, tombstone: empty || md.NullValue}}, false, nil
	}
	if md.Encrypted {
		return nil, true, nil
	}
	rest := e.Payload
	if md.Compression != pb.CompressionType_NONE {
		if rest, err = codec.Decompress(codec.Type(md.Compression), e.Payload, int(md.UncompressedSize)); err != nil {
			return nil, true, nil
		}
	}
	for i := 0; i < int(md.NumMessagesInBatch) && len(rest) > 0; i++ {
		var sm pulsarproto.SingleMetadata
		var pl []byte
		if rest, pl, err = pulsarproto.NextSingleMessage(rest, &sm); err != nil {
			return nil, false, err
		}
		msgs = append(msgs, compactMsg{
			key: string(sm.PartitionKey), hasKey: sm.PartitionKey != nil && !sm.CompactedOut,
			tombstone: len(pl) == 0 || sm.NullValue, dropped: sm.CompactedOut, smm: sm.Raw, payload: pl,
		})
	}
	return msgs, false, nil
}

// rebatch rebuilds a batch entry with only the messages keep selects,
// compressed with the entry's codec, keeping any broker entry metadata
// in front.
func rebatch(data []byte, msgs []compactMsg, keep []bool) ([]byte, error) {
	e, err := pulsarproto.ParseEntry(data)
	if err != nil {
		return nil, err
	}
	var md pb.MessageMetadata
	if err := proto.Unmarshal(e.Metadata, &md); err != nil {
		return nil, err
	}
	var payload []byte
	n := int32(0)
	for i, m := range msgs {
		if keep[i] {
			payload = pulsarproto.AppendSingleMessage(payload, m.smm, m.payload)
			n++
		}
	}
	md.NumMessagesInBatch = &n
	md.UncompressedSize = ptr(uint32(len(payload)))
	if c := md.GetCompression(); c != pb.CompressionType_NONE {
		if payload, err = codec.Compress(codec.Type(c), payload); err != nil {
			return nil, err
		}
	}
	mb, err := proto.Marshal(&md)
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), data[:len(data)-len(e.Body)]...)
	return pulsarproto.AppendEntry(out, mb, payload), nil
}

// compactedView iterates the current compacted ledger, then the topic
// after its horizon up to lac.
func compactedView(ctx context.Context, cl compactableLedger, lac position, fn func(position, []byte) error) error {
	from := posEarliest
	if r, st, err := cl.openCompacted(ctx); err == nil {
		defer r.Close()
		from = toPos(st.Horizon)
		for first := int64(0); first <= r.LastAddConfirmed(); first += 100 {
			es, err := r.Read(ctx, first, min(first+99, r.LastAddConfirmed()))
			if err != nil {
				return err
			}
			for _, raw := range es {
				pos, data, err := splitCompacted(raw)
				if err != nil {
					return err
				}
				if err := fn(pos, data); err != nil {
					return err
				}
			}
		}
	} else if !errors.Is(err, mledger.ErrNoEntries) {
		return err
	}
	return cl.readAfter(ctx, from, lac, fn)
}

func splitCompacted(raw []byte) (position, []byte, error) {
	if len(raw) < compactedHeader {
		return position{}, nil, fmt.Errorf("broker: compacted entry of %d bytes", len(raw))
	}
	return position{int64(binary.BigEndian.Uint64(raw)), int64(binary.BigEndian.Uint64(raw[8:]))}, raw[compactedHeader:], nil
}

// compact runs one compaction of t up to its last entry now.
func (t *topic) compact(ctx context.Context) error {
	cl := t.ml.(compactableLedger)
	lac, ok := t.ml.LastConfirmed()
	if !ok {
		return nil
	}
	if st, has := cl.compactionState(); has && toPos(st.Horizon).Compare(lac) >= 0 {
		return nil
	}
	// Pass 1: the latest message of every key.
	latest := map[string]msgRef{}
	err := compactedView(ctx, cl, lac, func(pos position, data []byte) error {
		msgs, whole, err := entryMessages(data)
		if err != nil || whole {
			return nil // unreadable entries are kept as they are (pass 2)
		}
		for i, m := range msgs {
			if !m.hasKey {
				continue
			}
			if m.tombstone {
				delete(latest, m.key)
				continue
			}
			idx := int32(-1)
			if m.smm != nil {
				idx = int32(i)
			}
			latest[m.key] = msgRef{pos, idx}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	// Pass 2: write the kept messages to a new ledger.
	w, err := cl.beginCompaction(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	aw := newAsyncWriter(w)
	retainNullKey := t.b.cfg.TopicCompactionRetainNullKey
	hooked := false
	err = compactedView(ctx, cl, lac, func(pos position, data []byte) error {
		if compactHookForTest != nil && aw.n > 0 && !hooked {
			// Tests: stop here, with part of the new ledger written.
			hooked = true
			if err := aw.wait(); err != nil {
				return err
			}
			compactHookForTest(t.full)
		}
		msgs, whole, err := entryMessages(data)
		if err != nil || whole {
			aw.add(pos, data)
			return aw.err()
		}
		keep := make([]bool, len(msgs))
		kept := 0
		for i, m := range msgs {
			idx := int32(-1)
			if m.smm != nil {
				idx = int32(i)
			}
			if (m.hasKey && latest[m.key] == (msgRef{pos, idx})) || (retainNullKey && !m.hasKey && !m.dropped) {
				keep[i] = true
				kept++
			}
		}
		switch {
		case kept == 0:
		case kept == len(msgs):
			aw.add(pos, data)
		default:
			nd, err := rebatch(data, msgs, keep)
			if err != nil {
				return err
			}
			aw.add(pos, nd)
		}
		return aw.err()
	})
	if err == nil {
		err = aw.wait()
	}
	if err != nil {
		aw.wait()
		if aerr := cl.abortCompaction(ctx, w); aerr != nil {
			t.log.Warn("abort compaction", "topic", t.full, "err", aerr)
		}
		return fmt.Errorf("write: %w", err)
	}
	prev, err := cl.commitCompaction(ctx, w, lac)
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	// The __compaction cursor keeps the data after the horizon.
	s, err := t.getOrCreateSub(subscribeReq{sub: compactionSub, typ: SubExclusive, durable: true, initial: initialEarliest})
	if err == nil {
		var aerr error
		s.call(func() { aerr = s.cur.AckCumulative(lac) })
		if aerr != nil {
			t.log.Warn("move the compaction cursor", "topic", t.full, "err", aerr)
		}
	} else {
		t.log.Warn("open the compaction cursor", "topic", t.full, "err", err)
	}
	// Readers switch to the new compacted ledger before the old one goes.
	for _, s := range *t.subList.Load() {
		s.call(func() {
			if cc, ok := s.cur.(*compactedCursor); ok {
				cc.reload()
			}
		})
	}
	if prev >= 0 {
		if err := cl.deleteCompacted(ctx, prev); err != nil {
			t.log.Warn("delete the previous compacted ledger", "topic", t.full, "ledger", prev, "err", err)
		}
	}
	t.log.Info("topic compacted", "topic", t.full, "horizon", lac, "keys", len(latest))
	return nil
}

// asyncWriter pipelines adds to a compacted ledger (bounded in flight).
type asyncWriter struct {
	w     mledger.WriteLedger
	sem   chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	first error
	n     int // entries added
}

func newAsyncWriter(w mledger.WriteLedger) *asyncWriter {
	return &asyncWriter{w: w, sem: make(chan struct{}, 256)}
}

func (a *asyncWriter) add(pos position, data []byte) {
	buf := make([]byte, compactedHeader, compactedHeader+len(data))
	binary.BigEndian.PutUint64(buf, uint64(pos.LedgerID))
	binary.BigEndian.PutUint64(buf[8:], uint64(pos.EntryID))
	buf = append(buf, data...)
	a.sem <- struct{}{}
	a.wg.Add(1)
	a.n++
	a.w.AddAsync(buf, func(_ int64, err error) {
		if err != nil {
			a.mu.Lock()
			if a.first == nil {
				a.first = err
			}
			a.mu.Unlock()
		}
		<-a.sem
		a.wg.Done()
	})
}

func (a *asyncWriter) err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.first
}

func (a *asyncWriter) wait() error {
	a.wg.Wait()
	return a.err()
}

// compactionBacklogBytes estimates the bytes stored after the horizon.
func (t *topic) compactionBacklogBytes() int64 {
	cl, ok := t.ml.(compactableLedger)
	if !ok {
		return 0
	}
	st, has := cl.compactionState()
	var n int64
	for _, l := range t.ml.Stats().Ledgers {
		switch {
		case !has || l.LedgerID > st.Horizon.LedgerID:
			n += l.Size
		case l.LedgerID == st.Horizon.LedgerID && l.Entries > 0:
			n += l.Size * max(l.Entries-1-st.Horizon.EntryID, 0) / l.Entries
		}
	}
	return n
}

// compactionLoop starts the compaction of loaded topics whose backlog
// after the horizon is above their namespace's compaction_threshold.
func (b *Broker) compactionLoop() {
	b.every(b.cfg.CompactionMonitorInterval, func(time.Time) {
		for t := range b.everyLoaded("") {
			if !t.persistent() {
				continue
			}
			p := b.namespacePolicies(t.name.NamespaceName())
			if p == nil || p.CompactionThreshold == nil || *p.CompactionThreshold <= 0 {
				continue
			}
			if t.compactionBacklogBytes() > *p.CompactionThreshold {
				if err := t.startCompaction(); err != nil && !errors.Is(err, ErrCompactionRunning) {
					b.log.Warn("threshold compaction", "topic", t.full, "err", err)
				}
			}
		}
	})
}

// partitionsOf returns the partitions of a partitioned topic name, or
// nil for any other name.
func (b *Broker) partitionsOf(ctx context.Context, topic string) ([]string, error) {
	tn, err := parseTopicName(topic)
	if err != nil || tn.IsPartition() {
		return nil, err
	}
	n, err := b.reg.partitions(ctx, tn)
	if err != nil || n <= 0 {
		return nil, err
	}
	out := make([]string, n)
	for i := range out {
		out[i] = tn.Partition(i).String()
	}
	return out, nil
}

// Compact implements Service: start compacting topic (every partition
// of a partitioned topic).
func (b *Broker) Compact(ctx context.Context, topic string) error {
	parts, err := b.partitionsOf(ctx, topic)
	if err != nil {
		return err
	}
	if parts != nil {
		var errs []error
		for _, p := range parts {
			if err := b.Compact(ctx, p); err != nil && !errors.Is(err, ErrAlreadyExists) {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	t, err := b.loadedOrLoad(ctx, topic)
	if err != nil {
		return err
	}
	if err := t.startCompaction(); err != nil {
		if errors.Is(err, ErrCompactionRunning) {
			return reason(ErrAlreadyExists, "Compaction already in progress")
		}
		return err
	}
	return nil
}

// CompactionStatus implements Service. For a partitioned topic: RUNNING
// while any partition runs, else ERROR if any failed, SUCCESS if all
// succeeded, NOT_RUN otherwise.
func (b *Broker) CompactionStatus(ctx context.Context, topic string) (status, lastError string, err error) {
	parts, err := b.partitionsOf(ctx, topic)
	if err != nil {
		return "", "", err
	}
	if parts != nil {
		rank := map[string]int{CompactionNotRun: 0, CompactionSuccess: 1, CompactionError: 2, CompactionRunning: 3}
		status, success := CompactionNotRun, 0
		for _, p := range parts {
			s, e, err := b.CompactionStatus(ctx, p)
			if err != nil {
				return "", "", err
			}
			if s == CompactionSuccess {
				success++
			}
			if rank[s] > rank[status] {
				status = s
			}
			if s == CompactionError && lastError == "" {
				lastError = p + ": " + e
			}
		}
		if status == CompactionSuccess && success != len(parts) {
			status = CompactionNotRun // some partitions never compacted
		}
		return status, lastError, nil
	}
	t, err := b.loadedOrLoad(ctx, topic)
	if err != nil {
		return "", "", err
	}
	s, e := t.compactionStatus()
	return s, e, nil
}

// compactionStats fills the compaction fields of internal stats.
func (t *topic) compactionStats(ctx context.Context, out *InternalStats) {
	cl, ok := t.ml.(compactableLedger)
	if !ok {
		return
	}
	st, has := cl.compactionState()
	if st.Pending >= 0 {
		out.PendingCompactionLedger = &st.Pending
	}
	if !has {
		return
	}
	out.CompactionHorizon = toPos(st.Horizon).String()
	li := &InternalLedgerInfo{LedgerID: st.Ledger}
	if r, _, err := cl.openCompacted(ctx); err == nil {
		li.Entries, li.Size = r.LastAddConfirmed()+1, r.Length()
		r.Close()
	}
	out.CompactedLedger = li
}
