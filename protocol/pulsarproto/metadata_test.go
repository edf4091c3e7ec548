package pulsarproto

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// checkMetadataAgainstGenerated compares ParseMetadata's view of b with the
// generated unmarshaller's.
func checkMetadataAgainstGenerated(t testing.TB, b []byte) {
	t.Helper()
	var m Metadata
	perr := ParseMetadata(b, &m)
	var g pb.MessageMetadata
	gerr := proto.UnmarshalOptions{AllowPartial: true}.Unmarshal(b, &g)
	if gerr == nil {
		// Required fields of the top level only: ParseMetadata does not
		// descend into properties or encryption keys.
		if g.ProducerName == nil || g.SequenceId == nil || g.PublishTime == nil {
			gerr = errors.New("missing required")
		}
	}
	if gerr != nil {
		if perr == nil {
			t.Fatalf("ParseMetadata(%x) succeeded, generated code fails: %v", b, gerr)
		}
		return
	}
	if perr != nil {
		t.Fatalf("ParseMetadata(%x) = %v, generated code succeeds", b, perr)
	}
	eqb := func(name string, got []byte, want *string) {
		if (got == nil) != (want == nil) || (want != nil && string(got) != *want) {
			t.Fatalf("ParseMetadata(%x).%s = %q, want %v", b, name, got, want)
		}
	}
	eqb("ProducerName", m.ProducerName, g.ProducerName)
	eqb("PartitionKey", m.PartitionKey, g.PartitionKey)
	bs := func(x []byte) *string {
		if x == nil {
			return nil
		}
		s := string(x)
		return &s
	}
	eqb("OrderingKey", m.OrderingKey, bs(g.OrderingKey))
	eqb("SchemaVersion", m.SchemaVersion, bs(g.SchemaVersion))
	eqb("UUID", m.UUID, g.Uuid)
	type view struct {
		Seq, Pub, Event, Highest, TL, TM uint64
		Comp                             pb.CompressionType
		Unc                              uint32
		Num                              int32
		Batch                            bool
		Deliver                          int64
		HasDeliver                       bool
		Marker                           int32
		HasMarker, Null, NullPK, Enc     bool
		Chunks, Total, ChunkID           int32
		Keys                             int
	}
	got := view{m.SequenceID, m.PublishTime, m.EventTime, m.HighestSequenceID, m.TxnidLeastBits, m.TxnidMostBits,
		m.Compression, m.UncompressedSize, m.NumMessagesInBatch, m.Batch, m.DeliverAtTime, m.HasDeliverAtTime,
		m.MarkerType, m.HasMarkerType, m.NullValue, m.NullPartitionKey, m.Encrypted,
		m.NumChunksFromMsg, m.TotalChunkMsgSize, m.ChunkID, m.EncryptionKeys}
	want := view{g.GetSequenceId(), g.GetPublishTime(), g.GetEventTime(), g.GetHighestSequenceId(), g.GetTxnidLeastBits(), g.GetTxnidMostBits(),
		g.GetCompression(), g.GetUncompressedSize(), g.GetNumMessagesInBatch(), g.NumMessagesInBatch != nil, g.GetDeliverAtTime(), g.DeliverAtTime != nil,
		g.GetMarkerType(), g.MarkerType != nil, g.GetNullValue(), g.GetNullPartitionKey(), len(g.EncryptionKeys) > 0 || g.EncryptionAlgo != nil,
		g.GetNumChunksFromMsg(), g.GetTotalChunkMsgSize(), g.GetChunkId(), len(g.EncryptionKeys)}
	if got != want {
		t.Fatalf("ParseMetadata(%x) =\n%+v\nwant\n%+v", b, got, want)
	}
}

