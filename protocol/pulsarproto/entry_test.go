package pulsarproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

func TestEntryCorruption(t *testing.T) {
	md := testMetadata(t, 0)
	payload := testPayload(200)
	plain := func() []byte { return AppendEntry(nil, md, payload) }
	withBEM := func() []byte { return append(AppendBrokerEntryMetadata(nil, 1234, 99), plain()...) }
	flip := func(off int) func([]byte) []byte {
		return func(b []byte) []byte {
			if off < 0 {
				off += len(b)
			}
			b[off] ^= 0x40
			return b
		}
	}
	cases := []struct {
		name      string
		entry     func() []byte
		corrupt   func([]byte) []byte
		parseErr  error
		verifyErr error
	}{
		{"ok", plain, nil, nil, nil},
		{"bem/ok", withBEM, nil, nil, nil},
		{"empty", plain, func(b []byte) []byte { return b[:0] }, ErrTruncated, ErrTruncated},
		{"one-byte", plain, func(b []byte) []byte { return b[:1] }, ErrTruncated, ErrTruncated},
		{"bad-magic", plain, flip(1), ErrBadMagic, ErrBadMagic},
		{"no-magic", plain, func(b []byte) []byte { return b[6:] }, ErrBadMagic, ErrBadMagic},
		{"truncate-crc", plain, func(b []byte) []byte { return b[:5] }, ErrTruncated, ErrTruncated},
		{"truncate-metasize", plain, func(b []byte) []byte { return b[:9] }, ErrTruncated, ErrTruncated},
		{"truncate-metadata", plain, func(b []byte) []byte { return b[:10+len(md)-1] }, ErrTruncated, ErrTruncated},
		{"metasize-huge", plain, func(b []byte) []byte { binary.BigEndian.PutUint32(b[6:], 1<<31); return b }, ErrTruncated, ErrTruncated},
		{"bad-crc-field", plain, flip(3), nil, ErrChecksum},
		{"bad-crc-metadata", plain, flip(12), nil, ErrChecksum},
		{"bad-crc-payload", plain, flip(-1), nil, ErrChecksum},
		{"truncate-payload", plain, func(b []byte) []byte { return b[:len(b)-1] }, nil, ErrChecksum},
		{"bem/truncate-block", withBEM, func(b []byte) []byte { return b[:5] }, ErrTruncated, ErrTruncated},
		{"bem/size-huge", withBEM, func(b []byte) []byte { binary.BigEndian.PutUint32(b[2:], 1<<30); return b }, ErrTruncated, ErrTruncated},
		{"bem/no-body", withBEM, func(b []byte) []byte { return b[:6+int(binary.BigEndian.Uint32(b[2:]))] }, ErrTruncated, ErrTruncated},
		{"bem/bad-inner-magic", withBEM, func(b []byte) []byte { b[6+int(binary.BigEndian.Uint32(b[2:]))] = 0x0f; return b }, ErrBadMagic, ErrBadMagic},
		{"bem/bad-crc", withBEM, flip(-3), nil, ErrChecksum},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.entry()
			if c.corrupt != nil {
				b = c.corrupt(b)
			}
			e, err := ParseEntry(b)
			if !errors.Is(err, c.parseErr) || (c.parseErr == nil) != (err == nil) {
				t.Fatalf("ParseEntry err = %v, want %v", err, c.parseErr)
			}
			_, err = VerifyEntry(b)
			if !errors.Is(err, c.verifyErr) || (c.verifyErr == nil) != (err == nil) {
				t.Fatalf("VerifyEntry err = %v, want %v", err, c.verifyErr)
			}
			if c.parseErr != nil || c.corrupt != nil {
				return
			}
			if !bytes.Equal(e.Metadata, md) || !bytes.Equal(e.Payload, payload) || !bytes.Equal(e.Body, plain()) {
				t.Fatalf("ParseEntry parts differ: %+v", e)
			}
			if e.Checksum != Checksum(e.Body[6:]) {
				t.Fatalf("Checksum = %#x, want %#x", e.Checksum, Checksum(e.Body[6:]))
			}
			if !bytes.Equal(StripBrokerEntryMetadata(b), plain()) {
				t.Fatalf("StripBrokerEntryMetadata did not yield the 0x0e01 section")
			}
		})
	}
}

func TestChecksumKnownValue(t *testing.T) {
	// CRC-32C check value from the Castagnoli polynomial's catalogue entry.
	if got := Checksum([]byte("123456789")); got != 0xe3069283 {
		t.Fatalf("Checksum(123456789) = %#x, want 0xe3069283", got)
	}
}

func TestBrokerEntryMetadata(t *testing.T) {
	for _, v := range [][2]uint64{{0, 0}, {1_700_000_000_000, 41}, {^uint64(0), ^uint64(0)}} {
		block := AppendBrokerEntryMetadata(nil, v[0], v[1])
		e, err := ParseEntry(append(block, AppendEntry(nil, testMetadata(t, 0), nil)...))
		if err != nil {
			t.Fatal(err)
		}
		var want pb.BrokerEntryMetadata
		if err := proto.Unmarshal(e.BrokerEntryMetadata, &want); err != nil {
			t.Fatal(err)
		}
		got, err := ParseBrokerEntryMetadata(e.BrokerEntryMetadata)
		if err != nil {
			t.Fatal(err)
		}
		if got.BrokerTimestamp != v[0] || got.Index != v[1] || !got.HasIndex || !got.HasBrokerTimestamp ||
			want.GetBrokerTimestamp() != v[0] || want.GetIndex() != v[1] {
			t.Fatalf("broker entry metadata %v: got %+v, generated %v", v, got, &want)
		}
		wantBytes, _ := proto.Marshal(&pb.BrokerEntryMetadata{BrokerTimestamp: proto.Uint64(v[0]), Index: proto.Uint64(v[1])})
		if !bytes.Equal(e.BrokerEntryMetadata, wantBytes) {
			t.Fatalf("AppendBrokerEntryMetadata bytes %x, generated %x", e.BrokerEntryMetadata, wantBytes)
		}
	}
	if _, err := ParseBrokerEntryMetadata([]byte{0x08}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("ParseBrokerEntryMetadata(truncated) err = %v, want ErrMalformed", err)
	}
	// Unknown fields are skipped.
	m, err := ParseBrokerEntryMetadata([]byte{0x18, 0x05, 0x10, 0x07})
	if err != nil || m.Index != 7 || m.HasBrokerTimestamp {
		t.Fatalf("ParseBrokerEntryMetadata(unknown field) = %+v, %v", m, err)
	}
	// Short or absent blocks are left alone.
	for _, b := range [][]byte{nil, {0x0e, 0x02}, {0x0e, 0x02, 0, 0, 0, 9, 1}, {0x0e, 0x01, 0, 0, 0, 0}} {
		if got := StripBrokerEntryMetadata(b); !bytes.Equal(got, b) {
			t.Errorf("StripBrokerEntryMetadata(%x) = %x, want input", b, got)
		}
	}
}
