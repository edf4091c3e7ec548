package perf

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// TestBatchBuilderDecodes builds batches and checks every field with the
// protocol package's decoders and the generated code.
func TestBatchBuilderDecodes(t *testing.T) {
	b := newBatchBuilder(7, "standalone-0-3", true)
	for round := range 3 {
		first := uint64(100 + 10*round)
		var payloads [][]byte
		for i := range 5 {
			p := bytes.Repeat([]byte{byte('a' + i + round)}, 1+i*37+round)
			payloads = append(payloads, p)
			b.add(first+uint64(i), p, 1_700_000_000_123+uint64(round))
		}
		frame := append([]byte(nil), b.seal()...)
		b.reset()

		var dec pulsarproto.Decoder
		rest, f, err := dec.Decode(frame)
		if err != nil || len(rest) != 0 || f.Type != pb.BaseCommand_SEND {
			t.Fatalf("round %d: decode: %v, rest %d, type %v", round, err, len(rest), f.Type)
		}
		s := f.Cmd.GetSend()
		if s.GetProducerId() != 7 || s.GetSequenceId() != first || s.GetNumMessages() != 5 || s.GetHighestSequenceId() != first+4 {
			t.Fatalf("round %d: SEND = %v", round, s)
		}
		e, err := pulsarproto.VerifyEntry(f.Payload)
		if err != nil {
			t.Fatalf("round %d: entry: %v", round, err)
		}
		var md pulsarproto.Metadata
		if err := pulsarproto.ParseMetadata(e.Metadata, &md); err != nil {
			t.Fatal(err)
		}
		if string(md.ProducerName) != "standalone-0-3" || md.SequenceID != first || md.PublishTime != 1_700_000_000_123+uint64(round) ||
			!md.Batch || md.NumMessagesInBatch != 5 || md.HighestSequenceID != first+4 ||
			md.UncompressedSize != uint32(len(e.Payload)) || md.Compression != pb.CompressionType_NONE {
			t.Fatalf("round %d: metadata = %+v", round, md)
		}
		// The generated code checks required fields too.
		var gen pb.MessageMetadata
		if err := proto.Unmarshal(e.Metadata, &gen); err != nil || gen.GetNumMessagesInBatch() != 5 {
			t.Fatalf("round %d: generated metadata: %v %v", round, err, &gen)
		}
		body := e.Payload
		for i := range 5 {
			var smm pulsarproto.SingleMetadata
			var p []byte
			body, p, err = pulsarproto.NextSingleMessage(body, &smm)
			if err != nil {
				t.Fatalf("round %d message %d: %v", round, i, err)
			}
			if !bytes.Equal(p, payloads[i]) || int(smm.PayloadSize) != len(payloads[i]) || !smm.HasSequenceID || smm.SequenceID != first+uint64(i) {
				t.Fatalf("round %d message %d: smm %+v, payload %q", round, i, smm, p)
			}
			var gsmm pb.SingleMessageMetadata
			if err := proto.Unmarshal(smm.Raw, &gsmm); err != nil {
				t.Fatal(err)
			}
		}
		if len(body) != 0 {
			t.Fatalf("round %d: %d bytes after the batch", round, len(body))
		}
		// Any flipped bit in the checksummed part is caught.
		bad := append([]byte(nil), frame...)
		bad[len(bad)-3] ^= 0x10
		_, f, _ = dec.Decode(bad)
		if _, err := pulsarproto.VerifyEntry(f.Payload); !errors.Is(err, pulsarproto.ErrChecksum) {
			t.Fatalf("round %d: corrupted entry: %v", round, err)
		}
	}
}

func TestBatchBuilderUnbatched(t *testing.T) {
	b := newBatchBuilder(3, "p", false)
	b.add(42, []byte("hello"), 99)
	frame := b.seal()
	var dec pulsarproto.Decoder
	_, f, err := dec.Decode(frame)
	if err != nil {
		t.Fatal(err)
	}
	if s := f.Cmd.GetSend(); s.GetSequenceId() != 42 || s.NumMessages != nil || s.HighestSequenceId != nil {
		t.Fatalf("SEND = %v", s)
	}
	e, err := pulsarproto.VerifyEntry(f.Payload)
	if err != nil {
		t.Fatal(err)
	}
	var md pulsarproto.Metadata
	if err := pulsarproto.ParseMetadata(e.Metadata, &md); err != nil {
		t.Fatal(err)
	}
	if md.Batch || md.SequenceID != 42 || md.PublishTime != 99 || string(e.Payload) != "hello" || md.UncompressedSize != 5 {
		t.Fatalf("metadata %+v payload %q", md, e.Payload)
	}
	var w entryWalker
	r, err := w.walk(f.Payload, nil)
	if err != nil || r.Messages != 1 || r.InEntry != 1 || r.Bytes != 5 || r.PublishTime != 99 {
		t.Fatalf("walk = %+v, %v", r, err)
	}
}