func fullMetadata() *pb.MessageMetadata {
	s, u := proto.String, proto.Uint64
	return &pb.MessageMetadata{
		ProducerName: s("prod"), SequenceId: u(1 << 40), PublishTime: u(1_700_000_000_000),
		Properties:     []*pb.KeyValue{{Key: s("k"), Value: s("v")}},
		ReplicatedFrom: s("east"), PartitionKey: s("pk"), ReplicateTo: []string{"a", "b"},
		Compression: pb.CompressionType_ZSTD.Enum(), UncompressedSize: proto.Uint32(4096),
		NumMessagesInBatch: proto.Int32(17), EventTime: u(5),
		EncryptionKeys: []*pb.EncryptionKeys{{Key: s("k"), Value: []byte("v")}}, EncryptionAlgo: s("RSA"), EncryptionParam: []byte{1},
		SchemaVersion: []byte{0, 0, 0, 0, 0, 0, 0, 3}, PartitionKeyB64Encoded: proto.Bool(true),
		OrderingKey: []byte("ok"), DeliverAtTime: proto.Int64(-7), MarkerType: proto.Int32(2),
		TxnidLeastBits: u(8), TxnidMostBits: u(9), HighestSequenceId: u(10), NullValue: proto.Bool(true),
		Uuid: s("uuid"), NumChunksFromMsg: proto.Int32(3), TotalChunkMsgSize: proto.Int32(300), ChunkId: proto.Int32(1),
		NullPartitionKey: proto.Bool(true),
	}
}

func TestParseMetadata(t *testing.T) {
	full, _ := proto.Marshal(fullMetadata())
	minimal, _ := proto.Marshal(&pb.MessageMetadata{ProducerName: proto.String(""), SequenceId: proto.Uint64(0), PublishTime: proto.Uint64(0)})
	v := func(num protowire.Number, x uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), x)
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	cases := map[string][]byte{
		"full":               full,
		"minimal":            minimal,
		"batch-of-one":       cat(minimal, v(11, 1)),
		"last-wins":          cat(minimal, v(2, 5), v(2, 6), v(8, 1), v(8, 3)),
		"unknown-compress":   cat(minimal, v(8, 2), v(8, 77)),
		"mistyped-seq":       cat(minimal, protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), []byte("x"))),
		"unknown-fields":     cat(minimal, v(99, 1), protowire.AppendBytes(protowire.AppendTag(nil, 1000, protowire.BytesType), []byte("zz"))),
		"fixed-fields":       cat(minimal, protowire.AppendFixed32(protowire.AppendTag(nil, 50, protowire.Fixed32Type), 1), protowire.AppendFixed64(protowire.AppendTag(nil, 51, protowire.Fixed64Type), 1)),
		"missing-name":       cat(v(2, 1), v(3, 1)),
		"missing-seq":        cat(protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte("p")), v(3, 1)),
		"only-mistyped-name": cat(v(1, 1), v(2, 1), v(3, 1)),
		"truncated":          full[:len(full)-1],
		"bad-varint":         cat(minimal, []byte{0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}),
		"field-zero":         cat(minimal, []byte{0x00, 0x01}),
		"empty":              nil,
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) { checkMetadataAgainstGenerated(t, b) })
	}
	var m Metadata
	if err := ParseMetadata(full, &m); err != nil {
		t.Fatal(err)
	}
	if m.NumMessages() != 17 || string(m.RoutingKey()) != "ok" || !m.Encrypted {
		t.Fatalf("full metadata: NumMessages %d RoutingKey %q Encrypted %v", m.NumMessages(), m.RoutingKey(), m.Encrypted)
	}
	if err := ParseMetadata(cases["missing-name"], &m); !errors.Is(err, ErrMalformed) {
		t.Fatalf("ParseMetadata(missing-name) err = %v, want ErrMalformed", err)
	}
	// ParseMetadata resets its target.
	if err := ParseMetadata(minimal, &m); err != nil || m.NumMessages() != 1 || m.Batch || m.RoutingKey() != nil || m.Encrypted {
		t.Fatalf("ParseMetadata(minimal) after full = %+v, %v", m, err)
	}
}

func buildBatch(t testing.TB, msgs []*pb.SingleMessageMetadata, payloads [][]byte) []byte {
	var b []byte
	for i, smm := range msgs {
		smm.PayloadSize = proto.Int32(int32(len(payloads[i])))
		raw, err := proto.Marshal(smm)
		if err != nil {
			t.Fatal(err)
		}
		b = AppendSingleMessage(b, raw, payloads[i])
	}
	return b
}

