package pulsarproto

import (
	"encoding/binary"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// Metadata holds the MessageMetadata fields the broker looks at, decoded
// without allocation by ParseMetadata. Byte-slice fields alias the parsed
// bytes; they are nil when the field is absent and non-nil (possibly empty)
// when present. For everything else (properties, encryption keys,
// replicate_to) unmarshal the bytes into a pb.MessageMetadata.
type Metadata struct {
	ProducerName []byte
	SequenceID   uint64
	PublishTime  uint64 // ms
	PartitionKey []byte
	OrderingKey  []byte
	Compression  pb.CompressionType
	// UncompressedSize is the payload size before compression (0: unset).
	UncompressedSize uint32
	// NumMessagesInBatch is 1 when the field is absent. Batch reports its
	// presence: a present field means the payload is in batch format, even
	// when it holds one message.
	NumMessagesInBatch int32
	Batch              bool
	EventTime          uint64
	// DeliverAtTime (absolute ms) is meaningful when HasDeliverAtTime.
	DeliverAtTime    int64
	HasDeliverAtTime bool
	SchemaVersion    []byte
	// MarkerType is meaningful when HasMarkerType (replication/txn markers).
	MarkerType        int32
	HasMarkerType     bool
	HighestSequenceID uint64
	TxnidLeastBits    uint64
	TxnidMostBits     uint64
	// HasTxnid: txnid_least_bits or txnid_most_bits is present (the
	// entry was produced in a transaction; (0,0) is a valid id).
	HasTxnid         bool
	NullValue        bool
	NullPartitionKey bool
	// Encrypted is true when encryption keys or an algorithm are present;
	// the payload is then opaque even after decompression.
	Encrypted bool
	// EncryptionKeys counts the encryption_keys entries (what Pulsar's
	// encryption-required check counts; an algorithm alone is not enough).
	EncryptionKeys int
	// Chunking fields; NumChunksFromMsg > 0 marks a chunk.
	UUID              []byte
	NumChunksFromMsg  int32
	TotalChunkMsgSize int32
	ChunkID           int32
}

// NumMessages returns the number of messages in the entry: the batch size
// for batches (at least 1), otherwise 1. Use it for permit accounting.
func (m *Metadata) NumMessages() int {
	if m.Batch && m.NumMessagesInBatch > 1 {
		return int(m.NumMessagesInBatch)
	}
	return 1
}

// RoutingKey returns the key used for Key_Shared routing: ordering_key if
// present, else partition_key, else nil.
func (m *Metadata) RoutingKey() []byte {
	if m.OrderingKey != nil {
		return m.OrderingKey
	}
	return m.PartitionKey
}

// ParseMetadata decodes serialized MessageMetadata b into *m (which it
// resets first) without allocating. Wire semantics follow protobuf: the last
// occurrence of a scalar wins, a field with an unexpected wire type is
// ignored like an unknown field, and an unknown compression value is kept as
// is (as the generated Go code does), so check it before decompressing. It
// returns ErrMalformed for undecodable bytes (including inside properties
// and encryption keys) or when a required field (producer_name,
// sequence_id, publish_time) is missing.
func ParseMetadata(b []byte, m *Metadata) error {
	*m = Metadata{NumMessagesInBatch: 1}
	var haveName, haveSeq, havePub bool
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: metadata: %w", ErrMalformed, protowire.ParseError(n))
		}
		b = b[n:]
		var v uint64
		var bs []byte
		switch wt {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			bs, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, wt, b)
		}
		if n < 0 {
			return fmt.Errorf("%w: metadata field %d: %w", ErrMalformed, num, protowire.ParseError(n))
		}
		b = b[n:]
		if wt == protowire.BytesType {
			switch num {
			case 1:
				m.ProducerName, haveName = bs, true
			case 4:
				if !validMessage(bs, 0) {
					return fmt.Errorf("%w: metadata property", ErrMalformed)
				}
			case 6:
				m.PartitionKey = bs
			case 13:
				// EncryptionKeys: its field 3 holds KeyValue messages.
				if !validMessage(bs, 3) {
					return fmt.Errorf("%w: metadata encryption key", ErrMalformed)
				}
				m.Encrypted = true
				m.EncryptionKeys++
			case 14:
				m.Encrypted = true
			case 16:
				m.SchemaVersion = bs
			case 18:
				m.OrderingKey = bs
			case 26:
				m.UUID = bs
			}
			continue
		}
		if wt != protowire.VarintType {
			continue
		}
		switch num {
		case 2:
			m.SequenceID, haveSeq = v, true
		case 3:
			m.PublishTime, havePub = v, true
		case 8:
			m.Compression = pb.CompressionType(int32(v))
		case 9:
			m.UncompressedSize = uint32(v)
		case 11:
			m.NumMessagesInBatch, m.Batch = int32(v), true
		case 12:
			m.EventTime = v
		case 19:
			m.DeliverAtTime, m.HasDeliverAtTime = int64(v), true
		case 20:
			m.MarkerType, m.HasMarkerType = int32(v), true
		case 22:
			m.TxnidLeastBits, m.HasTxnid = v, true
		case 23:
			m.TxnidMostBits, m.HasTxnid = v, true
		case 24:
			m.HighestSequenceID = v
		case 25:
			m.NullValue = v != 0
		case 27:
			m.NumChunksFromMsg = int32(v)
		case 28:
			m.TotalChunkMsgSize = int32(v)
		case 29:
			m.ChunkID = int32(v)
		case 30:
			m.NullPartitionKey = v != 0
		}
	}
	if !haveName || !haveSeq || !havePub {
		return fmt.Errorf("%w: metadata lacks a required field", ErrMalformed)
	}
	return nil
}

