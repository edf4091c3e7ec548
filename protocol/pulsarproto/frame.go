package pulsarproto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// Frame size limits.
const (
	// FrameHeaderSize is the length of the totalSize and commandSize fields.
	FrameHeaderSize = 8

	// DefaultMaxMessageSize is the max_message_size a Pulsar client assumes
	// when CONNECTED does not carry one.
	DefaultMaxMessageSize = 5 << 20

	// FramePadding is what clients allow on top of max_message_size for the
	// command and metadata of a frame. A broker advertising
	// max_message_size M should read frames with a limit of M+FramePadding.
	FramePadding = 10 << 10

	// DefaultMaxFrameSize is the frame limit matching DefaultMaxMessageSize.
	DefaultMaxFrameSize = DefaultMaxMessageSize + FramePadding
)

// Frame is one decoded frame.
//
// Cmd, everything reachable from it, and Payload belong to the Decoder (or
// FrameReader) that produced the frame and stay valid only until its next
// Decode (Next) call. Copy what must outlive that: proto.Clone for commands,
// append([]byte(nil), f.Payload...) for payloads.
type Frame struct {
	// Type is Cmd.GetType(), copied out for switch statements.
	Type pb.BaseCommand_Type
	// Cmd is the decoded BaseCommand. It always has Type set, and the
	// sub-message matching Type when the peer sent one.
	Cmd *pb.BaseCommand
	// Payload holds the bytes after the command, from the first magic
	// (0x0e02 or 0x0e01) to the end of the frame, exactly as received; nil
	// when the frame has no payload. Only SEND and MESSAGE carry one. Parse
	// it with ParseEntry or VerifyEntry.
	Payload []byte
	// Raw is the whole frame as received, from totalSize to the end.
	Raw []byte
	// Owned reports that Raw and Payload lie in a buffer a FrameReader
	// allocated for this frame alone (frames above OwnedFrameThreshold)
	// and never touches again: unlike Cmd they stay valid after the next
	// call, and the caller may keep them or hand them on without copying.
	// See PayloadBuffer.
	Owned bool

	// buf is, for an Owned frame, the whole buffer: FrameHeadroom unused
	// bytes, then Raw (which ends at the end of buf).
	buf []byte
}

// PayloadBuffer returns, for an Owned frame with a payload, the buffer
// holding it and the payload's offset: buf[off:] is Payload and off >=
// FrameHeadroom. The bytes in front of the payload (the headroom, the
// frame header and the command) are not needed once the frame is decoded:
// whoever the buffer is handed to may overwrite buf[:off], for example to
// put its own header in front of the payload in place (Raw then no longer
// reads as received). ok is false for every other frame, whose payload
// must be copied to be kept.
func (f *Frame) PayloadBuffer() (buf []byte, off int, ok bool) {
	if !f.Owned || f.Payload == nil {
		return nil, 0, false
	}
	return f.buf, len(f.buf) - len(f.Payload), true
}

// ReadFrame reads one whole frame from r into buf (reallocating it if its
// capacity is too small) and returns the frame's bytes, starting with the
// 4-byte totalSize. maxFrameSize bounds totalSize; <= 0 means
// DefaultMaxFrameSize.
//
// At a clean frame boundary with no more input it returns io.EOF. Input that
// ends inside a frame yields an error matching both ErrTruncated and
// io.ErrUnexpectedEOF. A totalSize above the limit yields ErrFrameTooLarge
// before the body is read, and a totalSize below 4 (no room for
// commandSize) ErrBadCommandSize. Other read errors are returned unchanged.
func ReadFrame(r io.Reader, maxFrameSize int, buf []byte) ([]byte, error) {
	buf, n, err := readFrameSize(r, maxFrameSize, buf)
	if err != nil {
		return buf[:0], err
	}
	if cap(buf) >= n {
		buf = buf[:n]
		if err := readFrameBody(r, buf[4:]); err != nil {
			return buf[:0], err
		}
		return buf, nil
	}
	nb := make([]byte, 4, min(n, FrameChunk))
	copy(nb, buf[:4])
	nb, err = readGrowing(r, nb, n)
	if err != nil {
		return buf[:0], err
	}
	return nb, nil
}

