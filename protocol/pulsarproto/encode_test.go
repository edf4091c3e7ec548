package pulsarproto

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// The hand-written encoders must produce exactly the bytes of the generated
// code, so that golden frames and the reference client agree with both.

func TestAppendMessageMatchesGeneric(t *testing.T) {
	entry := testEntry(t, 200)
	for _, h := range []MessageHeader{
		{ConsumerID: 1, LedgerID: 2, EntryID: 3, Partition: -1},
		{ConsumerID: 0, LedgerID: 0, EntryID: 0, Partition: 0},
		{ConsumerID: 1 << 60, LedgerID: ^uint64(0), EntryID: 1 << 35, Partition: 7, RedeliveryCount: 3},
		{ConsumerID: 5, LedgerID: 6, EntryID: 7, Partition: -1, AckSet: []int64{-1, 0, 1 << 62, -5}},
		{ConsumerID: 5, LedgerID: 6, EntryID: 7, Partition: 2, HasConsumerEpoch: true, ConsumerEpoch: 0},
		{ConsumerID: 5, LedgerID: 6, EntryID: 7, Partition: 1 << 30, RedeliveryCount: 1 << 31, AckSet: []int64{3}, HasConsumerEpoch: true, ConsumerEpoch: 9},
	} {
		m := &pb.CommandMessage{
			ConsumerId: proto.Uint64(h.ConsumerID),
			MessageId:  &pb.MessageIdData{LedgerId: proto.Uint64(h.LedgerID), EntryId: proto.Uint64(h.EntryID)},
			AckSet:     h.AckSet,
		}
		if h.Partition >= 0 {
			m.MessageId.Partition = proto.Int32(h.Partition)
		}
		if h.RedeliveryCount > 0 {
			m.RedeliveryCount = proto.Uint32(h.RedeliveryCount)
		}
		if h.HasConsumerEpoch {
			m.ConsumerEpoch = proto.Uint64(h.ConsumerEpoch)
		}
		want := mustAppend(t, &pb.BaseCommand{Type: pb.BaseCommand_MESSAGE.Enum(), Message: m}, entry)
		for _, e := range [][]byte{entry, nil} {
			if e == nil {
				want = mustAppend(t, &pb.BaseCommand{Type: pb.BaseCommand_MESSAGE.Enum(), Message: m}, nil)
			}
			got := AppendMessage([]byte("x"), &h, e)
			if !bytes.Equal(got[1:], want) {
				t.Fatalf("AppendMessage(%+v) =\n%x\nwant\n%x", h, got[1:], want)
			}
		}
	}
}

func TestAppendSendReceiptMatchesGeneric(t *testing.T) {
	for _, r := range []SendReceipt{
		{},
		{ProducerID: 1, SequenceID: 2, LedgerID: 3, EntryID: 4},
		{ProducerID: 1 << 40, SequenceID: ^uint64(0), HighestSequenceID: 77, LedgerID: 1 << 20, EntryID: ^uint64(0)},
	} {
		sr := &pb.CommandSendReceipt{
			ProducerId: proto.Uint64(r.ProducerID),
			SequenceId: proto.Uint64(r.SequenceID),
			MessageId:  &pb.MessageIdData{LedgerId: proto.Uint64(r.LedgerID), EntryId: proto.Uint64(r.EntryID)},
		}
		if r.HighestSequenceID != 0 {
			sr.HighestSequenceId = proto.Uint64(r.HighestSequenceID)
		}
		want := mustAppend(t, &pb.BaseCommand{Type: pb.BaseCommand_SEND_RECEIPT.Enum(), SendReceipt: sr}, nil)
		if got := AppendSendReceipt(nil, &r); !bytes.Equal(got, want) {
			t.Fatalf("AppendSendReceipt(%+v) =\n%x\nwant\n%x", r, got, want)
		}
	}
}

