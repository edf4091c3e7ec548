package bkproto

import (
	"encoding/binary"
	"fmt"
)

// MaxFrameSize caps a frame's length field (the bytes after the 4-byte
// length), as BookKeeper's nettyMaxFrameSizeBytes does. It also caps the
// entry size.
const MaxFrameSize = 5 << 20

// Op is a request or response type.
type Op uint8

// Operations.
const (
	// OpAdd stores an entry: Ledger, Entry, MasterKey, Payload (the framed
	// entry); FlagRecovery for recovery adds.
	OpAdd Op = iota + 1
	// OpRead reads Entry of Ledger (-1: the last entry stored); with
	// FlagFence (and MasterKey) the bookie fences the ledger first.
	OpRead
	// OpReadLAC returns the explicit LAC (Entry of the response, -1 if
	// none) and the last entry stored (Payload, empty if none).
	OpReadLAC
	// OpWriteLAC stores an explicit LAC: Ledger, Entry (the LAC),
	// MasterKey, Payload (opaque body).
	OpWriteLAC
	// OpLongPoll waits up to TimeoutMs for an entry after the LAC Entry
	// (the previous LAC) of Ledger. The response carries the bookie's LAC
	// in Entry and, when it advanced, entry prevLAC+1 in Payload.
	OpLongPoll
	// OpAuth carries opaque authentication bytes (Payload) for the
	// server's auth hook; the response carries its answer.
	OpAuth
	numOps
)

var opNames = [numOps]string{"", "ADD", "READ", "READ_LAC", "WRITE_LAC", "LONG_POLL", "AUTH"}

func (o Op) String() string {
	if o > 0 && o < numOps {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Flags are request flag bits (v2 values).
type Flags uint8

// Flag bits.
const (
	FlagFence        Flags = 0x1
	FlagRecovery     Flags = 0x2
	FlagHighPriority Flags = 0x4
)

// HighPriority reports whether a request belongs to the high-priority
// class (fence and recovery traffic).
func (f Flags) HighPriority() bool { return f&(FlagFence|FlagRecovery|FlagHighPriority) != 0 }

// Request is one decoded request. Byte slices alias the decoded buffer.
type Request struct {
	Op    Op
	Flags Flags
	ReqID uint64
	// Ledger is the ledger id (unused by OpAuth).
	Ledger int64
	// Entry is the entry id (OpAdd, OpRead), the LAC (OpWriteLAC) or the
	// previous LAC (OpLongPoll).
	Entry int64
	// TimeoutMs is the long-poll timeout (OpLongPoll only).
	TimeoutMs uint32
	// MasterKey accompanies OpAdd, OpWriteLAC and fencing OpRead.
	MasterKey []byte
	// Payload is the entry (OpAdd), LAC body (OpWriteLAC) or auth bytes.
	Payload []byte
}

// Response is one decoded response.
type Response struct {
	Op     Op
	Status Status
	ReqID  uint64
	Ledger int64
	// Entry is the entry id (OpAdd, OpRead) or a LAC (OpReadLAC,
	// OpLongPoll).
	Entry int64
	// Payload is the entry (OpRead, OpLongPoll), the last entry
	// (OpReadLAC) or auth bytes.
	Payload []byte
}

// Frame layout (big endian):
//
//	request:  len u32 | op u8 | flags u8  | reqID u64 | body
//	response: len u32 | op u8 | status u8 | reqID u64 | body
//
// len counts the bytes after itself. Bodies are listed in doc.go.
const headerSize = 4 + 1 + 1 + 8

func hasKey(op Op, f Flags) bool {
	return op == OpAdd || op == OpWriteLAC || (op == OpRead && f&FlagFence != 0)
}

// AppendRequest appends r as one frame to dst. It returns ErrFrameTooLarge
// (and dst unchanged) if the frame would exceed MaxFrameSize, ErrBadRequest
// for an unknown op or a master key over 65535 bytes.
func AppendRequest(dst []byte, r *Request) ([]byte, error) {
	if r.Op == 0 || r.Op >= numOps || len(r.MasterKey) > 0xffff {
		return dst, fmt.Errorf("%w: op %v, master key %d bytes", ErrBadRequest, r.Op, len(r.MasterKey))
	}
	n := headerSize - 4
	switch r.Op {
	case OpAuth:
		n += len(r.Payload)
	case OpReadLAC:
		n += 8
	case OpLongPoll:
		n += 20
	default:
		n += 16
		if hasKey(r.Op, r.Flags) {
			n += 2 + len(r.MasterKey)
		}
		if r.Op == OpAdd || r.Op == OpWriteLAC {
			n += len(r.Payload)
		}
	}
	if n > MaxFrameSize {
		return dst, fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, n)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	dst = append(dst, byte(r.Op), byte(r.Flags))
	dst = binary.BigEndian.AppendUint64(dst, r.ReqID)
	switch r.Op {
	case OpAuth:
		return append(dst, r.Payload...), nil
	case OpReadLAC:
		return binary.BigEndian.AppendUint64(dst, uint64(r.Ledger)), nil
	case OpLongPoll:
		dst = binary.BigEndian.AppendUint64(dst, uint64(r.Ledger))
		dst = binary.BigEndian.AppendUint64(dst, uint64(r.Entry))
		return binary.BigEndian.AppendUint32(dst, r.TimeoutMs), nil
	}
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.Ledger))
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.Entry))
	if hasKey(r.Op, r.Flags) {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(r.MasterKey)))
		dst = append(dst, r.MasterKey...)
	}
	if r.Op == OpAdd || r.Op == OpWriteLAC {
		dst = append(dst, r.Payload...)
	}
	return dst, nil
}

