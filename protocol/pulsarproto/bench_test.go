package pulsarproto

import (
	"bufio"
	"fmt"
	"math"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

var benchSizes = []int{200, 4096}

// BenchmarkDecodeSend decodes a SEND frame and checks its entry (CRC32C and
// metadata), as the broker does per entry. "fast" is the package's path;
// "generated" is the same work through the generated code with a reused
// BaseCommand, for comparison.
func BenchmarkDecodeSend(b *testing.B) {
	for _, size := range benchSizes {
		frame := AppendSend(nil, &SendHeader{ProducerID: 1, SequenceID: 42, NumMessages: 1}, testEntry(b, size))
		b.Run(fmt.Sprintf("fast/size=%d", size), func(b *testing.B) {
			var d Decoder
			var md Metadata
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				_, f, err := d.Decode(frame)
				if err != nil {
					b.Fatal(err)
				}
				e, err := VerifyEntry(f.Payload)
				if err != nil {
					b.Fatal(err)
				}
				if err := ParseMetadata(e.Metadata, &md); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("generated/size=%d", size), func(b *testing.B) {
			var cmd pb.BaseCommand
			var md pb.MessageMetadata
			cmdSize := int(frame[4])<<24 | int(frame[5])<<16 | int(frame[6])<<8 | int(frame[7])
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if err := proto.Unmarshal(frame[8:8+cmdSize], &cmd); err != nil {
					b.Fatal(err)
				}
				e, err := VerifyEntry(frame[8+cmdSize:])
				if err != nil {
					b.Fatal(err)
				}
				if err := proto.Unmarshal(e.Metadata, &md); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("command-only/size=%d", size), func(b *testing.B) {
			var d Decoder
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := d.Decode(frame); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncodeMessage encodes a MESSAGE frame around a stored entry:
// "fast" is AppendMessage, "generated" is AppendPayloadCommand with a
// reused pb.BaseCommand.
func BenchmarkEncodeMessage(b *testing.B) {
	for _, size := range benchSizes {
		entry := testEntry(b, size)
		b.Run(fmt.Sprintf("fast/size=%d", size), func(b *testing.B) {
			buf := make([]byte, 0, 2*size+64)
			h := MessageHeader{ConsumerID: 3, LedgerID: 12345, EntryID: 678, Partition: -1, RedeliveryCount: 0}
			b.SetBytes(int64(len(entry)))
			b.ReportAllocs()
			for b.Loop() {
				h.EntryID++
				buf = AppendMessage(buf[:0], &h, entry)
			}
		})
		b.Run(fmt.Sprintf("generated/size=%d", size), func(b *testing.B) {
			buf := make([]byte, 0, 2*size+64)
			var consumerID, ledgerID, entryID uint64 = 3, 12345, 678
			cmd := &pb.BaseCommand{Type: pb.BaseCommand_MESSAGE.Enum(), Message: &pb.CommandMessage{
				ConsumerId: &consumerID, MessageId: &pb.MessageIdData{LedgerId: &ledgerID, EntryId: &entryID}}}
			b.SetBytes(int64(len(entry)))
			b.ReportAllocs()
			for b.Loop() {
				entryID++
				var err error
				if buf, err = AppendPayloadCommand(buf[:0], cmd, entry); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncodeSendReceipt(b *testing.B) {
	buf := make([]byte, 0, 64)
	r := SendReceipt{ProducerID: 1, SequenceID: 100, LedgerID: 12345, EntryID: 678}
	b.ReportAllocs()
	for b.Loop() {
		r.SequenceID++
		buf = AppendSendReceipt(buf[:0], &r)
	}
}

func BenchmarkBatchIterate(b *testing.B) {
	var msgs []*pb.SingleMessageMetadata
	var payloads [][]byte
	for i := 0; i < 100; i++ {
		msgs = append(msgs, &pb.SingleMessageMetadata{PartitionKey: proto.String(fmt.Sprintf("key-%d", i%7))})
		payloads = append(payloads, testPayload(200))
	}
	batch := buildBatch(b, msgs, payloads)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	var sm SingleMetadata
	for b.Loop() {
		rest := batch
		for len(rest) > 0 {
			var err error
			if rest, _, err = NextSingleMessage(rest, &sm); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkParseTopicName(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseTopicName("my-topic-partition-3"); err != nil {
			b.Fatal(err)
		}
	}
}

// loopReader serves data over and over, filling each Read up to max
// bytes across frame boundaries, as a busy socket does.
type loopReader struct {
	data []byte
	off  int
	max  int
}

func (r *loopReader) Read(p []byte) (int, error) {
	p = p[:min(len(p), r.max)]
	n := 0
	for n < len(p) {
		k := copy(p[n:], r.data[r.off:])
		n += k
		r.off = (r.off + k) % len(r.data)
	}
	return n, nil
}

// BenchmarkFrameReaderKeep reads SEND frames of the given size through a
// 64 KiB bufio.Reader (as the broker does) and keeps each payload, as the
// broker keeps a SEND's entry: "copy" reads into the reused buffer (or, above
// MaxRetainedBuffer, a fresh one) and copies the payload out, as HEAD did
// before owned frames; "owned" reads the frame into a buffer of its own and
// keeps the payload in place. It picks OwnedFrameThreshold.
func BenchmarkFrameReaderKeep(b *testing.B) {
	for _, size := range []int{1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 400 << 10} {
		frame := AppendSend(nil, &SendHeader{ProducerID: 1, SequenceID: 42, NumMessages: 1}, testEntry(b, size))
		for _, path := range []string{"copy", "owned"} {
			b.Run(fmt.Sprintf("%s/size=%d", path, size), func(b *testing.B) {
				fr := NewFrameReader(bufio.NewReaderSize(&loopReader{data: frame, max: 64 << 10}, 64<<10), 0)
				fr.owned = math.MaxInt
				if path == "owned" {
					fr.owned = 0
				}
				var sink []byte
				b.SetBytes(int64(len(frame)))
				b.ReportAllocs()
				for b.Loop() {
					f, err := fr.Next()
					if err != nil {
						b.Fatal(err)
					}
					if buf, off, ok := f.PayloadBuffer(); ok {
						sink = buf[off:]
					} else {
						sink = make([]byte, len(f.Payload))
						copy(sink, f.Payload)
					}
				}
				_ = sink
			})
		}
	}
}