// FrameChunk is the first allocation for the body of a frame larger than
// the reader's buffer. The buffer then doubles as bytes arrive (up to
// the announced size), so a peer that announces a large frame and sends
// little of it costs little memory, whatever size it announced.
const FrameChunk = 64 << 10

// readGrowing appends bytes from r to buf until it is total bytes long,
// growing it by doubling only when it is full. Errors are readFrameBody's.
func readGrowing(r io.Reader, buf []byte, total int) ([]byte, error) {
	for len(buf) < total {
		if len(buf) == cap(buf) {
			nb := make([]byte, len(buf), min(total, max(2*cap(buf), FrameChunk)))
			copy(nb, buf)
			buf = nb
		}
		k, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return buf, fmt.Errorf("%w: %w", ErrTruncated, io.ErrUnexpectedEOF)
			}
			return buf, err
		}
	}
	return buf, nil
}

// readFrameSize reads the 4-byte totalSize into buf[:4] (allocating buf if
// it has no room) and checks it against the limit; n is the size of the
// whole frame, 4+totalSize. Errors are ReadFrame's.
func readFrameSize(r io.Reader, maxFrameSize int, buf []byte) (_ []byte, n int, err error) {
	if maxFrameSize <= 0 {
		maxFrameSize = DefaultMaxFrameSize
	}
	if cap(buf) < 4 {
		buf = make([]byte, 0, 512)
	}
	buf = buf[:4]
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return buf, 0, fmt.Errorf("%w: %w", ErrTruncated, err)
		}
		return buf, 0, err
	}
	total := binary.BigEndian.Uint32(buf)
	if uint64(total) > uint64(maxFrameSize) {
		return buf, 0, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, total, maxFrameSize)
	}
	if total < 4 {
		return buf, 0, fmt.Errorf("%w: totalSize %d", ErrBadCommandSize, total)
	}
	return buf, 4 + int(total), nil
}

// readFrameBody fills body, the bytes of a frame after totalSize; input
// ending early yields ErrTruncated wrapping io.ErrUnexpectedEOF. Over a
// bufio.Reader the buffered bytes are copied first and the rest is read
// straight into body while at least a buffer's worth is missing.
func readFrameBody(r io.Reader, body []byte) error {
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: %w", ErrTruncated, io.ErrUnexpectedEOF)
		}
		return err
	}
	return nil
}

// Decoder decodes frames from byte slices, reusing one BaseCommand. SEND
// frames, the producer hot path, are decoded by hand without allocating;
// every other command goes through the generated protobuf code.
//
// A Decoder is not safe for concurrent use. The zero value is ready to use.
type Decoder struct {
	// MaxFrameSize bounds totalSize; <= 0 means DefaultMaxFrameSize.
	MaxFrameSize int

	cmd  pb.BaseCommand
	send pb.CommandSend
	sv   sendValues
}

// sendValues backs the pointer fields of Decoder.send on the fast path.
type sendValues struct {
	typ                           pb.BaseCommand_Type
	producerID, sequenceID        uint64
	txnLeast, txnMost, highestSeq uint64
	numMessages                   int32
	isChunk, marker               bool
}

