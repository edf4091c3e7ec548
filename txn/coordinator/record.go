package coordinator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Op is the kind of a log record: the state transition it records.
type Op byte

// The record kinds (see docs/transactions.md, "The transaction log").
const (
	OpOpen             Op = 1 // a new transaction with its timeout
	OpAddPartitions    Op = 2 // topics joined the transaction
	OpAddSubscriptions Op = 3 // subscriptions joined the transaction
	OpCommitting       Op = 4 // END_TXN(COMMIT) accepted; participants not all ended yet
	OpAborting         Op = 5 // END_TXN(ABORT) or a timeout; participants not all ended yet
	OpCommitted        Op = 6 // every participant committed
	OpAborted          Op = 7 // every participant aborted
)

func (o Op) String() string {
	switch o {
	case OpOpen:
		return "OPEN"
	case OpAddPartitions:
		return "ADD_PARTITIONS"
	case OpAddSubscriptions:
		return "ADD_SUBSCRIPTIONS"
	case OpCommitting:
		return "COMMITTING"
	case OpAborting:
		return "ABORTING"
	case OpCommitted:
		return "COMMITTED"
	case OpAborted:
		return "ABORTED"
	}
	return fmt.Sprintf("Op(%d)", byte(o))
}

// recordVersion is the first byte of every record.
const recordVersion = 1

// maxNames bounds the partitions or subscriptions one record carries, and
// maxName the length of one name, so that a corrupt length cannot make
// decoding allocate without bound.
const (
	maxNames = 1 << 20
	maxName  = 1 << 16
)

// ErrBadRecord reports a log record that does not decode.
var ErrBadRecord = errors.New("coordinator: bad log record")

// SubRef names a subscription of a topic.
type SubRef struct {
	Topic        string `json:"topic"`
	Subscription string `json:"subscription"`
}

// Record is one entry of a coordinator's log.
//
// Wire form (integers unsigned LEB128 varints unless said otherwise):
//
//	byte     version (1)
//	byte     op (Op)
//	varint   seq        the transaction's sequence (txnid least bits)
//	varint   maxSeq     the highest sequence handed out when written
//	varint   timeMillis wall-clock time of the transition (Unix ms)
//	OPEN:              varint timeoutMillis
//	ADD_PARTITIONS:    varint n, n × string
//	ADD_SUBSCRIPTIONS: varint n, n × (string topic, string subscription)
//	string = varint length, UTF-8 bytes
//
// The other ops carry nothing more.
type Record struct {
	Op         Op
	Seq        uint64
	MaxSeq     uint64
	TimeMillis int64
	Timeout    uint64 // OPEN: milliseconds
	Partitions []string
	Subs       []SubRef
}

// Encode returns the record's wire form.
func (r *Record) Encode() []byte {
	b := make([]byte, 0, 32)
	b = append(b, recordVersion, byte(r.Op))
	b = binary.AppendUvarint(b, r.Seq)
	b = binary.AppendUvarint(b, r.MaxSeq)
	b = binary.AppendUvarint(b, uint64(max(r.TimeMillis, 0)))
	switch r.Op {
	case OpOpen:
		b = binary.AppendUvarint(b, r.Timeout)
	case OpAddPartitions:
		b = binary.AppendUvarint(b, uint64(len(r.Partitions)))
		for _, p := range r.Partitions {
			b = appendString(b, p)
		}
	case OpAddSubscriptions:
		b = binary.AppendUvarint(b, uint64(len(r.Subs)))
		for _, s := range r.Subs {
			b = appendString(b, s.Topic)
			b = appendString(b, s.Subscription)
		}
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// DecodeRecord parses a record's wire form.
func DecodeRecord(b []byte) (Record, error) {
	d := decoder{b: b}
	var r Record
	if len(b) < 2 {
		return r, fmt.Errorf("%w: %d bytes", ErrBadRecord, len(b))
	}
	if b[0] != recordVersion {
		return r, fmt.Errorf("%w: version %d", ErrBadRecord, b[0])
	}
	r.Op = Op(b[1])
	d.b = b[2:]
	r.Seq = d.uvarint()
	r.MaxSeq = d.uvarint()
	t := d.uvarint()
	if t > math.MaxInt64 {
		d.fail()
	}
	r.TimeMillis = int64(t)
	switch r.Op {
	case OpOpen:
		r.Timeout = d.uvarint()
	case OpAddPartitions:
		n := d.count()
		for range n {
			r.Partitions = append(r.Partitions, d.str())
		}
	case OpAddSubscriptions:
		n := d.count()
		for range n {
			r.Subs = append(r.Subs, SubRef{Topic: d.str(), Subscription: d.str()})
		}
	case OpCommitting, OpAborting, OpCommitted, OpAborted:
	default:
		return r, fmt.Errorf("%w: op %d", ErrBadRecord, byte(r.Op))
	}
	if d.err {
		return r, fmt.Errorf("%w: truncated or malformed %s record", ErrBadRecord, r.Op)
	}
	if len(d.b) != 0 {
		return r, fmt.Errorf("%w: %d trailing bytes after %s", ErrBadRecord, len(d.b), r.Op)
	}
	return r, nil
}

type decoder struct {
	b   []byte
	err bool
}

func (d *decoder) fail() { d.err = true; d.b = nil }

func (d *decoder) uvarint() uint64 {
	if d.err {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) count() int {
	n := d.uvarint()
	if n > maxNames || n > uint64(len(d.b)) {
		d.fail()
		return 0
	}
	return int(n)
}

func (d *decoder) str() string {
	n := d.uvarint()
	if d.err || n > maxName || n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
