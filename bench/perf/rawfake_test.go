package perf

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/fakebroker"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// startFakeBroker starts a fake broker (protocol/pulsarproto/fakebroker)
// that hands every frame it does not answer itself to handle, on the
// connection's goroutine (the frame is valid only during the call).
func startFakeBroker(t *testing.T, handle func(fc *fakebroker.Conn, f pulsarproto.Frame)) *fakebroker.Broker {
	return fakebroker.Start(t, fakebroker.Options{Handler: func(c *fakebroker.Conn) func(pulsarproto.Frame) error {
		return func(f pulsarproto.Frame) error {
			handle(c, f)
			return nil
		}
	}})
}

// sent is a SEND as the fake broker saw it.
type sent struct {
	seq, highest uint64
	n            int
}

// checkSend verifies a SEND the way a broker would (checksum, metadata
// consistent with the command) and returns it.
func checkSend(f pulsarproto.Frame) (sent, string) {
	s := f.Cmd.GetSend()
	e, err := pulsarproto.VerifyEntry(f.Payload)
	if err != nil {
		return sent{}, err.Error()
	}
	var md pulsarproto.Metadata
	if err := pulsarproto.ParseMetadata(e.Metadata, &md); err != nil {
		return sent{}, err.Error()
	}
	if md.SequenceID != s.GetSequenceId() || md.NumMessages() != int(s.GetNumMessages()) || md.HighestSequenceID != s.GetHighestSequenceId() {
		return sent{}, "metadata does not match the SEND"
	}
	return sent{seq: s.GetSequenceId(), highest: s.GetHighestSequenceId(), n: int(s.GetNumMessages())}, ""
}

func receipt(s sent) []byte {
	return pulsarproto.AppendSendReceipt(nil, &pulsarproto.SendReceipt{ProducerID: 1, SequenceID: s.seq, HighestSequenceID: s.highest, LedgerID: 1, EntryID: s.seq})
}

func produceCfg(url string, n int64) ProduceConfig {
	return ProduceConfig{Common: Common{ServiceURL: url, Topics: []string{"t"}, NumMessages: n, Duration: 30 * time.Second},
		Size: 100, BatchMaxMessages: 10}
}

// TestRawProduceFakeBroker checks pacing with a batch delay, sequence ids
// and receipts against a well-behaved fake broker.
func TestRawProduceFakeBroker(t *testing.T) {
	var mu sync.Mutex
	var sends []sent
	var problems []string
	fb := startFakeBroker(t, func(fc *fakebroker.Conn, f pulsarproto.Frame) {
		if f.Type != pb.BaseCommand_SEND {
			return
		}
		s, problem := checkSend(f)
		mu.Lock()
		sends = append(sends, s)
		if problem != "" {
			problems = append(problems, problem)
		}
		mu.Unlock()
		fc.Write(receipt(s))
	})
	cfg := produceCfg(fb.URL, 300)
	cfg.Rate = 3000
	cfg.BatchMaxMessages = 1000
	cfg.BatchDelay = 5 * time.Millisecond
	sum, err := RawProduce(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Messages != 300 || sum.Bytes != 300*100 || sum.Errors != 0 || sum.Latency.Samples != 300 || sum.FirstError != "" {
		t.Fatalf("summary = %+v", sum)
	}
	// 300 messages at 3000/s take about 100 ms.
	if sum.Seconds < 0.09 {
		t.Fatalf("rate not applied: %.3fs", sum.Seconds)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Fatalf("bad SENDs: %v", problems)
	}
	// The 5 ms delay, not the 1000-message limit, closes batches: at
	// 3000/s a batch holds about 15 messages (more if the machine stalls).
	next := uint64(0)
	for i, s := range sends {
		if s.seq != next || s.highest != s.seq+uint64(s.n)-1 || s.n < 1 {
			t.Fatalf("SEND %d = %+v, want first sequence id %d", i, s, next)
		}
		next = s.highest + 1
	}
	if next != 300 || len(sends) < 3 {
		t.Fatalf("%d SENDs carrying %d messages", len(sends), next)
	}
}

// TestRawProduceReceiptOutOfOrder: a broker that acknowledges the second
// batch before the first is a protocol error the producer reports.
func TestRawProduceReceiptOutOfOrder(t *testing.T) {
	var held []sent
	fb := startFakeBroker(t, func(fc *fakebroker.Conn, f pulsarproto.Frame) {
		if f.Type != pb.BaseCommand_SEND {
			return
		}
		s, _ := checkSend(f)
		if held = append(held, s); len(held) == 2 {
			fc.Write(receipt(held[1]))
			fc.Write(receipt(held[0]))
		}
	})
	sum, err := RawProduce(context.Background(), produceCfg(fb.URL, 50))
	if err == nil || !strings.Contains(err.Error(), "out of order") {
		t.Fatalf("err = %v", err)
	}
	if sum.Messages != 0 || sum.Errors < 20 || !strings.Contains(sum.FirstError, "sequence id 10") {
		t.Fatalf("summary = %+v", sum)
	}
}

// TestRawProduceSendError: a SEND_ERROR ends the producer; what was
// acknowledged before still counts.
func TestRawProduceSendError(t *testing.T) {
	n := 0
	fb := startFakeBroker(t, func(fc *fakebroker.Conn, f pulsarproto.Frame) {
		if f.Type != pb.BaseCommand_SEND {
			return
		}
		s, _ := checkSend(f)
		if n++; n == 1 {
			fc.Write(receipt(s))
			return
		}
		fc.Send(&pb.BaseCommand{Type: pb.BaseCommand_SEND_ERROR.Enum(), SendError: &pb.CommandSendError{
			ProducerId: proto.Uint64(1), SequenceId: proto.Uint64(s.seq), Error: pb.ServerError_PersistenceError.Enum(), Message: proto.String("disk on fire")}})
	})
	sum, err := RawProduce(context.Background(), produceCfg(fb.URL, 50))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Messages != 10 || sum.Errors < 10 || !strings.Contains(sum.FirstError, "disk on fire") || !strings.Contains(sum.String(), "errors") {
		t.Fatalf("summary = %+v", sum)
	}
}

// fakeTopic serves entries of a fixed batch size to a raw consumer,
// honouring permits, and records its FLOWs and ACKs.
type fakeTopic struct {
	entries   [][]byte // entry bytes, entry id = index
	perEntry  int
	mu        sync.Mutex
	next      int
	permits   int
	flows     []uint32
	acks      []*pb.CommandAck
	closeSeen bool
}

func (ft *fakeTopic) handle(fc *fakebroker.Conn, f pulsarproto.Frame) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	switch f.Type {
	case pb.BaseCommand_FLOW:
		ft.flows = append(ft.flows, f.Cmd.GetFlow().GetMessagePermits())
		ft.permits += int(f.Cmd.GetFlow().GetMessagePermits())
		for ft.permits > 0 && ft.next < len(ft.entries) {
			fc.Write(pulsarproto.AppendMessage(nil, &pulsarproto.MessageHeader{
				ConsumerID: f.Cmd.GetFlow().GetConsumerId(), LedgerID: 1, EntryID: uint64(ft.next), Partition: -1}, ft.entries[ft.next]))
			ft.next++
			ft.permits -= ft.perEntry
		}
	case pb.BaseCommand_ACK:
		ft.acks = append(ft.acks, proto.Clone(f.Cmd.GetAck()).(*pb.CommandAck))
	case pb.BaseCommand_CLOSE_CONSUMER:
		ft.closeSeen = true
	}
}

