package pulsarproto

import (
	"encoding/binary"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/magnetar-mq/magnetar/internal/crc32c"
)

// Payload section magics.
const (
	// MagicCRC32C starts the checksummed section:
	// [0x0e01][crc32c u32][metadataSize u32][MessageMetadata][payload].
	MagicCRC32C uint16 = 0x0e01
	// MagicBrokerEntryMetadata starts the optional broker block in front of
	// it: [0x0e02][size u32][BrokerEntryMetadata].
	MagicBrokerEntryMetadata uint16 = 0x0e02
)

// Checksum returns the CRC32C (Castagnoli) of b, the checksum Pulsar uses.
func Checksum(b []byte) uint32 { return crc32c.Checksum(b) }

// Entry is the parsed layout of a payload section (an "entry": what the
// broker stores and passes through). All slices alias the parsed bytes.
type Entry struct {
	// BrokerEntryMetadata is the serialized BrokerEntryMetadata of a 0x0e02
	// block, or nil when there is none.
	BrokerEntryMetadata []byte
	// Body is the 0x0e01 section, from the magic to the end: the entry
	// without any broker entry metadata block, which is what a client that
	// did not announce supports_broker_entry_metadata must receive.
	Body []byte
	// Checksum is the CRC32C stored after the magic.
	Checksum uint32
	// Metadata is the serialized MessageMetadata (see ParseMetadata).
	Metadata []byte
	// Payload is the message payload (a batch body when the metadata has
	// num_messages_in_batch), possibly compressed.
	Payload []byte
}

// ParseEntry splits a payload section into its parts without checking the
// checksum. Errors: ErrBadMagic when the section does not start with a magic
// (0x0e01, or 0x0e02 followed by 0x0e01), ErrTruncated when a size field
// points past the end.
func ParseEntry(b []byte) (Entry, error) {
	var e Entry
	if len(b) < 2 {
		return e, ErrTruncated
	}
	if binary.BigEndian.Uint16(b) == MagicBrokerEntryMetadata {
		if len(b) < 6 {
			return e, ErrTruncated
		}
		n := binary.BigEndian.Uint32(b[2:])
		if uint64(n) > uint64(len(b)-6) {
			return e, fmt.Errorf("%w: broker entry metadata size %d", ErrTruncated, n)
		}
		e.BrokerEntryMetadata = b[6 : 6+int(n)]
		b = b[6+int(n):]
		if len(b) < 2 {
			return e, ErrTruncated
		}
	}
	if binary.BigEndian.Uint16(b) != MagicCRC32C {
		return e, fmt.Errorf("%w: %#04x", ErrBadMagic, binary.BigEndian.Uint16(b))
	}
	if len(b) < 10 {
		return e, ErrTruncated
	}
	e.Body = b
	e.Checksum = binary.BigEndian.Uint32(b[2:])
	n := binary.BigEndian.Uint32(b[6:])
	if uint64(n) > uint64(len(b)-10) {
		return e, fmt.Errorf("%w: metadata size %d", ErrTruncated, n)
	}
	e.Metadata = b[10 : 10+int(n)]
	e.Payload = b[10+int(n):]
	return e, nil
}

// VerifyChecksum checks the CRC32C over metadataSize, metadata and payload.
// It returns ErrChecksum on a mismatch.
func (e *Entry) VerifyChecksum() error {
	if len(e.Body) < 6 {
		return ErrTruncated
	}
	if got := Checksum(e.Body[6:]); got != e.Checksum {
		return fmt.Errorf("%w: stored %#08x, computed %#08x", ErrChecksum, e.Checksum, got)
	}
	return nil
}

// VerifyEntry is ParseEntry followed by VerifyChecksum.
func VerifyEntry(b []byte) (Entry, error) {
	e, err := ParseEntry(b)
	if err != nil {
		return e, err
	}
	return e, e.VerifyChecksum()
}

// AppendEntry appends a checksummed payload section built from serialized
// MessageMetadata and payload bytes to dst:
// [0x0e01][crc32c][len(metadata)][metadata][payload].
func AppendEntry(dst, metadata, payload []byte) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint16(dst, MagicCRC32C)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(metadata)))
	dst = append(dst, metadata...)
	dst = append(dst, payload...)
	binary.BigEndian.PutUint32(dst[start+2:], Checksum(dst[start+6:]))
	return dst
}

// AppendBrokerEntryMetadata appends a 0x0e02 block holding broker_timestamp
// (ms) and index to dst. Append the entry's Body after it to build the
// entry a client with supports_broker_entry_metadata receives. index is the
// index of the last message in the entry.
func AppendBrokerEntryMetadata(dst []byte, brokerTimestamp, index uint64) []byte {
	size := sizeVarintField(1, brokerTimestamp) + sizeVarintField(2, index)
	dst = binary.BigEndian.AppendUint16(dst, MagicBrokerEntryMetadata)
	dst = binary.BigEndian.AppendUint32(dst, uint32(size))
	dst = appendVarintField(dst, 1, brokerTimestamp)
	return appendVarintField(dst, 2, index)
}

// StripBrokerEntryMetadata returns entry without a leading 0x0e02 block, or
// entry itself when it has none (or is too short to hold one).
func StripBrokerEntryMetadata(entry []byte) []byte {
	if len(entry) < 6 || binary.BigEndian.Uint16(entry) != MagicBrokerEntryMetadata {
		return entry
	}
	n := binary.BigEndian.Uint32(entry[2:])
	if uint64(n) > uint64(len(entry)-6) {
		return entry
	}
	return entry[6+int(n):]
}

// BrokerEntryMeta holds the decoded fields of a BrokerEntryMetadata.
type BrokerEntryMeta struct {
	BrokerTimestamp    uint64
	Index              uint64
	HasBrokerTimestamp bool
	HasIndex           bool
}

// ParseBrokerEntryMetadata decodes serialized BrokerEntryMetadata (as in
// Entry.BrokerEntryMetadata) without allocating.
func ParseBrokerEntryMetadata(b []byte) (BrokerEntryMeta, error) {
	var m BrokerEntryMeta
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return BrokerEntryMeta{}, fmt.Errorf("%w: %w", ErrMalformed, protowire.ParseError(n))
		}
		b = b[n:]
		if wt == protowire.VarintType && (num == 1 || num == 2) {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return BrokerEntryMeta{}, fmt.Errorf("%w: %w", ErrMalformed, protowire.ParseError(n))
			}
			b = b[n:]
			if num == 1 {
				m.BrokerTimestamp, m.HasBrokerTimestamp = v, true
			} else {
				m.Index, m.HasIndex = v, true
			}
			continue
		}
		n = protowire.ConsumeFieldValue(num, wt, b)
		if n < 0 {
			return BrokerEntryMeta{}, fmt.Errorf("%w: %w", ErrMalformed, protowire.ParseError(n))
		}
		b = b[n:]
	}
	return m, nil
}