func TestBatchIteration(t *testing.T) {
	s := proto.String
	msgs := []*pb.SingleMessageMetadata{
		{PartitionKey: s("a"), Properties: []*pb.KeyValue{{Key: s("x"), Value: s("y")}}, SequenceId: proto.Uint64(10), EventTime: proto.Uint64(3)},
		{OrderingKey: []byte("o"), PartitionKey: s("b"), NullValue: proto.Bool(true)},
		{CompactedOut: proto.Bool(true), NullPartitionKey: proto.Bool(true), PartitionKeyB64Encoded: proto.Bool(true)},
		{PartitionKey: s("")},
	}
	payloads := [][]byte{[]byte("one"), []byte("two!"), nil, testPayload(1000)}
	routing := []*string{s("a"), s("o"), nil, s("")} // ordering_key wins over partition_key
	batch := buildBatch(t, msgs, payloads)
	rest := batch
	var m SingleMetadata
	for i := range msgs {
		var payload []byte
		var err error
		rest, payload, err = NextSingleMessage(rest, &m)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !bytes.Equal(payload, payloads[i]) {
			t.Fatalf("record %d: payload %q, want %q", i, payload, payloads[i])
		}
		var g pb.SingleMessageMetadata
		if err := proto.Unmarshal(m.Raw, &g); err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprintf("%q %v %d %v %d %v %d %v %v %v %v", m.PartitionKey, m.PartitionKey != nil, m.PayloadSize, m.CompactedOut, m.EventTime,
			m.PartitionKeyB64, m.SequenceID, m.HasSequenceID, m.NullValue, m.NullPartitionKey, m.OrderingKey)
		want := fmt.Sprintf("%q %v %d %v %d %v %d %v %v %v %v", g.GetPartitionKey(), g.PartitionKey != nil, g.GetPayloadSize(), g.GetCompactedOut(), g.GetEventTime(),
			g.GetPartitionKeyB64Encoded(), g.GetSequenceId(), g.SequenceId != nil, g.GetNullValue(), g.GetNullPartitionKey(), g.OrderingKey)
		if got != want {
			t.Fatalf("record %d: %s, want %s", i, got, want)
		}
		if rk := m.RoutingKey(); (rk == nil) != (routing[i] == nil) || (rk != nil && string(rk) != *routing[i]) {
			t.Fatalf("record %d: RoutingKey %q, want %v", i, rk, routing[i])
		}
	}
	if len(rest) != 0 {
		t.Fatalf("%d bytes left after the batch", len(rest))
	}
}

func TestBatchCorruption(t *testing.T) {
	one := buildBatch(t, []*pb.SingleMessageMetadata{{PartitionKey: proto.String("k")}}, [][]byte{[]byte("payload")})
	noSize, _ := proto.Marshal(&pb.SingleMessageMetadata{PartitionKey: proto.String("k")})
	negSize, _ := proto.Marshal(&pb.SingleMessageMetadata{PayloadSize: proto.Int32(-1)})
	cases := []struct {
		name  string
		batch []byte
		want  error
	}{
		{"short-size", one[:3], ErrTruncated},
		{"size-past-end", one[:6], ErrTruncated},
		{"payload-cut", one[:len(one)-1], ErrTruncated},
		{"no-payload-size", AppendSingleMessage(nil, noSize, nil), ErrMalformed},
		{"negative-payload-size", AppendSingleMessage(nil, negSize, nil), ErrMalformed},
		{"bad-protobuf", AppendSingleMessage(nil, []byte{0x18}, nil), ErrMalformed},
	}
	for _, c := range cases {
		var m SingleMetadata
		if _, _, err := NextSingleMessage(c.batch, &m); !errors.Is(err, c.want) {
			t.Errorf("%s: NextSingleMessage err = %v, want %v", c.name, err, c.want)
		}
	}
}