func newFakeTopic(t *testing.T, entries, perEntry int, corrupt int) *fakeTopic {
	ft := &fakeTopic{perEntry: perEntry}
	b := newBatchBuilder(1, "p", true)
	payload := make([]byte, 50)
	var dec pulsarproto.Decoder
	for i := range entries {
		for j := range perEntry {
			b.add(uint64(i*perEntry+j), payload, uint64(time.Now().UnixMilli()))
		}
		_, f, err := dec.Decode(b.seal())
		if err != nil {
			t.Fatal(err)
		}
		e := append([]byte(nil), f.Payload...)
		if i == corrupt {
			e[len(e)-1] ^= 1
		}
		ft.entries = append(ft.entries, e)
		b.reset()
	}
	return ft
}

// TestRawConsumeFakeBroker checks permits (the whole queue, then half of
// it at a time) and both ack modes against a fake broker.
func TestRawConsumeFakeBroker(t *testing.T) {
	t.Run("exclusive-cumulative", func(t *testing.T) {
		ft := newFakeTopic(t, 30, 10, -1)
		fb := startFakeBroker(t, ft.handle)
		sum, err := RawConsume(context.Background(), ConsumeConfig{Common: Common{ServiceURL: fb.URL, Topics: []string{"t"},
			NumMessages: 300, Duration: 30 * time.Second}, ReceiverQueueSize: 100}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Messages != 300 || sum.Bytes != 300*50 || sum.Errors != 0 || sum.Latency.Samples != 300 {
			t.Fatalf("summary = %+v", sum)
		}
		ft.mu.Lock()
		defer ft.mu.Unlock()
		if len(ft.flows) < 5 || ft.flows[0] != 100 {
			t.Fatalf("flows = %v", ft.flows)
		}
		for _, p := range ft.flows[1:] {
			if p != 50 {
				t.Fatalf("flows = %v, want 100 then 50s", ft.flows)
			}
		}
		last := ft.acks[len(ft.acks)-1]
		if !ft.closeSeen || last.GetAckType() != pb.CommandAck_Cumulative || len(last.MessageId) != 1 || last.MessageId[0].GetEntryId() != 29 {
			t.Fatalf("close %v, last ack %v", ft.closeSeen, last)
		}
	})
	t.Run("shared-individual-checksum", func(t *testing.T) {
		ft := newFakeTopic(t, 30, 10, 4)
		fb := startFakeBroker(t, ft.handle)
		sum, err := RawConsume(context.Background(), ConsumeConfig{Common: Common{ServiceURL: fb.URL, Topics: []string{"t"},
			NumMessages: 290, Duration: 30 * time.Second}, ReceiverQueueSize: 100, SubscriptionType: "shared"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Messages != 290 || sum.Errors != 1 || !strings.Contains(sum.FirstError, "checksum") {
			t.Fatalf("summary = %+v", sum)
		}
		ft.mu.Lock()
		defer ft.mu.Unlock()
		acked := map[uint64]int{}
		for _, a := range ft.acks {
			if a.GetAckType() != pb.CommandAck_Individual {
				t.Fatalf("ack = %v", a)
			}
			for _, id := range a.MessageId {
				acked[id.GetEntryId()]++
			}
		}
		for e := range uint64(30) {
			if acked[e] != 1 {
				t.Fatalf("entry %d acked %d times (acks %v)", e, acked[e], ft.acks)
			}
		}
	})
}
