package perf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// This file is the raw clients' hot-path codec: the frames they receive at
// message rate (SEND_RECEIPT, MESSAGE) are decoded by hand with protowire
// into reused structs, and the frames they send at message rate (FLOW, ACK)
// are encoded by hand; none of that allocates. Everything else (handshake,
// lookup, errors) goes through the generated code in pulsarproto/pb.

// msgID is a (ledger, entry) message id.
type msgID struct{ ledger, entry uint64 }

// rawFrame is one received frame. Type is always set. For SEND_RECEIPT
// and MESSAGE the fields below are filled by hand and Cmd is nil; for every
// other type Cmd holds the generated decoding. Everything aliases the
// rawReader's buffer and its Decoder: valid until the next read.
type rawFrame struct {
	Type pb.BaseCommand_Type
	Cmd  *pb.BaseCommand

	// SEND_RECEIPT
	ProducerID, SequenceID, HighestSequenceID uint64
	// MESSAGE (ID also for SEND_RECEIPT)
	ConsumerID      uint64
	ID              msgID
	RedeliveryCount uint32
	// AckSet is the MESSAGE's ack_set (bit set = deliver), empty when the
	// whole entry is to be delivered.
	AckSet  []int64
	Payload []byte
}

// rawReader reads frames from a bufio.Reader. A frame that fits in the
// reader's buffer is peeked, decoded in place and then discarded: no copy,
// and a read interrupted by a deadline consumes nothing, so the stream
// stays at a frame boundary and reading can resume (the consumer relies on
// that to close cleanly after its stop deadline). A bigger frame is read
// into a buffer the reader keeps; an error in the middle of one leaves the
// stream unusable (broken is set).
type rawReader struct {
	br     *bufio.Reader
	max    int
	buf    []byte
	dec    pulsarproto.Decoder
	f      rawFrame
	broken bool
}

func newRawReader(br *bufio.Reader, maxFrame int) *rawReader {
	return &rawReader{br: br, max: maxFrame, dec: pulsarproto.Decoder{MaxFrameSize: maxFrame}}
}

func (rr *rawReader) setMax(n int) { rr.max, rr.dec.MaxFrameSize = n, n }

// next reads and decodes one frame; the result is valid until the next call.
func (rr *rawReader) next() (*rawFrame, error) {
	if rr.broken {
		return nil, errors.New("perf: raw: connection unusable after an interrupted frame")
	}
	hdr, err := rr.br.Peek(4)
	if err != nil {
		if len(hdr) > 0 && errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: %w", pulsarproto.ErrTruncated, io.ErrUnexpectedEOF)
		}
		return nil, err
	}
	total := binary.BigEndian.Uint32(hdr)
	if uint64(total) > uint64(rr.max) {
		rr.broken = true
		return nil, fmt.Errorf("%w: %d bytes, limit %d", pulsarproto.ErrFrameTooLarge, total, rr.max)
	}
	if total < 4 {
		rr.broken = true
		return nil, fmt.Errorf("%w: totalSize %d", pulsarproto.ErrBadCommandSize, total)
	}
	n := 4 + int(total)
	var frame []byte
	if n <= rr.br.Size() {
		frame, err = rr.br.Peek(n)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("%w: %w", pulsarproto.ErrTruncated, io.ErrUnexpectedEOF)
			}
			return nil, err
		}
		rr.br.Discard(n)
	} else {
		if cap(rr.buf) < n {
			rr.buf = make([]byte, n)
		}
		frame = rr.buf[:n]
		if _, err := io.ReadFull(rr.br, frame); err != nil {
			rr.broken = true
			return nil, err
		}
	}
	return rr.decode(frame)
}

func (rr *rawReader) decode(buf []byte) (*rawFrame, error) {
	f := &rr.f
	ackSet := f.AckSet[:0]
	*f = rawFrame{AckSet: ackSet}
	cmdSize := binary.BigEndian.Uint32(buf[4:])
	if uint64(cmdSize) > uint64(len(buf)-pulsarproto.FrameHeaderSize) {
		rr.broken = true
		return nil, fmt.Errorf("%w: commandSize %d, frame %d", pulsarproto.ErrBadCommandSize, cmdSize, len(buf))
	}
	cmd := buf[pulsarproto.FrameHeaderSize : pulsarproto.FrameHeaderSize+int(cmdSize)]
	if rest := buf[pulsarproto.FrameHeaderSize+int(cmdSize):]; len(rest) > 0 {
		f.Payload = rest
	}
	if decodeHot(cmd, f) {
		return f, nil
	}
	_, fr, err := rr.dec.Decode(buf)
	if err != nil {
		rr.broken = true
		return nil, err
	}
	*f = rawFrame{Type: fr.Type, Cmd: fr.Cmd, Payload: fr.Payload, AckSet: ackSet}
	return f, nil
}