// messageFrame returns a MESSAGE frame for the entry of a batch of n
// messages of size bytes built by batchBuilder.
func messageFrame(t testing.TB, n, size int, id msgID, ackSet []int64) []byte {
	b := newBatchBuilder(1, "p", true)
	payload := bytes.Repeat([]byte{'x'}, size)
	for i := range n {
		b.add(uint64(i), payload, 1000)
	}
	var dec pulsarproto.Decoder
	_, f, err := dec.Decode(b.seal())
	if err != nil {
		t.Fatal(err)
	}
	return pulsarproto.AppendMessage(nil, &pulsarproto.MessageHeader{
		ConsumerID: 9, LedgerID: id.ledger, EntryID: id.entry, Partition: -1, RedeliveryCount: 2, AckSet: ackSet,
	}, f.Payload)
}

func TestRawReaderAndWalk(t *testing.T) {
	var stream []byte
	stream = append(stream, messageFrame(t, 10, 30, msgID{5, 6}, nil)...)
	// Messages 1 and 3 were acknowledged already (bits clear).
	stream = append(stream, messageFrame(t, 10, 30, msgID{5, 7}, []int64{0x3f5})...)
	stream = pulsarproto.AppendSendReceipt(stream, &pulsarproto.SendReceipt{ProducerID: 4, SequenceID: 77, HighestSequenceID: 80, LedgerID: 5, EntryID: 8})
	stream = append(stream, pongFrame...)
	// A frame bigger than the read buffer takes the copying path.
	stream = append(stream, messageFrame(t, 100, 100, msgID{5, 9}, nil)...)

	rr := newRawReader(bufio.NewReaderSize(bytes.NewReader(stream), 4096), pulsarproto.DefaultMaxFrameSize)
	var w entryWalker
	for i, want := range []struct {
		id       msgID
		msgs     int
		ackSet   int
		inEntry  int
		bytesOut int
	}{{msgID{5, 6}, 10, 0, 10, 300}, {msgID{5, 7}, 8, 1, 10, 240}} {
		f, err := rr.next()
		if err != nil || f.Type != pb.BaseCommand_MESSAGE || f.Cmd != nil {
			t.Fatalf("frame %d: %v %+v", i, err, f)
		}
		if f.ConsumerID != 9 || f.ID != want.id || f.RedeliveryCount != 2 || len(f.AckSet) != want.ackSet {
			t.Fatalf("frame %d: %+v", i, f)
		}
		r, err := w.walk(f.Payload, f.AckSet)
		if err != nil || r.Messages != want.msgs || r.InEntry != want.inEntry || r.Bytes != want.bytesOut || r.PublishTime != 1000 {
			t.Fatalf("frame %d: walk %+v, %v", i, r, err)
		}
	}
	f, err := rr.next()
	if err != nil || f.Type != pb.BaseCommand_SEND_RECEIPT || f.ProducerID != 4 || f.SequenceID != 77 || f.HighestSequenceID != 80 || f.ID != (msgID{5, 8}) {
		t.Fatalf("receipt: %v %+v", err, f)
	}
	f, err = rr.next()
	if err != nil || f.Type != pb.BaseCommand_PONG || f.Cmd == nil {
		t.Fatalf("pong: %v %+v", err, f)
	}
	f, err = rr.next()
	if err != nil || f.Type != pb.BaseCommand_MESSAGE || f.ID != (msgID{5, 9}) {
		t.Fatalf("big message: %v %+v", err, f)
	}
	if r, err := w.walk(f.Payload, nil); err != nil || r.Messages != 100 || r.Bytes != 10_000 {
		t.Fatalf("big message walk: %+v %v", r, err)
	}
	if _, err := rr.next(); err == nil {
		t.Fatal("read past the end")
	}
}

