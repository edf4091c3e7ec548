package perf

import (
	"encoding/binary"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// batchBuilder builds SEND frames the way a Pulsar client does, one
// fresh frame per batch, in one reused buffer:
//
//	[headroom ...][smmSize][SingleMessageMetadata][payload][smmSize]...
//
// Messages are appended after a headroom. seal then writes the frame
// header, the SEND command, the 0x0e01 magic, the CRC32C and the
// MessageMetadata right-aligned into the headroom, just in front of the
// batch body, and checksums metadata size, metadata and body in place: the
// frame goes out with one write and the body is never copied again.
//
// Per message: a SingleMessageMetadata with payload_size and sequence_id
// (as pulsar-client-go writes it) and the payload bytes. Per batch: a
// MessageMetadata with producer_name, sequence_id (of the first message),
// publish_time, uncompressed_size, num_messages_in_batch and
// highest_sequence_id, and a SEND with num_messages and
// highest_sequence_id. With batching off every message is its own SEND
// with a plain (non-batch) MessageMetadata and the payload as body.
//
// A batchBuilder is used by one goroutine.
type batchBuilder struct {
	producerID   uint64
	producerName []byte
	batching     bool
	headroom     int

	buf []byte // headroom + body
	n   int    // messages in the open batch
	// first and last sequence id, publish time (ms) of the open batch.
	firstSeq, lastSeq uint64
	publishMs         uint64

	smm, md, hdr []byte // scratch
}

func newBatchBuilder(producerID uint64, producerName string, batching bool) *batchBuilder {
	// SEND command with every varint at its longest, entry header and
	// MessageMetadata with every field at its longest, plus slack.
	headroom := 64 + 10 + 80 + len(producerName)
	return &batchBuilder{
		producerID:   producerID,
		producerName: []byte(producerName),
		batching:     batching,
		headroom:     headroom,
		buf:          make([]byte, headroom, headroom+64<<10),
	}
}

// recordSize is what adding a message of size bytes adds to the body
// (approximately for batches: the sequence id varint grows).
func (b *batchBuilder) recordSize(size int) int {
	if !b.batching {
		return size
	}
	return 4 + 2 + protowire.SizeVarint(uint64(size)) + 11 + size
}

// bodyLen is the size of the open batch's body.
func (b *batchBuilder) bodyLen() int { return len(b.buf) - b.headroom }

// add appends a message with sequence id seq to the open batch; the first
// message of a batch sets its publish time (ms).
func (b *batchBuilder) add(seq uint64, payload []byte, publishMs uint64) {
	if b.n == 0 {
		b.firstSeq, b.publishMs = seq, publishMs
	}
	b.lastSeq = seq
	b.n++
	if !b.batching {
		b.buf = append(b.buf, payload...)
		return
	}
	smm := appendVarint(b.smm[:0], 3, uint64(len(payload)))
	smm = appendVarint(smm, 8, seq)
	b.smm = smm
	b.buf = pulsarproto.AppendSingleMessage(b.buf, smm, payload)
}

// seal completes the open batch and returns its SEND frame, valid until
// the next add or reset. The batch must not be empty, and an unbatched
// builder must hold exactly one message.
func (b *batchBuilder) seal() []byte {
	body := b.buf[b.headroom:]
	md := appendBytesField(b.md[:0], 1, b.producerName)
	md = appendVarint(md, 2, b.firstSeq)
	md = appendVarint(md, 3, b.publishMs)
	md = appendVarint(md, 9, uint64(len(body)))
	h := pulsarproto.SendHeader{ProducerID: b.producerID, SequenceID: b.firstSeq}
	if b.batching {
		md = appendVarint(md, 11, uint64(b.n))
		md = appendVarint(md, 24, b.lastSeq)
		h.NumMessages = int32(b.n)
		h.HighestSequenceID = b.lastSeq
	}
	b.md = md
	// The SEND frame without entry: [totalSize][cmdSize][BaseCommand], its
	// totalSize patched below once the entry's size is known.
	hdr := pulsarproto.AppendSend(b.hdr[:0], &h, nil)
	hdr = binary.BigEndian.AppendUint16(hdr, pulsarproto.MagicCRC32C)
	crcAt := len(hdr)
	hdr = append(hdr, 0, 0, 0, 0)
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(len(md)))
	hdr = append(hdr, md...)
	b.hdr = hdr
	if len(hdr) > b.headroom {
		panic(fmt.Sprintf("perf: batch header of %d bytes exceeds headroom %d", len(hdr), b.headroom))
	}
	start := b.headroom - len(hdr)
	frame := b.buf[start:]
	copy(frame, hdr)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	binary.BigEndian.PutUint32(frame[crcAt:], pulsarproto.Checksum(frame[crcAt+4:]))
	return frame
}

// reset empties the builder for the next batch.
func (b *batchBuilder) reset() {
	b.buf = b.buf[:b.headroom]
	b.n = 0
}

func appendBytesField(dst []byte, num protowire.Number, v []byte) []byte {
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	return protowire.AppendBytes(dst, v)
}

// errCompressed is returned for entries the raw consumer cannot read.
var errCompressed = errors.New("perf: raw consumer: compressed or encrypted entries are not supported")

// entryWalk is the result of walking one received entry.
type entryWalk struct {
	Messages    int // messages delivered (ack_set bits set)
	InEntry     int // messages in the entry (permits it used)
	Bytes       int // payload bytes of the delivered messages
	PublishTime uint64
}

// entryWalker checks and walks received entries, reusing its metadata
// structs. Not safe for concurrent use.
type entryWalker struct {
	md  pulsarproto.Metadata
	smm pulsarproto.SingleMetadata
}

// walk verifies the entry's checksum, decodes its metadata and walks every
// message of a batch. ackSet (bit set = deliver) skips messages already
// acknowledged, as a client does.
func (w *entryWalker) walk(entry []byte, ackSet []int64) (entryWalk, error) {
	var r entryWalk
	e, err := pulsarproto.VerifyEntry(entry)
	if err != nil {
		return r, err
	}
	md := &w.md
	if err := pulsarproto.ParseMetadata(e.Metadata, md); err != nil {
		return r, err
	}
	r.PublishTime = md.PublishTime
	if md.Compression != pb.CompressionType_NONE || md.Encrypted {
		return r, errCompressed
	}
	if !md.Batch {
		r.Messages, r.InEntry, r.Bytes = 1, 1, len(e.Payload)
		return r, nil
	}
	body := e.Payload
	for i := range int(md.NumMessagesInBatch) {
		rest, payload, err := pulsarproto.NextSingleMessage(body, &w.smm)
		if err != nil {
			return r, fmt.Errorf("message %d of the batch: %w", i, err)
		}
		body = rest
		r.InEntry++
		if len(ackSet) > 0 && (i/64 >= len(ackSet) || ackSet[i/64]&(1<<(i%64)) == 0) {
			continue
		}
		r.Messages++
		r.Bytes += len(payload)
	}
	if len(body) != 0 {
		return r, fmt.Errorf("%w: %d bytes after the last message of the batch", pulsarproto.ErrMalformed, len(body))
	}
	return r, nil
}
