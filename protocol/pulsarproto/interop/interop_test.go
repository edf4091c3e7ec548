package interop_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	"google.golang.org/protobuf/proto"

	. "github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/fakebroker"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite ../testdata/*.golden from the interop test")

// fakeBroker is a single-topic broker that satisfies pulsar-client-go for
// produce-then-consume: the shared fake (protocol/pulsarproto/fakebroker)
// answers the handshake, lookups, producers and subscriptions, and the
// handler here stores SENDs and dispatches them on FLOW, all through this
// package. It checks the codec against the reference client's real wire
// output in both directions.
type fakeBroker struct {
	*fakebroker.Broker

	mu       sync.Mutex
	entries  [][]byte // stored payload sections, index = entry id
	topics   []string // canonical names seen in PRODUCER/SUBSCRIBE/LOOKUP
	connect  []byte   // first CONNECT frame
	sendRaw  []byte   // first batched SEND frame
	msgRaw   []byte   // first MESSAGE frame sent
	pubTimes []uint64
}

// These must match the constants in ../golden_test.go.
const (
	fakeLedger    = 7
	fakeBrokerTS  = 1_700_000_000_999
	fakeIndexBase = 100
)

func startFakeBroker(t *testing.T) *fakeBroker {
	b := &fakeBroker{}
	b.Broker = fakebroker.Start(t, fakebroker.Options{
		Connected: &pb.CommandConnected{ServerVersion: proto.String("magnetar-test"), ProtocolVersion: proto.Int32(20), MaxMessageSize: proto.Int32(1 << 20)},
		OnConnect: func(f Frame) {
			b.mu.Lock()
			if b.connect == nil {
				b.connect = bytes.Clone(f.Raw)
			}
			b.mu.Unlock()
		},
		Topic:        b.canonical,
		MaxFrameSize: (1 << 20) + FramePadding,
		Handler:      b.handler,
	})
	return b
}

func (b *fakeBroker) url() string { return b.URL }

func (b *fakeBroker) close() { b.Close() }

func (b *fakeBroker) canonical(topic string) error {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.topics = append(b.topics, tn.String())
	b.mu.Unlock()
	return nil
}

// handler stores SENDs (checking them against their metadata) and
// dispatches the stored entries on FLOW, with broker entry metadata when
// the client announced it.
func (b *fakeBroker) handler(c *fakebroker.Conn) func(f Frame) error {
	var out []byte
	brokerMeta := c.Connect.GetFeatureFlags().GetSupportsBrokerEntryMetadata()
	permits := map[uint64]int{}
	next := map[uint64]int{}      // consumer id -> next entry to dispatch
	delivered := map[uint64]int{} // consumer id -> messages dispatched
	return func(f Frame) error {
		switch f.Type {
		case pb.BaseCommand_SEND:
			s := f.Cmd.GetSend()
			e, err := VerifyEntry(f.Payload)
			if err != nil {
				return err
			}
			var md Metadata
			if err := ParseMetadata(e.Metadata, &md); err != nil {
				return err
			}
			if md.NumMessages() != int(s.GetNumMessages()) || md.SequenceID != s.GetSequenceId() {
				return fmt.Errorf("SEND num_messages %d seq %d, metadata %d %d", s.GetNumMessages(), s.GetSequenceId(), md.NumMessages(), md.SequenceID)
			}
			b.mu.Lock()
			if md.Batch && b.sendRaw == nil {
				b.sendRaw = bytes.Clone(f.Raw)
			}
			id := len(b.entries)
			b.entries = append(b.entries, append([]byte(nil), f.Payload...))
			b.pubTimes = append(b.pubTimes, md.PublishTime)
			b.mu.Unlock()
			out = AppendSendReceipt(out[:0], &SendReceipt{ProducerID: s.GetProducerId(), SequenceID: s.GetSequenceId(), LedgerID: fakeLedger, EntryID: uint64(id)})
			return c.Write(out)
		case pb.BaseCommand_FLOW:
			m := f.Cmd.GetFlow()
			id := m.GetConsumerId()
			permits[id] += int(m.GetMessagePermits())
			b.mu.Lock()
			entries := b.entries
			b.mu.Unlock()
			for permits[id] > 0 && next[id] < len(entries) {
				entry := entries[next[id]]
				var md Metadata
				e, _ := ParseEntry(entry)
				if err := ParseMetadata(e.Metadata, &md); err != nil {
					return err
				}
				h := MessageHeader{ConsumerID: id, LedgerID: fakeLedger, EntryID: uint64(next[id]), Partition: -1}
				delivered[id] += md.NumMessages()
				if brokerMeta {
					// index = that of the entry's last message, counted from fakeIndexBase.
					block := AppendBrokerEntryMetadata(nil, fakeBrokerTS, uint64(fakeIndexBase+delivered[id]-1))
					out = AppendMessage(out[:0], &h, append(block, entry...))
				} else {
					out = AppendMessage(out[:0], &h, entry)
				}
				b.mu.Lock()
				if b.msgRaw == nil {
					b.msgRaw = append([]byte(nil), out...)
				}
				b.mu.Unlock()
				if err := c.Write(out); err != nil {
					return err
				}
				permits[id] -= md.NumMessages()
				next[id]++
			}
			return nil
		case pb.BaseCommand_ACK, pb.BaseCommand_CLOSE_PRODUCER, pb.BaseCommand_CLOSE_CONSUMER:
			return nil
		}
		return fmt.Errorf("fake broker: unexpected command %v", f.Type)
	}
}

type sent struct {
	key   string
	props map[string]string
	value string
	id    pulsar.MessageID
}

// TestInteropGoClient runs pulsar-client-go v0.19.0 against a fake broker
// built on this package: CONNECT, lookup, a batched and a non-batched
// producer, then a consumer that receives every message with the broker
// entry metadata this package prepends. The client itself verifies the
// CRC32C of every MESSAGE and decodes our frames with its own generated code.
func TestInteropGoClient(t *testing.T) {
	b := startFakeBroker(t)
	defer b.close()
	client, err := pulsar.NewClient(pulsar.ClientOptions{
		URL:              b.url(),
		OperationTimeout: 20 * time.Second,
		Logger:           plog.DefaultNopLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	const topic = "interop-topic" // short form: the broker must canonicalise it
	batched, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 3, BatchingMaxPublishDelay: time.Hour})
	if err != nil {
		t.Fatalf("CreateProducer(batched): %v", err)
	}
	var want []sent
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := 0; i < 3; i++ {
		s := sent{key: fmt.Sprintf("k%d", i), props: map[string]string{"i": fmt.Sprint(i)}, value: fmt.Sprintf("batched-%d", i)}
		want = append(want, s)
		wg.Add(1)
		idx := i
		batched.SendAsync(ctx, &pulsar.ProducerMessage{Key: s.key, Properties: s.props, Payload: []byte(s.value)},
			func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				defer wg.Done()
				if err != nil {
					t.Errorf("SendAsync %d: %v", idx, err)
					return
				}
				mu.Lock()
				want[idx].id = id
				mu.Unlock()
			})
	}
	if err := batched.FlushWithCtx(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	wg.Wait()
	single, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatalf("CreateProducer(single): %v", err)
	}
	s := sent{key: "solo", props: map[string]string{"x": "y"}, value: strings.Repeat("0123456789", 20)}
	if s.id, err = single.Send(ctx, &pulsar.ProducerMessage{Key: s.key, Properties: s.props, Payload: []byte(s.value)}); err != nil {
		t.Fatalf("Send(single): %v", err)
	}
	want = append(want, s)
	batched.Close()
	single.Close()

	consumer, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	for i, w := range want {
		m, err := consumer.Receive(ctx)
		if err != nil {
			t.Fatalf("Receive %d: %v", i, err)
		}
		if string(m.Payload()) != w.value || m.Key() != w.key || fmt.Sprint(m.Properties()) != fmt.Sprint(w.props) {
			t.Errorf("message %d = %q key %q props %v, want %q %q %v", i, m.Payload(), m.Key(), m.Properties(), w.value, w.key, w.props)
		}
		id := m.ID()
		if id.LedgerID() != w.id.LedgerID() || id.EntryID() != w.id.EntryID() || id.BatchIdx() != w.id.BatchIdx() || id.LedgerID() != fakeLedger {
			t.Errorf("message %d id %v, producer got %v", i, id, w.id)
		}
		if bt := m.BrokerPublishTime(); bt == nil || bt.UnixMilli() != fakeBrokerTS {
			t.Errorf("message %d BrokerPublishTime = %v, want %d ms", i, bt, fakeBrokerTS)
		}
		if idx := m.Index(); idx == nil || *idx != uint64(fakeIndexBase+i) {
			t.Errorf("message %d Index = %v, want %d", i, idx, fakeIndexBase+i)
		}
		consumer.Ack(m)
	}
	consumer.Close()
	client.Close()
	b.close()

	b.mu.Lock()
	defer b.mu.Unlock()
	for _, err := range b.Errors() {
		t.Errorf("fake broker: %v", err)
	}
	for _, tn := range b.topics {
		if tn != "persistent://public/default/interop-topic" {
			t.Errorf("canonical topic %q, want persistent://public/default/interop-topic", tn)
		}
	}
	if len(b.entries) != 2 {
		t.Fatalf("broker stored %d entries, want 2 (one batch, one single)", len(b.entries))
	}
	// The stored batch splits into the three keyed records.
	e, _ := ParseEntry(b.entries[0])
	rest := e.Payload
	for i := 0; i < 3; i++ {
		var sm SingleMetadata
		var payload []byte
		if rest, payload, err = NextSingleMessage(rest, &sm); err != nil {
			t.Fatalf("batch record %d: %v", i, err)
		}
		if string(payload) != want[i].value || string(sm.RoutingKey()) != want[i].key {
			t.Errorf("batch record %d = %q key %q, want %q %q", i, payload, sm.RoutingKey(), want[i].value, want[i].key)
		}
	}
	if *updateGolden {
		for name, data := range map[string][]byte{"connect.golden": b.connect, "send_batch.golden": b.sendRaw, "message.golden": b.msgRaw} {
			if err := os.WriteFile(filepath.Join("..", "testdata", name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