// validMessage reports whether b is well-formed protobuf wire data. When
// nested is non-zero, bytes fields with that number are checked as
// messages too (one level). It checks structure only, not required fields,
// matching what the generated code rejects in KeyValue and EncryptionKeys.
func validMessage(b []byte, nested protowire.Number) bool {
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if nested != 0 && num == nested && wt == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 || !validMessage(v, 0) {
				return false
			}
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, wt, b)
		if n < 0 {
			return false
		}
		b = b[n:]
	}
	return true
}

// SingleMetadata holds the decoded fields of one SingleMessageMetadata (the
// header of a message inside a batch). Byte slices alias the batch; nil
// means absent.
type SingleMetadata struct {
	// Raw is the serialized SingleMessageMetadata; unmarshal it into a
	// pb.SingleMessageMetadata for properties.
	Raw             []byte
	PartitionKey    []byte
	OrderingKey     []byte
	PayloadSize     int32
	CompactedOut    bool
	EventTime       uint64
	PartitionKeyB64 bool
	// SequenceID is meaningful when HasSequenceID.
	SequenceID       uint64
	HasSequenceID    bool
	NullValue        bool
	NullPartitionKey bool
}

// RoutingKey returns ordering_key if present, else partition_key, else nil.
func (m *SingleMetadata) RoutingKey() []byte {
	if m.OrderingKey != nil {
		return m.OrderingKey
	}
	return m.PartitionKey
}

// NextSingleMessage decodes the record at the start of an uncompressed
// batch body, [smmSize u32][SingleMessageMetadata][payload], into *m and
// returns its payload and the rest of the batch. Iterate while len(rest) >
// 0, or num_messages_in_batch times. Errors: ErrTruncated when a size points
// past the end, ErrMalformed for undecodable metadata or a negative or
// missing payload_size.
func NextSingleMessage(batch []byte, m *SingleMetadata) (rest, payload []byte, err error) {
	*m = SingleMetadata{}
	if len(batch) < 4 {
		return batch, nil, ErrTruncated
	}
	n := binary.BigEndian.Uint32(batch)
	if uint64(n) > uint64(len(batch)-4) {
		return batch, nil, fmt.Errorf("%w: single message metadata size %d", ErrTruncated, n)
	}
	raw := batch[4 : 4+int(n)]
	if err := parseSingle(raw, m); err != nil {
		return batch, nil, err
	}
	body := batch[4+int(n):]
	if m.PayloadSize < 0 {
		return batch, nil, fmt.Errorf("%w: negative payload size %d", ErrMalformed, m.PayloadSize)
	}
	if int64(m.PayloadSize) > int64(len(body)) {
		return batch, nil, fmt.Errorf("%w: payload size %d", ErrTruncated, m.PayloadSize)
	}
	return body[m.PayloadSize:], body[:m.PayloadSize], nil
}

func parseSingle(b []byte, m *SingleMetadata) error {
	m.Raw = b
	havePayloadSize := false
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: single metadata: %w", ErrMalformed, protowire.ParseError(n))
		}
		b = b[n:]
		var v uint64
		var bs []byte
		switch wt {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			bs, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, wt, b)
		}
		if n < 0 {
			return fmt.Errorf("%w: single metadata field %d: %w", ErrMalformed, num, protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case wt == protowire.BytesType && num == 1:
			if !validMessage(bs, 0) {
				return fmt.Errorf("%w: single metadata property", ErrMalformed)
			}
		case wt == protowire.BytesType && num == 2:
			m.PartitionKey = bs
		case wt == protowire.BytesType && num == 7:
			m.OrderingKey = bs
		case wt != protowire.VarintType:
		case num == 3:
			m.PayloadSize, havePayloadSize = int32(v), true
		case num == 4:
			m.CompactedOut = v != 0
		case num == 5:
			m.EventTime = v
		case num == 6:
			m.PartitionKeyB64 = v != 0
		case num == 8:
			m.SequenceID, m.HasSequenceID = v, true
		case num == 9:
			m.NullValue = v != 0
		case num == 10:
			m.NullPartitionKey = v != 0
		}
	}
	if !havePayloadSize {
		return fmt.Errorf("%w: single metadata lacks payload_size", ErrMalformed)
	}
	return nil
}

// AppendSingleMessage appends one batch record, [len(smm)][smm][payload],
// to dst. smm is a serialized SingleMessageMetadata whose payload_size must
// equal len(payload).
func AppendSingleMessage(dst, smm, payload []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(smm)))
	dst = append(dst, smm...)
	return append(dst, payload...)
}
