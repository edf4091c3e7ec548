package pulsarproto

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// goldenSeeds returns the golden frames, for fuzz seeds.
func goldenSeeds(f *testing.F) [][]byte {
	names, _ := filepath.Glob(filepath.Join("testdata", "*.golden"))
	var out [][]byte
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// chunkReader returns at most n bytes per Read.
type chunkReader struct {
	b []byte
	n int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n, len(r.b))
	copy(p, r.b[:k])
	r.b = r.b[k:]
	return k, nil
}

type decoded struct {
	cmd     *pb.BaseCommand
	payload []byte
	err     error
}

// decodeAll decodes frames from a flat buffer until the first error.
func decodeAll(b []byte, limit int) []decoded {
	d := Decoder{MaxFrameSize: limit}
	var out []decoded
	for len(b) > 0 {
		rest, f, err := d.Decode(b)
		if err != nil {
			return append(out, decoded{err: err})
		}
		out = append(out, decoded{cmd: proto.Clone(f.Cmd).(*pb.BaseCommand), payload: bytes.Clone(f.Payload)})
		b = rest
	}
	return out
}

// FuzzReadFrame checks that arbitrary input never panics, that the stream
// reader agrees with the slice decoder however the input is chunked, that
// the SEND fast path agrees with the generated decoder, and that every
// decoded frame re-encodes to something that decodes the same.
func FuzzReadFrame(f *testing.F) {
	for _, g := range goldenSeeds(f) {
		f.Add(g, uint8(1))
		f.Add(g, uint8(7))
		f.Add(append(append([]byte(nil), g...), g...), uint8(64))
		f.Add(g[:len(g)/2], uint8(3))
	}
	send := AppendSend(nil, &SendHeader{ProducerID: 1, SequenceID: 2, NumMessages: 3}, AppendEntry(nil, []byte{0x0a, 0x01, 'p', 0x10, 0x01, 0x18, 0x01}, []byte("x")))
	f.Add(send, uint8(5))
	ping, _ := AppendCommand(nil, &pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}})
	f.Add(ping, uint8(2))
	const limit = 1 << 16
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		want := decodeAll(data, limit)
		fr := NewFrameReader(&chunkReader{b: data, n: int(chunk%64) + 1}, limit)
		if chunk&0x40 != 0 {
			fr.owned = 16 // nearly every frame takes the owned-buffer path
		}
		// Payloads of owned frames, kept across later reads as a caller
		// would; they must not change.
		type keptPayload struct{ got, want []byte }
		var kept []keptPayload
		defer func() {
			for j, k := range kept {
				if !bytes.Equal(k.got, k.want) {
					t.Fatalf("owned payload %d changed after later reads", j)
				}
			}
		}()
		for i := 0; ; i++ {
			fm, err := fr.Next()
			if err == io.EOF {
				if i != len(want) {
					t.Fatalf("FrameReader stopped after %d frames, Decoder gave %d results", i, len(want))
				}
				return
			}
			if i >= len(want) {
				t.Fatalf("FrameReader frame %d beyond Decoder's %d results", i, len(want))
			}
			w := want[i]
			if (err != nil) != (w.err != nil) {
				t.Fatalf("frame %d: FrameReader err %v, Decoder err %v", i, err, w.err)
			}
			if err != nil {
				for _, e := range []error{ErrTruncated, ErrFrameTooLarge, ErrBadCommandSize, ErrMalformed} {
					if errors.Is(err, e) != errors.Is(w.err, e) {
						t.Fatalf("frame %d: FrameReader err %v, Decoder err %v", i, err, w.err)
					}
				}
				return
			}
			if !proto.Equal(fm.Cmd, w.cmd) || !bytes.Equal(fm.Payload, w.payload) || fm.Type != w.cmd.GetType() {
				t.Fatalf("frame %d: FrameReader %v, Decoder %v", i, fm.Cmd, w.cmd)
			}
			if fm.Owned != (len(fm.Raw) > fr.owned) {
				t.Fatalf("frame %d: %d bytes, Owned %v with threshold %d", i, len(fm.Raw), fm.Owned, fr.owned)
			}
			if buf, off, ok := fm.PayloadBuffer(); ok != (fm.Owned && fm.Payload != nil) {
				t.Fatalf("frame %d: PayloadBuffer ok %v, Owned %v, payload %d bytes", i, ok, fm.Owned, len(fm.Payload))
			} else if ok {
				if off < FrameHeadroom || !bytes.Equal(buf[off:], w.payload) {
					t.Fatalf("frame %d: PayloadBuffer offset %d does not hold the payload", i, off)
				}
				kept = append(kept, keptPayload{buf[off:], w.payload})
			}
			if fm.Type == pb.BaseCommand_SEND {
				// The fast path must agree with the generated code.
				var g pb.BaseCommand
				raw := frameCommandBytes(t, data, i)
				if err := proto.Unmarshal(raw, &g); err != nil || !proto.Equal(&g, fm.Cmd) {
					t.Fatalf("frame %d: SEND decoded as %v, generated code %v (%v)", i, fm.Cmd, &g, err)
				}
			}
			re, err := AppendPayloadCommand(nil, fm.Cmd, fm.Payload)
			if err != nil {
				t.Fatalf("frame %d: re-encoding a decoded command: %v", i, err)
			}
			var d2 Decoder
			rest, f2, err := d2.Decode(re)
			if err != nil || len(rest) != 0 || !proto.Equal(f2.Cmd, w.cmd) || !bytes.Equal(f2.Payload, w.payload) {
				t.Fatalf("frame %d: decode(encode(x)) = %v, %v; want %v", i, f2.Cmd, err, w.cmd)
			}
			if fm.Payload != nil {
				// Entry helpers must not panic on arbitrary payloads.
				if e, err := VerifyEntry(fm.Payload); err == nil || errors.Is(err, ErrChecksum) {
					var md Metadata
					_ = ParseMetadata(e.Metadata, &md)
					_, _ = ParseBrokerEntryMetadata(e.BrokerEntryMetadata)
					walkBatch(e.Payload)
				}
				_ = StripBrokerEntryMetadata(fm.Payload)
			}
			if buf, off, ok := fm.PayloadBuffer(); ok {
				// A taker of the buffer may overwrite what precedes the
				// payload (the ledger writes its entry header there).
				for j := range buf[:off] {
					buf[j] = 0xee
				}
			}
		}
	})
}

