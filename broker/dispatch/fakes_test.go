package dispatch

import (
	"encoding/binary"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/internal/testenv"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"os"
)

// fakeCursor is an in-memory cursor over a slice of entries in ledger 1.
type fakeCursor struct {
	mu      sync.Mutex
	entries [][]byte
	read    int64 // next entry id to read
	markDel int64 // last cumulatively acked id, -1 if none
	acked   map[int64]bool
	batch   map[int64][]int64
	reads   int   // ReadAt calls
	asked   []int // the n of each ReadEntries call
}

func newFakeCursor() *fakeCursor {
	return &fakeCursor{markDel: -1, acked: map[int64]bool{}, batch: map[int64][]int64{}}
}

func pos(e int64) position { return position{LedgerID: 1, EntryID: e} }

func (f *fakeCursor) add(data []byte) {
	f.mu.Lock()
	f.entries = append(f.entries, data)
	f.mu.Unlock()
}

func (f *fakeCursor) ReadEntries(n int) ([]ledgerEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, n)
	var out []ledgerEntry
	for f.read < int64(len(f.entries)) && len(out) < n {
		if !f.acked[f.read] && f.read > f.markDel {
			out = append(out, ledgerEntry{Pos: pos(f.read), Data: f.entries[f.read]})
		}
		f.read++
	}
	return out, nil
}
func (f *fakeCursor) Ack(ps ...position) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range ps {
		f.acked[p.EntryID] = true
	}
	for f.acked[f.markDel+1] {
		delete(f.acked, f.markDel+1)
		f.markDel++
	}
	return nil
}
func (f *fakeCursor) AckBatchIndexes(p position, set []int64, size int) (bool, error) {
	f.mu.Lock()
	cur := f.batch[p.EntryID]
	if cur == nil {
		cur = make([]int64, len(set))
		for i := range cur {
			cur[i] = -1
		}
		if size%64 != 0 {
			cur[len(cur)-1] = int64(uint64(1)<<(size%64) - 1)
		}
	}
	for i := range cur {
		if i < len(set) {
			cur[i] &= set[i]
		}
	}
	f.batch[p.EntryID] = cur
	full := !slices.ContainsFunc(cur, func(w int64) bool { return w != 0 })
	f.mu.Unlock()
	if full {
		return true, f.Ack(p)
	}
	return false, nil
}
func (f *fakeCursor) AckCumulative(p position) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p.EntryID > f.markDel {
		f.markDel = p.EntryID
	}
	return nil
}
func (f *fakeCursor) BatchAckSet(p position) []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.batch[p.EntryID]
}
func (f *fakeCursor) MarkDelete() position {
	f.mu.Lock()
	defer f.mu.Unlock()
	return pos(f.markDel)
}
func (f *fakeCursor) IsAcked(p position) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return p.EntryID <= f.markDel || f.acked[p.EntryID]
}
func (f *fakeCursor) Seek(p position) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.read = p.EntryID
	f.markDel = p.EntryID - 1
	clear(f.acked)
	return nil
}
func (f *fakeCursor) SeekTime(int64) error { return errors.New("unsupported") }
func (f *fakeCursor) Backlog() (int64, int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := int64(len(f.entries)) - 1 - f.markDel - int64(len(f.acked))
	return n, n
}
func (f *fakeCursor) Durable() bool { return true }
func (f *fakeCursor) ReadAt(ps []position) ([][]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	out := make([][]byte, len(ps))
	for i, p := range ps {
		if p.EntryID < 0 || p.EntryID >= int64(len(f.entries)) || f.entries[p.EntryID] == nil {
			return nil, storage.ErrEntryGone
		}
		out[i] = f.entries[p.EntryID]
	}
	return out, nil
}

// fakeMeta encodes test entries as [numMsgs u32][key...].
func fakeEntry(n int, key string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(n))
	return append(b, key...)
}

func fakeParse(b []byte, _ *pulsarproto.Metadata) (Meta, error) {
	if len(b) < 4 {
		return Meta{}, errors.New("short")
	}
	return Meta{Messages: int(binary.BigEndian.Uint32(b)), Key: b[4:]}, nil
}

type sentMsg struct {
	consumer    uint64
	pos         position
	redelivered uint32
	ackSet      []int64
	data        []byte
}

// recSink records what a subscription sends.
type recSink struct {
	mu      sync.Mutex
	msgs    []sentMsg
	active  map[uint64]bool
	closed  []uint64
	changed chan struct{}
}

func newRecSink() *recSink {
	return &recSink{active: map[uint64]bool{}, changed: make(chan struct{}, 1)}
}

func (r *recSink) SendMessage(id uint64, p position, red uint32, ackSet []int64, data []byte) {
	r.mu.Lock()
	r.msgs = append(r.msgs, sentMsg{id, p, red, ackSet, data})
	r.mu.Unlock()
}
func (r *recSink) SendActiveChange(id uint64, a bool) {
	r.mu.Lock()
	r.active[id] = a
	r.mu.Unlock()
}
func (r *recSink) Writable() bool { return true }

func (r *recSink) CloseConsumer(c *Consumer) {
	id := c.id
	r.mu.Lock()
	r.closed = append(r.closed, id)
	r.mu.Unlock()
}

func (r *recSink) take() []sentMsg {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.msgs
	r.msgs = nil
	return m
}

func testSub(t *testing.T, typ Type, cur cursor) *Subscription {
	t.Helper()
	s := New(Config{Name: "sub", Topic: "persistent://public/default/t", Type: typ, Cursor: cur, Parse: fakeParse, Batch: batchOf(10), Log: slog.New(slog.DiscardHandler)})
	t.Cleanup(s.Close)
	return s
}

// sync waits until the loop has processed everything submitted so far,
// including a pending wake-up.
func (s *Subscription) sync() {
	s.Call(func() { s.dispatch() })
}

var _ = time.Second

// batchOf is a dispatcher read batch of n entries.
func batchOf(n int) *atomic.Int32 {
	b := new(atomic.Int32)
	b.Store(int32(n))
	return b
}

// newConsumer is a consumer with an id and a name only.
func newConsumer(id uint64, name string, sink Sink) *Consumer {
	return NewConsumer(ConsumerInfo{ID: id, Name: name}, sink)
}

// TestMain removes the binary testenv.RunWithoutRace built.
func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveWithoutRace()
	os.Exit(code)
}
