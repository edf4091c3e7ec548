package compact

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

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

// compactHookForTest, if set, runs in the middle of writing a compacted
// ledger (after its first entry is stored).
var compactHookForTest func(topic string)

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
	md.UncompressedSize = proto.Uint32(uint32(len(payload)))
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
func compactedView(ctx context.Context, cl ledger, lac position, fn func(position, []byte) error) error {
	from := earliest
	if r, st, err := cl.openCompacted(ctx); err == nil {
		defer r.Close()
		from = st.Horizon
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
		return position{}, nil, fmt.Errorf("compact: compacted entry of %d bytes", len(raw))
	}
	return position{LedgerID: int64(binary.BigEndian.Uint64(raw)), EntryID: int64(binary.BigEndian.Uint64(raw[8:]))}, raw[compactedHeader:], nil
}

// written is a compacted ledger written, not yet committed, and the
// number of keys it holds.
type written struct {
	w mledger.WriteLedger
	n int
}

// compactTo writes the compacted view of the topic up to lac (the
// latest message of every key; retainNullKey keeps messages without a
// key) to a new compacted ledger, which the caller commits. On failure
// the new ledger is aborted.
func compactTo(ctx context.Context, cl ledger, lac position, retainNullKey bool, topic string) (written, error) {
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
			latest[m.key] = msgRef{pos: pos, index: idx}
		}
		return nil
	})
	if err != nil {
		return written{}, fmt.Errorf("read: %w", err)
	}
	// Pass 2: write the kept messages to a new ledger.
	w, err := cl.beginCompaction(ctx)
	if err != nil {
		return written{}, fmt.Errorf("begin: %w", err)
	}
	aw := newAsyncWriter(w)
	hooked := false
	err = compactedView(ctx, cl, lac, func(pos position, data []byte) error {
		if compactHookForTest != nil && aw.n > 0 && !hooked {
			// Tests: stop here, with part of the new ledger written.
			hooked = true
			if err := aw.wait(); err != nil {
				return err
			}
			compactHookForTest(topic)
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
			if (m.hasKey && latest[m.key] == (msgRef{pos: pos, index: idx})) || (retainNullKey && !m.hasKey && !m.dropped) {
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
			err = errors.Join(err, fmt.Errorf("abort: %w", aerr))
		}
		return written{}, fmt.Errorf("write: %w", err)
	}
	return written{w: w, n: len(latest)}, nil
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
