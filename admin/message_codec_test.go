package admin

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// TestMessageByIDDecompressesEveryCodec: messages the real client
// compressed with each of Pulsar's codecs come back decompressed from
// get-message-by-id and peek.
func TestMessageByIDDecompressesEveryCodec(t *testing.T) {
	tb := startBroker(t, nil)
	c := tb.client(t)
	ac := adminClient(t, tb)
	body := strings.Repeat("compress me please ", 200)
	for _, ct := range []pulsar.CompressionType{pulsar.NoCompression, pulsar.LZ4, pulsar.ZLib, pulsar.ZSTD, pulsar.SNAPPY} {
		tn := subscribedTopic(t, ac, "persistent://public/default/"+uniqueName("codec"), "s")
		p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: tn.String(), CompressionType: ct, DisableBatching: true})
		if err != nil {
			t.Fatal(err)
		}
		id, err := p.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte(body), Key: "k"})
		if err != nil {
			t.Fatal(err)
		}
		p.Close()
		ms, err := ac.Subscriptions().GetMessagesByID(tn, id.LedgerID(), id.EntryID())
		if err != nil || len(ms) != 1 || string(ms[0].Payload) != body {
			t.Fatalf("codec %d: message by id: %d messages, err %v", ct, len(ms), err)
		}
		peek, err := ac.Subscriptions().PeekMessages(tn, "s", 1)
		if err != nil || len(peek) != 1 || string(peek[0].Payload) != body {
			t.Fatalf("codec %d: peek: %d messages, err %v", ct, len(peek), err)
		}
	}
	// A compressed batch: peek decompresses it and pulsaradmin splits it.
	for _, ct := range []pulsar.CompressionType{pulsar.LZ4, pulsar.ZLib, pulsar.ZSTD, pulsar.SNAPPY} {
		tn := subscribedTopic(t, ac, "persistent://public/default/"+uniqueName("codecbatch"), "s")
		p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: tn.String(), CompressionType: ct,
			BatchingMaxMessages: 3, BatchingMaxPublishDelay: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			p.SendAsync(ctxT(t), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(body, i))}, nil)
		}
		if err := p.FlushWithCtx(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		p.Close()
		peek, err := ac.Subscriptions().PeekMessages(tn, "s", 3)
		if err != nil || len(peek) != 3 {
			t.Fatalf("codec %d batch: peek %d messages, err %v", ct, len(peek), err)
		}
		for i, m := range peek {
			if string(m.Payload) != fmt.Sprint(body, i) {
				t.Fatalf("codec %d batch: message %d is %q", ct, i, m.Payload[:min(20, len(m.Payload))])
			}
		}
	}
}
