package pulsarproto

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// The golden frames in testdata were captured from pulsar-client-go v0.19.0
// (connect.golden, send_batch.golden) and from this package's encoder
// (message.golden) by TestInteropGoClient with -update-golden. The decoder
// must read them and the encoders must reproduce them byte for byte.

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeGolden(t *testing.T, name string, want pb.BaseCommand_Type) Frame {
	t.Helper()
	b := readGolden(t, name)
	var d Decoder
	rest, f, err := d.Decode(b)
	if err != nil || len(rest) != 0 {
		t.Fatalf("Decode(%s) = rest %d, err %v", name, len(rest), err)
	}
	if f.Type != want {
		t.Fatalf("Decode(%s) type %v, want %v", name, f.Type, want)
	}
	re, err := AppendPayloadCommand(nil, f.Cmd, f.Payload)
	if err != nil || !bytes.Equal(re, b) {
		t.Fatalf("AppendPayloadCommand(Decode(%s)) =\n%x\nwant\n%x (err %v)", name, re, b, err)
	}
	return f
}

func TestGoldenConnect(t *testing.T) {
	f := decodeGolden(t, "connect.golden", pb.BaseCommand_CONNECT)
	c := f.Cmd.GetConnect()
	if c.GetProtocolVersion() != 20 || !bytes.HasPrefix([]byte(c.GetClientVersion()), []byte("Pulsar-Go-")) ||
		c.GetAuthMethodName() != "" || !c.GetFeatureFlags().GetSupportsBrokerEntryMetadata() || !c.GetFeatureFlags().GetSupportsAuthRefresh() {
		t.Fatalf("CONNECT = %v", c)
	}
	if f.Payload != nil {
		t.Fatalf("CONNECT has a payload")
	}
}

func TestGoldenSendBatch(t *testing.T) {
	b := readGolden(t, "send_batch.golden")
	f := decodeGolden(t, "send_batch.golden", pb.BaseCommand_SEND)
	s := f.Cmd.GetSend()
	if s.GetNumMessages() != 3 || s.GetProducerId() != 1 {
		t.Fatalf("SEND = %v", s)
	}
	// The hand encoder reproduces the client's SEND.
	h := SendHeader{ProducerID: s.GetProducerId(), SequenceID: s.GetSequenceId(), NumMessages: s.GetNumMessages()}
	if got := AppendSend(nil, &h, f.Payload); !bytes.Equal(got, b) {
		t.Fatalf("AppendSend =\n%x\nwant\n%x", got, b)
	}
	e, err := VerifyEntry(f.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if e.BrokerEntryMetadata != nil {
		t.Fatalf("client SEND carries broker entry metadata")
	}
	var md Metadata
	if err := ParseMetadata(e.Metadata, &md); err != nil {
		t.Fatal(err)
	}
	if !md.Batch || md.NumMessages() != 3 || string(md.ProducerName) != "standalone-0-1" || md.SequenceID != s.GetSequenceId() ||
		string(md.PartitionKey) != "k0" || md.Compression != pb.CompressionType_NONE || md.PublishTime == 0 {
		t.Fatalf("metadata = %+v", md)
	}
	rest := e.Payload
	for i, want := range []string{"k0", "k1", "k2"} {
		var sm SingleMetadata
		var payload []byte
		if rest, payload, err = NextSingleMessage(rest, &sm); err != nil {
			t.Fatal(err)
		}
		if string(sm.RoutingKey()) != want || string(payload) != "batched-"+want[1:] || !sm.HasSequenceID || sm.SequenceID != uint64(i) {
			t.Fatalf("record %d = %+v payload %q", i, sm, payload)
		}
	}
	if len(rest) != 0 {
		t.Fatalf("%d bytes after the batch", len(rest))
	}
}

func TestGoldenMessage(t *testing.T) {
	b := readGolden(t, "message.golden")
	f := decodeGolden(t, "message.golden", pb.BaseCommand_MESSAGE)
	m := f.Cmd.GetMessage()
	h := MessageHeader{ConsumerID: m.GetConsumerId(), LedgerID: m.GetMessageId().GetLedgerId(), EntryID: m.GetMessageId().GetEntryId(), Partition: -1}
	if h.LedgerID != fakeLedger || h.EntryID != 0 || m.GetMessageId().Partition != nil {
		t.Fatalf("MESSAGE = %v", m)
	}
	if got := AppendMessage(nil, &h, f.Payload); !bytes.Equal(got, b) {
		t.Fatalf("AppendMessage =\n%x\nwant\n%x", got, b)
	}
	e, err := VerifyEntry(f.Payload)
	if err != nil {
		t.Fatal(err)
	}
	bem, err := ParseBrokerEntryMetadata(e.BrokerEntryMetadata)
	if err != nil || bem.BrokerTimestamp != fakeBrokerTS || bem.Index != fakeIndexBase+2 {
		t.Fatalf("broker entry metadata = %+v, %v", bem, err)
	}
	// The body after the 0x0e02 block is the producer's entry, untouched.
	send := decodeGolden(t, "send_batch.golden", pb.BaseCommand_SEND)
	if !bytes.Equal(e.Body, send.Payload) || !bytes.Equal(StripBrokerEntryMetadata(f.Payload), send.Payload) {
		t.Fatalf("MESSAGE entry body differs from the SEND payload")
	}
}

// Values the interop test's fake broker put in message.golden; they must
// match the constants in interop/interop_test.go.
const (
	fakeLedger    = 7
	fakeBrokerTS  = 1_700_000_000_999
	fakeIndexBase = 100
)
