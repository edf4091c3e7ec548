package pulsarproto

import (
	"encoding/binary"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// AppendCommand appends a simple frame (no payload) carrying cmd to dst.
// It fails with ErrMalformed, returning dst unchanged, when cmd lacks a
// proto2 required field: Pulsar clients drop the connection on such frames,
// so they must never be sent.
func AppendCommand(dst []byte, cmd *pb.BaseCommand) ([]byte, error) {
	return AppendPayloadCommand(dst, cmd, nil)
}

// AppendPayloadCommand appends a frame carrying cmd followed by entry, which
// must already be a complete payload section (magic, checksum, metadata and
// payload, as stored by the broker; see ParseEntry). entry is copied
// verbatim: nothing is re-checksummed. An empty entry gives a simple frame.
// Errors are those of AppendCommand.
func AppendPayloadCommand(dst []byte, cmd *pb.BaseCommand, entry []byte) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	out, err := proto.MarshalOptions{}.MarshalAppend(dst, cmd)
	if err != nil {
		return dst[:start], fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	dst = out
	cmdSize := len(dst) - start - FrameHeaderSize
	dst = append(dst, entry...)
	putFrameHeader(dst[start:], len(dst)-start-4, cmdSize)
	return dst, nil
}

func putFrameHeader(b []byte, total, cmdSize int) {
	binary.BigEndian.PutUint32(b, uint32(total))
	binary.BigEndian.PutUint32(b[4:], uint32(cmdSize))
}

// MessageHeader holds the CommandMessage fields the broker sets when it
// dispatches an entry. The message id is (LedgerID, EntryID, Partition); the
// batch index is never set (clients number messages inside a batch
// themselves).
type MessageHeader struct {
	ConsumerID uint64
	LedgerID   uint64
	EntryID    uint64
	// Partition is written only when >= 0.
	Partition int32
	// RedeliveryCount is written only when > 0.
	RedeliveryCount uint32
	// AckSet is written only when non-empty: bit set = still unacked.
	AckSet []int64
	// ConsumerEpoch is written only when HasConsumerEpoch is true.
	ConsumerEpoch    uint64
	HasConsumerEpoch bool
}

// AppendMessage appends a MESSAGE frame for h followed by the stored entry
// bytes (copied verbatim) to dst. It does not allocate when dst has room.
// The result is byte-identical to AppendPayloadCommand with the equivalent
// pb.CommandMessage.
func AppendMessage(dst []byte, h *MessageHeader, entry []byte) []byte {
	idSize := sizeVarintField(1, h.LedgerID) + sizeVarintField(2, h.EntryID)
	if h.Partition >= 0 {
		idSize += sizeVarintField(3, uint64(int64(h.Partition)))
	}
	msgSize := sizeVarintField(1, h.ConsumerID) + sizeBytesField(2, idSize)
	if h.RedeliveryCount > 0 {
		msgSize += sizeVarintField(3, uint64(h.RedeliveryCount))
	}
	for _, w := range h.AckSet {
		msgSize += sizeVarintField(4, uint64(w))
	}
	if h.HasConsumerEpoch {
		msgSize += sizeVarintField(5, h.ConsumerEpoch)
	}
	cmdSize := sizeVarintField(1, uint64(pb.BaseCommand_MESSAGE)) + sizeBytesField(9, msgSize)

	dst = appendFrameHeader(dst, cmdSize+len(entry), cmdSize)
	dst = protowire.AppendTag(dst, 1, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(pb.BaseCommand_MESSAGE))
	dst = protowire.AppendTag(dst, 9, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(msgSize))
	dst = appendVarintField(dst, 1, h.ConsumerID)
	dst = protowire.AppendTag(dst, 2, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(idSize))
	dst = appendVarintField(dst, 1, h.LedgerID)
	dst = appendVarintField(dst, 2, h.EntryID)
	if h.Partition >= 0 {
		dst = appendVarintField(dst, 3, uint64(int64(h.Partition)))
	}
	if h.RedeliveryCount > 0 {
		dst = appendVarintField(dst, 3, uint64(h.RedeliveryCount))
	}
	for _, w := range h.AckSet {
		dst = appendVarintField(dst, 4, uint64(w))
	}
	if h.HasConsumerEpoch {
		dst = appendVarintField(dst, 5, h.ConsumerEpoch)
	}
	return append(dst, entry...)
}

// SendReceipt holds the CommandSendReceipt fields the broker sets.
type SendReceipt struct {
	ProducerID uint64
	SequenceID uint64
	// HighestSequenceID is written only when non-zero.
	HighestSequenceID uint64
	LedgerID          uint64
	EntryID           uint64
}

// AppendSendReceipt appends a SEND_RECEIPT frame to dst without allocating
// when dst has room. The message id carries ledger and entry only.
func AppendSendReceipt(dst []byte, r *SendReceipt) []byte {
	idSize := sizeVarintField(1, r.LedgerID) + sizeVarintField(2, r.EntryID)
	bodySize := sizeVarintField(1, r.ProducerID) + sizeVarintField(2, r.SequenceID) + sizeBytesField(3, idSize)
	if r.HighestSequenceID != 0 {
		bodySize += sizeVarintField(4, r.HighestSequenceID)
	}
	cmdSize := sizeVarintField(1, uint64(pb.BaseCommand_SEND_RECEIPT)) + sizeBytesField(7, bodySize)

	dst = appendFrameHeader(dst, cmdSize, cmdSize)
	dst = appendVarintField(dst, 1, uint64(pb.BaseCommand_SEND_RECEIPT))
	dst = protowire.AppendTag(dst, 7, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(bodySize))
	dst = appendVarintField(dst, 1, r.ProducerID)
	dst = appendVarintField(dst, 2, r.SequenceID)
	dst = protowire.AppendTag(dst, 3, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(idSize))
	dst = appendVarintField(dst, 1, r.LedgerID)
	dst = appendVarintField(dst, 2, r.EntryID)
	if r.HighestSequenceID != 0 {
		dst = appendVarintField(dst, 4, r.HighestSequenceID)
	}
	return dst
}

// SendHeader holds the CommandSend fields a producer sets. It exists for
// tests, tools and load generators that play the client side.
type SendHeader struct {
	ProducerID uint64
	SequenceID uint64
	// NumMessages is written only when > 0 (absent means 1).
	NumMessages int32
	// The remaining fields are written only when non-zero.
	HighestSequenceID uint64
	TxnidLeastBits    uint64
	TxnidMostBits     uint64
	IsChunk           bool
	Marker            bool
}

// AppendSend appends a SEND frame for h followed by entry (a complete
// payload section, see AppendEntry) to dst, without allocating when dst has
// room.
func AppendSend(dst []byte, h *SendHeader, entry []byte) []byte {
	bodySize := sizeVarintField(1, h.ProducerID) + sizeVarintField(2, h.SequenceID)
	if h.NumMessages > 0 {
		bodySize += sizeVarintField(3, uint64(h.NumMessages))
	}
	if h.TxnidLeastBits != 0 {
		bodySize += sizeVarintField(4, h.TxnidLeastBits)
	}
	if h.TxnidMostBits != 0 {
		bodySize += sizeVarintField(5, h.TxnidMostBits)
	}
	if h.HighestSequenceID != 0 {
		bodySize += sizeVarintField(6, h.HighestSequenceID)
	}
	if h.IsChunk {
		bodySize += 2
	}
	if h.Marker {
		bodySize += 2
	}
	cmdSize := sizeVarintField(1, uint64(pb.BaseCommand_SEND)) + sizeBytesField(6, bodySize)

	dst = appendFrameHeader(dst, cmdSize+len(entry), cmdSize)
	dst = appendVarintField(dst, 1, uint64(pb.BaseCommand_SEND))
	dst = protowire.AppendTag(dst, 6, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(bodySize))
	dst = appendVarintField(dst, 1, h.ProducerID)
	dst = appendVarintField(dst, 2, h.SequenceID)
	if h.NumMessages > 0 {
		dst = appendVarintField(dst, 3, uint64(h.NumMessages))
	}
	if h.TxnidLeastBits != 0 {
		dst = appendVarintField(dst, 4, h.TxnidLeastBits)
	}
	if h.TxnidMostBits != 0 {
		dst = appendVarintField(dst, 5, h.TxnidMostBits)
	}
	if h.HighestSequenceID != 0 {
		dst = appendVarintField(dst, 6, h.HighestSequenceID)
	}
	if h.IsChunk {
		dst = appendVarintField(dst, 7, 1)
	}
	if h.Marker {
		dst = appendVarintField(dst, 8, 1)
	}
	return append(dst, entry...)
}

func appendFrameHeader(dst []byte, total, cmdSize int) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(4+total))
	return binary.BigEndian.AppendUint32(dst, uint32(cmdSize))
}

func appendVarintField(dst []byte, num protowire.Number, v uint64) []byte {
	dst = protowire.AppendTag(dst, num, protowire.VarintType)
	return protowire.AppendVarint(dst, v)
}

func sizeVarintField(num protowire.Number, v uint64) int {
	return protowire.SizeTag(num) + protowire.SizeVarint(v)
}

func sizeBytesField(num protowire.Number, n int) int {
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}