// FrameLen returns the total size (including the length field) of the
// frame at the start of src, ErrShort if src does not yet hold the length
// field, ErrFrameTooLarge or ErrCorrupt for impossible lengths. It does not
// require the whole frame to be present.
func FrameLen(src []byte) (int, error) {
	if len(src) < 4 {
		return 0, ErrShort
	}
	n := binary.BigEndian.Uint32(src)
	if n > MaxFrameSize {
		return 0, fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, n)
	}
	if n < headerSize-4 {
		return 0, fmt.Errorf("%w: frame length %d", ErrCorrupt, n)
	}
	return 4 + int(n), nil
}

// frame splits off the first frame of src: its op, second header byte,
// request id and body.
func frame(src []byte) (rest []byte, op Op, b byte, id uint64, body []byte, err error) {
	n, err := FrameLen(src)
	if err != nil {
		return src, 0, 0, 0, nil, err
	}
	if len(src) < n {
		return src, 0, 0, 0, nil, ErrShort
	}
	op = Op(src[4])
	if op == 0 || op >= numOps {
		return src, 0, 0, 0, nil, fmt.Errorf("%w: op %d", ErrCorrupt, src[4])
	}
	return src[n:], op, src[5], binary.BigEndian.Uint64(src[6:]), src[headerSize:n], nil
}

// DecodeRequest decodes the first frame of src and returns the bytes after
// it. The request's slices alias src. ErrShort asks for more input.
func DecodeRequest(src []byte) (rest []byte, r Request, err error) {
	rest, op, b, id, body, err := frame(src)
	if err != nil {
		return src, r, err
	}
	r = Request{Op: op, Flags: Flags(b), ReqID: id}
	bad := func() ([]byte, Request, error) {
		return src, Request{}, fmt.Errorf("%w: %v request body of %d bytes", ErrCorrupt, op, len(body))
	}
	switch op {
	case OpAuth:
		r.Payload = body
		return rest, r, nil
	case OpReadLAC:
		if len(body) != 8 {
			return bad()
		}
		r.Ledger = int64(binary.BigEndian.Uint64(body))
		return rest, r, nil
	case OpLongPoll:
		if len(body) != 20 {
			return bad()
		}
		r.Ledger = int64(binary.BigEndian.Uint64(body))
		r.Entry = int64(binary.BigEndian.Uint64(body[8:]))
		r.TimeoutMs = binary.BigEndian.Uint32(body[16:])
		return rest, r, nil
	}
	if len(body) < 16 {
		return bad()
	}
	r.Ledger = int64(binary.BigEndian.Uint64(body))
	r.Entry = int64(binary.BigEndian.Uint64(body[8:]))
	body = body[16:]
	if hasKey(op, r.Flags) {
		if len(body) < 2 {
			return bad()
		}
		k := int(binary.BigEndian.Uint16(body))
		if len(body) < 2+k {
			return bad()
		}
		r.MasterKey, body = body[2:2+k], body[2+k:]
	}
	if op == OpAdd || op == OpWriteLAC {
		r.Payload = body
	} else if len(body) != 0 {
		return bad()
	}
	return rest, r, nil
}

// AppendResponse appends r as one frame to dst (ErrFrameTooLarge if the
// payload does not fit).
func AppendResponse(dst []byte, r *Response) ([]byte, error) {
	if r.Op == 0 || r.Op >= numOps {
		return dst, fmt.Errorf("%w: op %v", ErrBadRequest, r.Op)
	}
	n := headerSize - 4 + len(r.Payload)
	if r.Op != OpAuth {
		n += 16
	}
	if n > MaxFrameSize {
		return dst, fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, n)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	dst = append(dst, byte(r.Op), byte(r.Status))
	dst = binary.BigEndian.AppendUint64(dst, r.ReqID)
	if r.Op != OpAuth {
		dst = binary.BigEndian.AppendUint64(dst, uint64(r.Ledger))
		dst = binary.BigEndian.AppendUint64(dst, uint64(r.Entry))
	}
	return append(dst, r.Payload...), nil
}

// DecodeResponse decodes the first frame of src and returns the bytes after
// it. The response's Payload aliases src. ErrShort asks for more input.
func DecodeResponse(src []byte) (rest []byte, r Response, err error) {
	rest, op, b, id, body, err := frame(src)
	if err != nil {
		return src, r, err
	}
	r = Response{Op: op, Status: Status(b), ReqID: id}
	if op == OpAuth {
		r.Payload = body
		return rest, r, nil
	}
	if len(body) < 16 {
		return src, Response{}, fmt.Errorf("%w: %v response body of %d bytes", ErrCorrupt, op, len(body))
	}
	r.Ledger = int64(binary.BigEndian.Uint64(body))
	r.Entry = int64(binary.BigEndian.Uint64(body[8:]))
	if len(body) > 16 {
		r.Payload = body[16:]
	}
	return rest, r, nil
}
