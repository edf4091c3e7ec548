package pulsarproto

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

func TestCommandRoundTrip(t *testing.T) {
	var d Decoder
	for _, cmd := range allCommands() {
		t.Run(cmd.GetType().String(), func(t *testing.T) {
			frame, err := AppendCommand([]byte("prefix"), cmd)
			if err != nil {
				t.Fatalf("AppendCommand: %v", err)
			}
			if string(frame[:6]) != "prefix" {
				t.Fatalf("AppendCommand clobbered dst prefix")
			}
			rest, f, err := d.Decode(frame[6:])
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if len(rest) != 0 || f.Payload != nil {
				t.Fatalf("Decode: rest %d bytes, payload %d bytes, want none", len(rest), len(f.Payload))
			}
			if !bytes.Equal(f.Raw, frame[6:]) {
				t.Fatalf("Decode Raw = %x, want the input frame", f.Raw)
			}
			if f.Type != cmd.GetType() || !proto.Equal(f.Cmd, cmd) {
				t.Fatalf("Decode = %v, want %v", f.Cmd, cmd)
			}
		})
	}
}

func TestAppendCommandRequiredFields(t *testing.T) {
	for name, cmd := range map[string]*pb.BaseCommand{
		"no type":              {Ping: &pb.CommandPing{}},
		"error without msg":    {Type: pb.BaseCommand_ERROR.Enum(), Error: &pb.CommandError{RequestId: proto.Uint64(1), Error: pb.ServerError_UnknownError.Enum()}},
		"connected no version": {Type: pb.BaseCommand_CONNECTED.Enum(), Connected: &pb.CommandConnected{}},
		"msg id no entry":      {Type: pb.BaseCommand_SEND_RECEIPT.Enum(), SendReceipt: &pb.CommandSendReceipt{ProducerId: proto.Uint64(1), SequenceId: proto.Uint64(1), MessageId: &pb.MessageIdData{LedgerId: proto.Uint64(1)}}},
	} {
		dst := []byte("keep")
		out, err := AppendCommand(dst, cmd)
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: AppendCommand err = %v, want ErrMalformed", name, err)
		}
		if string(out) != "keep" {
			t.Errorf("%s: AppendCommand returned %q, want dst unchanged", name, out)
		}
	}
}

// corruptCase is one row of the frame corruption table.
type corruptCase struct {
	name    string
	frame   func(t *testing.T) []byte
	corrupt func([]byte) []byte
	max     int
	wantErr error // nil: decodes
}

func putU32(b []byte, off int, v uint32) []byte {
	binary.BigEndian.PutUint32(b[off:], v)
	return b
}

func frameCases() []corruptCase {
	ping := func(t *testing.T) []byte {
		b, _ := AppendCommand(nil, &pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}})
		return b
	}
	send := func(t *testing.T) []byte { return mustAppend(t, testSendCmd(), testEntry(t, 200)) }
	message := func(t *testing.T) []byte {
		return AppendMessage(nil, &MessageHeader{ConsumerID: 1, LedgerID: 2, EntryID: 3, Partition: -1}, testEntry(t, 200))
	}
	id := func(b []byte) []byte { return b }
	var cases []corruptCase
	for _, k := range []struct {
		name  string
		frame func(t *testing.T) []byte
	}{{"ping", ping}, {"send", send}, {"message", message}} {
		cases = append(cases,
			corruptCase{k.name + "/ok", k.frame, id, 0, nil},
			corruptCase{k.name + "/truncate-header", k.frame, func(b []byte) []byte { return b[:3] }, 0, ErrTruncated},
			corruptCase{k.name + "/truncate-cmdsize", k.frame, func(b []byte) []byte { return b[:6] }, 0, ErrTruncated},
			corruptCase{k.name + "/truncate-body", k.frame, func(b []byte) []byte { return b[:len(b)-1] }, 0, ErrTruncated},
			corruptCase{k.name + "/empty", k.frame, func(b []byte) []byte { return b[:0] }, 0, ErrTruncated},
			corruptCase{k.name + "/oversize", k.frame, id, 5, ErrFrameTooLarge},
			corruptCase{k.name + "/huge-total", k.frame, func(b []byte) []byte { return putU32(b, 0, 0xffffffff) }, 0, ErrFrameTooLarge},
			corruptCase{k.name + "/cmdsize-past-frame", k.frame, func(b []byte) []byte {
				return putU32(b, 4, binary.BigEndian.Uint32(b)-3)
			}, 0, ErrBadCommandSize},
			corruptCase{k.name + "/total-too-small", k.frame, func(b []byte) []byte { return putU32(b, 0, 3)[:7] }, 0, ErrBadCommandSize},
			corruptCase{k.name + "/cmdsize-zero", k.frame, func(b []byte) []byte { return putU32(b, 4, 0) }, 0, ErrMalformed},
			corruptCase{k.name + "/garbage-command", k.frame, func(b []byte) []byte { b[8] = 0xff; b[9] = 0xff; return b }, 0, ErrMalformed},
		)
	}
	// A payload command whose command is cut short: the payload bytes then
	// start inside the protobuf.
	cases = append(cases, corruptCase{"send/cmdsize-short", send, func(b []byte) []byte {
		return putU32(b, 4, binary.BigEndian.Uint32(b[4:])-2)
	}, 0, ErrMalformed})
	return cases
}