// Decode decodes the frame at the start of src, which begins with the 4-byte
// totalSize, and returns the bytes after it. See Frame for how long the
// result stays valid.
func (d *Decoder) Decode(src []byte) (rest []byte, f Frame, err error) {
	limit := d.MaxFrameSize
	if limit <= 0 {
		limit = DefaultMaxFrameSize
	}
	if len(src) < 4 {
		return src, Frame{}, ErrTruncated
	}
	total := binary.BigEndian.Uint32(src)
	if uint64(total) > uint64(limit) {
		return src, Frame{}, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, total, limit)
	}
	if total < 4 {
		return src, Frame{}, fmt.Errorf("%w: totalSize %d", ErrBadCommandSize, total)
	}
	if uint64(len(src)-4) < uint64(total) {
		return src, Frame{}, ErrTruncated
	}
	frame := src[4 : 4+int(total)]
	rest = src[4+int(total):]
	cmdSize := binary.BigEndian.Uint32(frame)
	if uint64(cmdSize) > uint64(total-4) {
		return src, Frame{}, fmt.Errorf("%w: commandSize %d, totalSize %d", ErrBadCommandSize, cmdSize, total)
	}
	cmdBytes := frame[4 : 4+int(cmdSize)]
	if len(frame) > 4+int(cmdSize) {
		f.Payload = frame[4+int(cmdSize):]
	}
	if err := d.decodeCommand(cmdBytes); err != nil {
		return src, Frame{}, err
	}
	f.Cmd = &d.cmd
	f.Type = d.cmd.GetType()
	f.Raw = src[:4+int(total)]
	return rest, f, nil
}

func (d *Decoder) decodeCommand(b []byte) error {
	d.cmd.Reset()
	if d.decodeSendFast(b) {
		return nil
	}
	d.cmd.Reset()
	if err := proto.Unmarshal(b, &d.cmd); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return nil
}

// decodeSendFast decodes a BaseCommand that holds exactly a SEND without
// allocating. It reports false, leaving the generic decoder to do the work
// (and to report errors), for anything else or anything unusual: other
// commands, repeated or mistyped fields, a message_id, missing required
// fields.
func (d *Decoder) decodeSendFast(b []byte) bool {
	var sendBytes []byte
	var typ uint64
	var haveType, haveSend bool
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		switch {
		case num == 1 && wt == protowire.VarintType && !haveType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return false
			}
			typ, haveType = v, true
			b = b[n:]
		case num == 6 && wt == protowire.BytesType && !haveSend:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return false
			}
			sendBytes, haveSend = v, true
			b = b[n:]
		default:
			return false
		}
	}
	if !haveType || !haveSend || typ != uint64(pb.BaseCommand_SEND) {
		return false
	}
	sv := &d.sv
	*sv = sendValues{typ: pb.BaseCommand_SEND}
	d.send.Reset()
	s := &d.send
	var seen uint16
	for len(sendBytes) > 0 {
		num, wt, n := protowire.ConsumeTag(sendBytes)
		if n < 0 || num < 1 || num > 8 || wt != protowire.VarintType || seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		sendBytes = sendBytes[n:]
		v, n := protowire.ConsumeVarint(sendBytes)
		if n < 0 {
			return false
		}
		sendBytes = sendBytes[n:]
		switch num {
		case 1:
			sv.producerID, s.ProducerId = v, &sv.producerID
		case 2:
			sv.sequenceID, s.SequenceId = v, &sv.sequenceID
		case 3:
			sv.numMessages, s.NumMessages = int32(v), &sv.numMessages
		case 4:
			sv.txnLeast, s.TxnidLeastBits = v, &sv.txnLeast
		case 5:
			sv.txnMost, s.TxnidMostBits = v, &sv.txnMost
		case 6:
			sv.highestSeq, s.HighestSequenceId = v, &sv.highestSeq
		case 7:
			sv.isChunk, s.IsChunk = v != 0, &sv.isChunk
		case 8:
			sv.marker, s.Marker = v != 0, &sv.marker
		}
	}
	if s.ProducerId == nil || s.SequenceId == nil {
		return false
	}
	d.cmd.Type = &sv.typ
	d.cmd.Send = s
	return true
}

// MaxRetainedBuffer is the largest read buffer a FrameReader keeps between
// frames; a buffer grown for a bigger frame is dropped on the next call, so
// an idle connection does not pin a multi-megabyte buffer.
const MaxRetainedBuffer = 64 << 10

