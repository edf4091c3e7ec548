package compact

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// TestE2ECompactionCompressedBatches: with batching and each compression
// type of the Go client, the compactor opens the batches: a batch whose
// messages are all superseded disappears, one with survivors is
// rewritten (compressed with its codec again), tombstones delete keys,
// keyless messages are left out. A read_compacted reader and a TableView
// see exactly the latest value per key; a plain reader still sees all.
func TestE2ECompactionCompressedBatches(t *testing.T) {
	tb := startBroker(t, Config{})
	cl := tb.client(t)
	for _, tc := range []struct {
		name  string
		ct    pulsar.CompressionType
		codec pb.CompressionType
	}{
		{"none", pulsar.NoCompression, pb.CompressionType_NONE},
		{"lz4", pulsar.LZ4, pb.CompressionType_LZ4},
		{"zlib", pulsar.ZLib, pb.CompressionType_ZLIB},
		{"zstd", pulsar.ZSTD, pb.CompressionType_ZSTD},
		{"snappy", pulsar.SNAPPY, pb.CompressionType_SNAPPY},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := newTopicName("ccodec-" + tc.name)
			const rounds, keys = 6, 9
			want := produceRoundsWith(t, cl, pulsar.ProducerOptions{Topic: topic, CompressionType: tc.ct,
				BatchingMaxMessages: 7, BatchingMaxPublishDelay: time.Second}, rounds, keys)
			if err := tb.Compact(ctxT(t), topic); err != nil {
				t.Fatal(err)
			}
			waitCompacted(t, tb, topic)

			kv, seq := readAll(t, cl, topic, true)
			if !reflect.DeepEqual(kv, want) || len(seq) != len(want) {
				t.Fatalf("compacted read: %d messages %v, want %v", len(seq), seq, want)
			}
			if _, all := readAll(t, cl, topic, false); len(all) != rounds*keys+2 {
				t.Fatalf("plain read: %d messages, want %d", len(all), rounds*keys+2)
			}
			// The compacted view holds batches of the same codec, with
			// fewer messages than the producer's 7.
			r, _, err := ledger{tb.Ledger(t, topic)}.openCompacted(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			es, err := r.Read(context.Background(), 0, r.LastAddConfirmed())
			if err != nil {
				t.Fatal(err)
			}
			msgs, rewritten := 0, 0
			for _, raw := range es {
				_, data, err := splitCompacted(raw)
				if err != nil {
					t.Fatal(err)
				}
				e, err := pulsarproto.ParseEntry(data)
				if err != nil {
					t.Fatal(err)
				}
				var md pulsarproto.Metadata
				if err := pulsarproto.ParseMetadata(e.Metadata, &md); err != nil {
					t.Fatal(err)
				}
				if md.Compression != tc.codec {
					t.Fatalf("compacted entry compressed with %s, want %s", md.Compression, tc.codec)
				}
				msgs += md.NumMessages()
				if md.Batch && md.NumMessagesInBatch < 7 {
					rewritten++
				}
			}
			if msgs != len(want) || rewritten == 0 || len(es) >= (rounds*keys+2+6)/7 {
				t.Fatalf("compacted ledger: %d entries, %d messages (%d rewritten batches); want %d messages in fewer entries than the topic's",
					len(es), msgs, rewritten, len(want))
			}

			tv, err := cl.CreateTableView(pulsar.TableViewOptions{Topic: topic, Schema: pulsar.NewStringSchema(nil), SchemaValueType: reflect.TypeOf((*string)(nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer tv.Close()
			got := map[string]string{}
			for k, v := range tv.Entries() {
				if p, ok := v.(*string); ok && p != nil {
					got[k] = *p
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("table view %v, want %v", got, want)
			}
		})
	}
}

// TestE2ECompactionNullKeys: messages without a key are left out of the
// compacted view (Pulsar's default since 3.2); with
// Config.RetainNullKey they stay, in batches and alone.
func TestE2ECompactionNullKeys(t *testing.T) {
	for _, retain := range []bool{false, true} {
		tb := startBroker(t, Config{RetainNullKey: retain})
		cl := tb.client(t)
		topic := newTopicName("nullkey")
		want := produceRoundsWith(t, cl, pulsar.ProducerOptions{Topic: topic, CompressionType: pulsar.LZ4,
			BatchingMaxMessages: 7, BatchingMaxPublishDelay: time.Second}, 3, 4)
		p := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
		if _, err := p.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte("alone")}); err != nil {
			t.Fatal(err)
		}
		if err := tb.Compact(ctxT(t), topic); err != nil {
			t.Fatal(err)
		}
		waitCompacted(t, tb, topic)
		kv, seq := readAll(t, cl, topic, true)
		var keyless []string
		for _, s := range seq {
			if strings.HasPrefix(s, "=") {
				keyless = append(keyless, s)
			}
		}
		wantKeyless := []string(nil)
		if retain {
			wantKeyless = []string{"=no key", "=alone"}
		}
		if !reflect.DeepEqual(kv, want) || !reflect.DeepEqual(keyless, wantKeyless) || len(seq) != len(want)+len(wantKeyless) {
			t.Fatalf("retain %v: compacted read %v, want %v and keyless %v", retain, seq, want, wantKeyless)
		}
	}
}