func TestAppendSendMatchesGeneric(t *testing.T) {
	entry := testEntry(t, 50)
	for _, h := range []SendHeader{
		{ProducerID: 1, SequenceID: 2},
		{ProducerID: 1, SequenceID: 2, NumMessages: 10},
		{ProducerID: 1, SequenceID: 2, NumMessages: 1, HighestSequenceID: 11, TxnidLeastBits: 3, TxnidMostBits: 4, IsChunk: true, Marker: true},
	} {
		s := &pb.CommandSend{ProducerId: proto.Uint64(h.ProducerID), SequenceId: proto.Uint64(h.SequenceID)}
		if h.NumMessages > 0 {
			s.NumMessages = proto.Int32(h.NumMessages)
		}
		if h.TxnidLeastBits != 0 {
			s.TxnidLeastBits = proto.Uint64(h.TxnidLeastBits)
		}
		if h.TxnidMostBits != 0 {
			s.TxnidMostBits = proto.Uint64(h.TxnidMostBits)
		}
		if h.HighestSequenceID != 0 {
			s.HighestSequenceId = proto.Uint64(h.HighestSequenceID)
		}
		if h.IsChunk {
			s.IsChunk = proto.Bool(true)
		}
		if h.Marker {
			s.Marker = proto.Bool(true)
		}
		want := mustAppend(t, &pb.BaseCommand{Type: pb.BaseCommand_SEND.Enum(), Send: s}, entry)
		if got := AppendSend(nil, &h, entry); !bytes.Equal(got, want) {
			t.Fatalf("AppendSend(%+v) =\n%x\nwant\n%x", h, got, want)
		}
		// And the fast decoder reads it back.
		var d Decoder
		_, f, err := d.Decode(want)
		if err != nil || !proto.Equal(f.Cmd.GetSend(), s) || !bytes.Equal(f.Payload, entry) {
			t.Fatalf("Decode(AppendSend(%+v)) = %v, %v", h, f.Cmd, err)
		}
	}
}

// TestHotPathAllocs enforces what the benchmarks report: decoding SEND and
// encoding MESSAGE and SEND_RECEIPT allocate nothing in steady state.
func TestHotPathAllocs(t *testing.T) {
	entry := testEntry(t, 200)
	sendFrame := AppendSend(nil, &SendHeader{ProducerID: 1, SequenceID: 2, NumMessages: 3}, entry)
	var d Decoder
	var md Metadata
	if n := testing.AllocsPerRun(100, func() {
		_, f, err := d.Decode(sendFrame)
		if err != nil || f.Cmd.GetSend().GetSequenceId() != 2 {
			t.Fatal("decode failed", err)
		}
		e, err := VerifyEntry(f.Payload)
		if err != nil {
			t.Fatal(err)
		}
		if err := ParseMetadata(e.Metadata, &md); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("SEND decode+verify+metadata: %v allocs/op, want 0", n)
	}
	fr := NewFrameReader(&repeatReader{data: sendFrame}, 0)
	fr.Next() // grow the buffer
	if n := testing.AllocsPerRun(100, func() {
		if _, err := fr.Next(); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("FrameReader.Next(SEND): %v allocs/op, want 0", n)
	}
	buf := make([]byte, 0, 4096)
	h := MessageHeader{ConsumerID: 1, LedgerID: 2, EntryID: 3, Partition: -1, RedeliveryCount: 1}
	r := SendReceipt{ProducerID: 1, SequenceID: 2, LedgerID: 3, EntryID: 4}
	if n := testing.AllocsPerRun(100, func() {
		buf = AppendMessage(buf[:0], &h, entry)
		buf = AppendSendReceipt(buf, &r)
	}); n != 0 {
		t.Errorf("AppendMessage+AppendSendReceipt: %v allocs/op, want 0", n)
	}
}

// repeatReader serves data over and over.
type repeatReader struct {
	data []byte
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := copy(p, r.data[r.off:])
	r.off = (r.off + n) % len(r.data)
	return n, nil
}