// frameCommandBytes returns the command bytes of frame i in data.
func frameCommandBytes(t *testing.T, data []byte, i int) []byte {
	for ; ; i-- {
		total := int(uint32(data[0])<<24 | uint32(data[1])<<16 | uint32(data[2])<<8 | uint32(data[3]))
		if i == 0 {
			cmdSize := int(uint32(data[4])<<24 | uint32(data[5])<<16 | uint32(data[6])<<8 | uint32(data[7]))
			return data[8 : 8+cmdSize]
		}
		data = data[4+total:]
	}
}

func walkBatch(b []byte) {
	var sm SingleMetadata
	for len(b) > 0 {
		rest, _, err := NextSingleMessage(b, &sm)
		if err != nil {
			return
		}
		b = rest
	}
}

// FuzzParseMetadata checks ParseMetadata against the generated
// unmarshaller on arbitrary bytes, and that entry and batch parsing never
// panic.
func FuzzParseMetadata(f *testing.F) {
	for _, g := range goldenSeeds(f) {
		var d Decoder
		if _, fr, err := d.Decode(g); err == nil && fr.Payload != nil {
			if e, err := ParseEntry(fr.Payload); err == nil {
				f.Add(e.Metadata)
				f.Add(e.Payload)
			}
			f.Add(fr.Payload)
		}
	}
	full, _ := proto.Marshal(fullMetadata())
	f.Add(full)
	f.Fuzz(func(t *testing.T, b []byte) {
		checkMetadataAgainstGenerated(t, b)
		if e, err := ParseEntry(b); err == nil {
			_ = e.VerifyChecksum()
		}
		_, _ = ParseBrokerEntryMetadata(b)
		walkBatch(b)
		var sm SingleMetadata
		if _, _, err := NextSingleMessage(b, &sm); err == nil {
			var g pb.SingleMessageMetadata
			if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(sm.Raw, &g); err != nil {
				t.Fatalf("NextSingleMessage accepted %x, generated code fails: %v", sm.Raw, err)
			}
			if g.GetPayloadSize() != sm.PayloadSize || string(g.GetOrderingKey()) != string(sm.OrderingKey) || g.GetPartitionKey() != string(sm.PartitionKey) {
				t.Fatalf("NextSingleMessage(%x) = %+v, generated %v", b, sm, &g)
			}
		}
	})
}