func TestDecodeCorruption(t *testing.T) {
	for _, c := range frameCases() {
		t.Run(c.name, func(t *testing.T) {
			b := c.corrupt(c.frame(t))
			d := Decoder{MaxFrameSize: c.max}
			rest, f, err := d.Decode(append(b, "next"...))
			if c.wantErr == nil {
				if err != nil {
					t.Fatalf("Decode err = %v, want nil", err)
				}
				if string(rest) != "next" {
					t.Fatalf("Decode rest = %q, want %q", rest, "next")
				}
				if f.Cmd == nil || f.Type != f.Cmd.GetType() {
					t.Fatalf("Decode frame type %v cmd %v", f.Type, f.Cmd)
				}
				return
			}
			if c.wantErr == ErrTruncated {
				// "next" would be read as frame bytes; decode the bare input.
				_, _, err = d.Decode(b)
			}
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("Decode err = %v, want %v", err, c.wantErr)
			}
		})
	}
}

func TestReadFrameCorruption(t *testing.T) {
	for _, c := range frameCases() {
		t.Run(c.name, func(t *testing.T) {
			b := c.corrupt(c.frame(t))
			fr := NewFrameReader(iotest.HalfReader(bytes.NewReader(b)), c.max)
			f, err := fr.Next()
			want := c.wantErr
			if len(b) == 0 {
				want = io.EOF
			}
			if want == nil {
				if err != nil {
					t.Fatalf("Next err = %v, want nil", err)
				}
				if f.Cmd == nil {
					t.Fatalf("Next returned no command")
				}
				if _, err := fr.Next(); err != io.EOF {
					t.Fatalf("second Next err = %v, want io.EOF", err)
				}
				return
			}
			if !errors.Is(err, want) {
				t.Fatalf("Next err = %v, want %v", err, want)
			}
			if want == ErrTruncated && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("Next err = %v, want it to wrap io.ErrUnexpectedEOF", err)
			}
		})
	}
}

func TestReadFrameIOError(t *testing.T) {
	boom := errors.New("boom")
	frame := mustAppend(t, testSendCmd(), testEntry(t, 200))
	for _, n := range []int{0, 2, 4, 10} {
		r := io.MultiReader(bytes.NewReader(frame[:n]), iotest.ErrReader(boom))
		if _, err := ReadFrame(r, 0, nil); !errors.Is(err, boom) {
			t.Errorf("ReadFrame after %d bytes: err = %v, want boom", n, err)
		}
	}
}

// TestFrameReaderStream reads a stream of mixed frames one byte at a time
// and checks each against what was written; it also checks that decoder
// state does not leak from one SEND into the next.
func TestFrameReaderStream(t *testing.T) {
	var want []*pb.BaseCommand
	var payloads [][]byte
	var buf []byte
	for i, cmd := range allCommands() {
		var entry []byte
		if cmd.GetType() == pb.BaseCommand_SEND || cmd.GetType() == pb.BaseCommand_MESSAGE {
			entry = testEntry(t, i*10)
		}
		var err error
		buf, err = AppendPayloadCommand(buf, cmd, entry)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, cmd)
		payloads = append(payloads, entry)
		// A second SEND with different optional fields.
		if cmd.GetType() == pb.BaseCommand_SEND {
			s2 := &pb.BaseCommand{Type: pb.BaseCommand_SEND.Enum(), Send: &pb.CommandSend{
				ProducerId: proto.Uint64(9), SequenceId: proto.Uint64(1), HighestSequenceId: proto.Uint64(5),
				IsChunk: proto.Bool(true), TxnidLeastBits: proto.Uint64(1), TxnidMostBits: proto.Uint64(2), Marker: proto.Bool(false),
			}}
			buf, _ = AppendPayloadCommand(buf, s2, entry)
			want = append(want, s2)
			payloads = append(payloads, entry)
			buf, _ = AppendPayloadCommand(buf, cmd, entry)
			want = append(want, cmd)
			payloads = append(payloads, entry)
		}
	}
	fr := NewFrameReader(bufio.NewReader(iotest.OneByteReader(bytes.NewReader(buf))), 0)
	for i := range want {
		f, err := fr.Next()
		if err != nil {
			t.Fatalf("frame %d: Next: %v", i, err)
		}
		if !proto.Equal(f.Cmd, want[i]) {
			t.Fatalf("frame %d: got %v, want %v", i, f.Cmd, want[i])
		}
		if !bytes.Equal(f.Payload, payloads[i]) || (f.Payload == nil) != (len(payloads[i]) == 0) {
			t.Fatalf("frame %d: payload differs", i)
		}
	}
	if _, err := fr.Next(); err != io.EOF {
		t.Fatalf("Next at end: err = %v, want io.EOF", err)
	}
}