func TestAppendAckAndFlow(t *testing.T) {
	var dec pulsarproto.Decoder
	ids := []msgID{{1, 2}, {1, 3}, {1 << 40, 1 << 33}}
	for _, cum := range []bool{false, true} {
		buf, _ := appendAck(nil, nil, 11, cum, ids)
		_, f, err := dec.Decode(buf)
		if err != nil || f.Type != pb.BaseCommand_ACK {
			t.Fatal(err, f.Type)
		}
		a := f.Cmd.GetAck()
		wantType := pb.CommandAck_Individual
		if cum {
			wantType = pb.CommandAck_Cumulative
		}
		if a.GetConsumerId() != 11 || a.GetAckType() != wantType || len(a.MessageId) != len(ids) {
			t.Fatalf("ack = %v", a)
		}
		for i, m := range a.MessageId {
			if m.GetLedgerId() != ids[i].ledger || m.GetEntryId() != ids[i].entry {
				t.Fatalf("ack id %d = %v", i, m)
			}
		}
	}
	buf, _ := appendFlow(nil, nil, 12, 500)
	_, f, err := dec.Decode(buf)
	if err != nil || f.Cmd.GetFlow().GetConsumerId() != 12 || f.Cmd.GetFlow().GetMessagePermits() != 500 {
		t.Fatalf("flow: %v %v", err, f.Cmd)
	}
}

// TestRawHotPathsDoNotAllocate checks the per-batch and per-entry loops
// allocate nothing in steady state.
func TestRawHotPathsDoNotAllocate(t *testing.T) {
	b := newBatchBuilder(1, "standalone-0-1", true)
	payload := make([]byte, 200)
	var seq uint64
	build := func() {
		for range 100 {
			b.add(seq, payload, 1)
			seq++
		}
		b.seal()
		b.reset()
	}
	build()
	if a := testing.AllocsPerRun(50, build); a != 0 {
		t.Errorf("batch build: %v allocs per 100-message batch", a)
	}

	frame := messageFrame(t, 100, 200, msgID{1, 1}, nil)
	src := bytes.NewReader(nil)
	rr := newRawReader(bufio.NewReaderSize(src, 64<<10), pulsarproto.DefaultMaxFrameSize)
	var w entryWalker
	var out, scratch []byte
	ids := make([]msgID, 0, 16)
	read := func() {
		src.Reset(frame)
		f, err := rr.next()
		if err != nil {
			panic(err)
		}
		if _, err := w.walk(f.Payload, f.AckSet); err != nil {
			panic(err)
		}
		ids = append(ids[:0], f.ID)
		out, scratch = appendAck(out[:0], scratch, 1, false, ids)
		out, scratch = appendFlow(out, scratch, 1, 500)
	}
	read()
	if a := testing.AllocsPerRun(50, read); a != 0 {
		t.Errorf("entry read, walk, ack and flow: %v allocs per 100-message entry", a)
	}
}

// BenchmarkRawBatchBuild measures building SEND frames, per message.
func BenchmarkRawBatchBuild(b *testing.B) {
	for _, size := range []int{200, 1024} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			bb := newBatchBuilder(1, "standalone-0-1", true)
			payload := make([]byte, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				bb.add(uint64(i), payload, 1)
				if bb.n == 1000 {
					bb.seal()
					bb.reset()
				}
			}
		})
	}
}

// BenchmarkRawEntryRead measures reading a MESSAGE frame of a 1000-message
// batch (checksum, metadata, every message walked) and acking it, per
// message.
func BenchmarkRawEntryRead(b *testing.B) {
	for _, size := range []int{200, 1024} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			const n = 1000
			frame := messageFrame(b, n, size, msgID{1, 1}, nil)
			src := bytes.NewReader(nil)
			rr := newRawReader(bufio.NewReaderSize(src, rawConsumerReadBuffer), pulsarproto.DefaultMaxFrameSize)
			var w entryWalker
			var out, scratch []byte
			var id [1]msgID
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i%n != 0 {
					continue
				}
				src.Reset(frame)
				f, err := rr.next()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := w.walk(f.Payload, f.AckSet); err != nil {
					b.Fatal(err)
				}
				id[0] = f.ID
				out, scratch = appendAck(out[:0], scratch, 1, true, id[:])
			}
		})
	}
}