// decodeHot decodes a BaseCommand holding a SEND_RECEIPT or a MESSAGE into
// f without allocating. It reports false for any other command, and for
// anything it does not expect (the generic decoder then does the work and
// reports the errors).
func decodeHot(b []byte, f *rawFrame) bool {
	var typ uint64
	var body []byte
	var haveType, haveBody bool
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		switch {
		case num == 1 && wt == protowire.VarintType:
			typ, n = protowire.ConsumeVarint(b)
			haveType = true
		case (num == 7 || num == 9) && wt == protowire.BytesType && !haveBody:
			body, n = protowire.ConsumeBytes(b)
			haveBody = true
		default:
			return false
		}
		if n < 0 {
			return false
		}
		b = b[n:]
	}
	if !haveType || !haveBody {
		return false
	}
	switch pb.BaseCommand_Type(typ) {
	case pb.BaseCommand_SEND_RECEIPT:
		f.Type = pb.BaseCommand_SEND_RECEIPT
		return decodeReceipt(body, f)
	case pb.BaseCommand_MESSAGE:
		f.Type = pb.BaseCommand_MESSAGE
		return decodeMessage(body, f)
	}
	return false
}

func decodeReceipt(b []byte, f *rawFrame) bool {
	var seen uint8
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		switch {
		case num == 3 && wt == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 || !decodeMsgID(v, &f.ID) {
				return false
			}
			b = b[n:]
			continue
		case wt != protowire.VarintType:
			n = protowire.ConsumeFieldValue(num, wt, b)
			if n < 0 {
				return false
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		switch num {
		case 1:
			f.ProducerID, seen = v, seen|1
		case 2:
			f.SequenceID, seen = v, seen|2
		case 4:
			f.HighestSequenceID = v
		}
	}
	return seen == 3
}

func decodeMessage(b []byte, f *rawFrame) bool {
	var haveConsumer, haveID bool
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		switch {
		case num == 2 && wt == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 || !decodeMsgID(v, &f.ID) {
				return false
			}
			b, haveID = b[n:], true
		case num == 4 && wt == protowire.BytesType: // packed ack_set
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return false
			}
			b = b[n:]
			for len(v) > 0 {
				w, m := protowire.ConsumeVarint(v)
				if m < 0 {
					return false
				}
				f.AckSet, v = append(f.AckSet, int64(w)), v[m:]
			}
		case wt == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return false
			}
			b = b[n:]
			switch num {
			case 1:
				f.ConsumerID, haveConsumer = v, true
			case 3:
				f.RedeliveryCount = uint32(v)
			case 4:
				f.AckSet = append(f.AckSet, int64(v))
			}
		default:
			n = protowire.ConsumeFieldValue(num, wt, b)
			if n < 0 {
				return false
			}
			b = b[n:]
		}
	}
	return haveConsumer && haveID
}

func decodeMsgID(b []byte, id *msgID) bool {
	var seen uint8
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if wt == protowire.VarintType && (num == 1 || num == 2) {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return false
			}
			b = b[n:]
			if num == 1 {
				id.ledger, seen = v, seen|1
			} else {
				id.entry, seen = v, seen|2
			}
			continue
		}
		n = protowire.ConsumeFieldValue(num, wt, b)
		if n < 0 {
			return false
		}
		b = b[n:]
	}
	return seen == 3
}

// appendCommandFrame appends a simple frame whose BaseCommand holds type
// typ and the serialized sub-command body (the field number of each
// sub-command equals its type).
func appendCommandFrame(dst []byte, typ pb.BaseCommand_Type, body []byte) []byte {
	num := protowire.Number(typ)
	cmdSize := protowire.SizeTag(1) + protowire.SizeVarint(uint64(typ)) +
		protowire.SizeTag(num) + protowire.SizeBytes(len(body))
	dst = binary.BigEndian.AppendUint32(dst, uint32(4+cmdSize))
	dst = binary.BigEndian.AppendUint32(dst, uint32(cmdSize))
	dst = protowire.AppendTag(dst, 1, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(typ))
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(len(body)))
	return append(dst, body...)
}

func appendVarint(dst []byte, num protowire.Number, v uint64) []byte {
	dst = protowire.AppendTag(dst, num, protowire.VarintType)
	return protowire.AppendVarint(dst, v)
}

// appendFlow appends a FLOW frame granting permits messages; scratch is a
// reused buffer for the body, returned for the next call.
func appendFlow(dst, scratch []byte, consumerID uint64, permits uint32) (out, scratchOut []byte) {
	body := appendVarint(scratch[:0], 1, consumerID)
	body = appendVarint(body, 2, uint64(permits))
	return appendCommandFrame(dst, pb.BaseCommand_FLOW, body), body
}

// appendAck appends one ACK frame acknowledging ids, individually or
// cumulatively (then ids holds one id); scratch as for appendFlow.
func appendAck(dst, scratch []byte, consumerID uint64, cumulative bool, ids []msgID) (out, scratchOut []byte) {
	body := appendVarint(scratch[:0], 1, consumerID)
	typ := pb.CommandAck_Individual
	if cumulative {
		typ = pb.CommandAck_Cumulative
	}
	body = appendVarint(body, 2, uint64(typ))
	for _, id := range ids {
		size := protowire.SizeTag(1) + protowire.SizeVarint(id.ledger) + protowire.SizeTag(2) + protowire.SizeVarint(id.entry)
		body = protowire.AppendTag(body, 3, protowire.BytesType)
		body = protowire.AppendVarint(body, uint64(size))
		body = appendVarint(body, 1, id.ledger)
		body = appendVarint(body, 2, id.entry)
	}
	return appendCommandFrame(dst, pb.BaseCommand_ACK, body), body
}

// pongFrame is a PONG (empty sub-command), the answer to every PING.
var pongFrame = appendCommandFrame(nil, pb.BaseCommand_PONG, nil)