// rawSend builds a BaseCommand{type=SEND, send=<body>} by hand.
func rawSend(body []byte, extra ...byte) []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(pb.BaseCommand_SEND))
	b = protowire.AppendTag(b, 6, protowire.BytesType)
	b = protowire.AppendBytes(b, body)
	return append(b, extra...)
}

func frameOf(cmd []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(4+len(cmd)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(cmd)))
	return append(b, cmd...)
}

// TestDecodeSendFastMatchesGeneric checks the hand-written SEND decoder
// against the generated one on regular and unusual encodings.
func TestDecodeSendFastMatchesGeneric(t *testing.T) {
	v := func(num protowire.Number, x uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), x)
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	msgID := protowire.AppendBytes(protowire.AppendTag(nil, 9, protowire.BytesType), cat(v(1, 5), v(2, 6)))
	cases := []struct {
		name    string
		cmd     []byte
		fast    bool
		wantErr bool
	}{
		{"minimal", rawSend(cat(v(1, 1), v(2, 2))), true, false},
		{"all-fields", rawSend(cat(v(1, 1), v(2, 2), v(3, 10), v(4, 4), v(5, 5), v(6, 6), v(7, 1), v(8, 1))), true, false},
		{"reordered", rawSend(cat(v(8, 0), v(2, 2), v(1, 1), v(3, 1<<40))), true, false},
		{"type-after-send", cat(protowire.AppendBytes(protowire.AppendTag(nil, 6, protowire.BytesType), cat(v(1, 1), v(2, 2))), v(1, 6)), true, false},
		{"max-varints", rawSend(cat(v(1, ^uint64(0)), v(2, ^uint64(0)), v(3, ^uint64(0)))), true, false},
		{"message-id", rawSend(cat(v(1, 1), v(2, 2), msgID)), false, false},
		{"duplicate-field", rawSend(cat(v(1, 1), v(2, 2), v(2, 3))), false, false},
		{"unknown-field", rawSend(cat(v(1, 1), v(2, 2), v(20, 3))), false, false},
		{"unknown-top-level", rawSend(cat(v(1, 1), v(2, 2)), v(99, 1)...), false, false},
		{"mistyped-field", rawSend(cat(v(1, 1), v(2, 2), protowire.AppendBytes(protowire.AppendTag(nil, 3, protowire.BytesType), []byte("x")))), false, false},
		{"missing-sequence", rawSend(v(1, 1)), false, true},
		{"missing-producer", rawSend(v(2, 1)), false, true},
		{"flow-type-with-send", cat(v(1, uint64(pb.BaseCommand_FLOW)), protowire.AppendBytes(protowire.AppendTag(nil, 6, protowire.BytesType), cat(v(1, 1), v(2, 2)))), false, false},
		{"truncated-varint", rawSend([]byte{0x08, 0xff}), false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var d Decoder
			fast := d.decodeSendFast(c.cmd)
			if fast != c.fast {
				t.Fatalf("decodeSendFast = %v, want %v", fast, c.fast)
			}
			var want pb.BaseCommand
			werr := proto.Unmarshal(c.cmd, &want)
			_, f, err := d.Decode(frameOf(c.cmd))
			if (err != nil) != c.wantErr || (werr != nil) != c.wantErr {
				t.Fatalf("Decode err = %v, proto.Unmarshal err = %v, want error %v", err, werr, c.wantErr)
			}
			if err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("Decode err = %v, want ErrMalformed", err)
				}
				return
			}
			if !proto.Equal(f.Cmd, &want) {
				t.Fatalf("Decode = %v, want %v", f.Cmd, &want)
			}
		})
	}
}

func TestFrameReaderSetMaxFrameSize(t *testing.T) {
	frame := mustAppend(t, testSendCmd(), testEntry(t, 200))
	fr := NewFrameReader(bytes.NewReader(append(append([]byte(nil), frame...), frame...)), 0)
	if _, err := fr.Next(); err != nil {
		t.Fatal(err)
	}
	fr.SetMaxFrameSize(100)
	if _, err := fr.Next(); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("Next with limit 100: err = %v, want ErrFrameTooLarge", err)
	}
}

func TestFrameReaderDropsLargeBuffer(t *testing.T) {
	small := mustAppend(t, testSendCmd(), testEntry(t, 200))
	big := mustAppend(t, testSendCmd(), testEntry(t, 2*MaxRetainedBuffer))
	var stream []byte
	for _, f := range [][]byte{small, big, small, small} {
		stream = append(stream, f...)
	}
	fr := NewFrameReader(bytes.NewReader(stream), 0)
	for i, want := range []int{200, 2 * MaxRetainedBuffer, 200, 200} {
		f, err := fr.Next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		e, err := VerifyEntry(f.Payload)
		if err != nil || len(e.Payload) != want {
			t.Fatalf("frame %d: payload %d bytes, err %v; want %d", i, len(e.Payload), err, want)
		}
		if i >= 2 && cap(fr.buf) > MaxRetainedBuffer {
			t.Fatalf("frame %d: reader kept a %d-byte buffer", i, cap(fr.buf))
		}
	}
}