// OwnedFrameThreshold is the frame size (4+totalSize) above which a
// FrameReader reads a frame into a buffer of its own instead of its reused
// buffer: the bytes are copied once, from the stream into memory the
// caller may keep (Frame.Owned, Frame.PayloadBuffer). Such frames would
// not fit the retained buffer anyway, so they cost one allocation either
// way; smaller frames keep the allocation-free reused buffer.
const OwnedFrameThreshold = MaxRetainedBuffer

// FrameHeadroom is the number of unused bytes a FrameReader allocates in
// front of an owned frame, so that the layers a payload is handed to can
// put their own header in front of it without copying it (the ledger's
// 36-byte BookKeeper entry header).
const FrameHeadroom = 64

// FrameReader reads and decodes frames from a stream, reusing its buffer
// (up to MaxRetainedBuffer) and BaseCommand. Frames above
// OwnedFrameThreshold are read into a fresh buffer of their own instead
// (see Frame.Owned). It is not safe for concurrent use.
type FrameReader struct {
	r     io.Reader
	max   int
	owned int // OwnedFrameThreshold; tests lower it
	buf   []byte
	dec   Decoder
}

// NewFrameReader returns a FrameReader over r (wrap sockets in a
// bufio.Reader). maxFrameSize bounds totalSize; <= 0 means
// DefaultMaxFrameSize.
func NewFrameReader(r io.Reader, maxFrameSize int) *FrameReader {
	if maxFrameSize <= 0 {
		maxFrameSize = DefaultMaxFrameSize
	}
	return &FrameReader{r: r, max: maxFrameSize, owned: OwnedFrameThreshold, dec: Decoder{MaxFrameSize: maxFrameSize}}
}

// SetMaxFrameSize changes the frame size limit for later reads.
func (fr *FrameReader) SetMaxFrameSize(n int) {
	if n <= 0 {
		n = DefaultMaxFrameSize
	}
	fr.max, fr.dec.MaxFrameSize = n, n
}

// Next reads and decodes the next frame. The result is valid until the next
// call (see Frame), except Raw and Payload of an Owned frame. Errors are
// those of ReadFrame and Decoder.Decode; after any error other than io.EOF
// the stream is unusable.
func (fr *FrameReader) Next() (Frame, error) {
	if cap(fr.buf) > MaxRetainedBuffer {
		fr.buf = nil
	}
	buf, n, err := readFrameSize(fr.r, fr.max, fr.buf)
	fr.buf = buf[:0]
	if err != nil {
		return Frame{}, err
	}
	if n > fr.owned {
		return fr.nextOwned(buf[:4], n)
	}
	buf = buf[:cap(buf)]
	if len(buf) < n {
		nb := make([]byte, n)
		copy(nb, buf[:4])
		buf = nb
	}
	buf = buf[:n]
	if err := readFrameBody(fr.r, buf[4:]); err != nil {
		return Frame{}, err
	}
	fr.buf = buf[:0]
	_, f, err := fr.dec.Decode(buf)
	return f, err
}

// nextOwned reads the rest of an n-byte frame whose totalSize is hdr into
// a buffer of its own, FrameHeadroom bytes in, and decodes it.
//
// The buffer is allocated as the bytes arrive (readGrowing), not at the
// announced size.
func (fr *FrameReader) nextOwned(hdr []byte, n int) (Frame, error) {
	buf := make([]byte, FrameHeadroom+4, min(FrameHeadroom+n, FrameHeadroom+FrameChunk))
	copy(buf[FrameHeadroom:], hdr)
	buf, err := readGrowing(fr.r, buf, FrameHeadroom+n)
	if err != nil {
		return Frame{}, err
	}
	raw := buf[FrameHeadroom:]
	_, f, err := fr.dec.Decode(raw)
	if err != nil {
		return Frame{}, err
	}
	f.Owned, f.buf = true, buf
	return f, nil
}
