package pulsarproto

import (
	"bufio"
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

func TestSmokeSendRoundTrip(t *testing.T) {
	md, err := proto.Marshal(&pb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(7), PublishTime: proto.Uint64(1000), NumMessagesInBatch: proto.Int32(3), PartitionKey: proto.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	entry := AppendEntry(nil, md, []byte("hello"))
	frame := AppendSend(nil, &SendHeader{ProducerID: 1, SequenceID: 7, NumMessages: 3}, entry)
	fr := NewFrameReader(bufio.NewReader(bytes.NewReader(frame)), 0)
	f, err := fr.Next()
	if err != nil {
		t.Fatal(err)
	}
	if f.Type != pb.BaseCommand_SEND || f.Cmd.GetSend().GetSequenceId() != 7 || f.Cmd.GetSend().GetNumMessages() != 3 {
		t.Fatalf("bad frame %v", f.Cmd)
	}
	e, err := VerifyEntry(f.Payload)
	if err != nil {
		t.Fatal(err)
	}
	var m Metadata
	if err := ParseMetadata(e.Metadata, &m); err != nil {
		t.Fatal(err)
	}
	if m.NumMessages() != 3 || string(m.RoutingKey()) != "k" || string(e.Payload) != "hello" {
		t.Fatalf("bad metadata %+v", m)
	}
}
