package broker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/metadata/memmeta"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/mledger/memstore"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// TestCoreParsesThroughEntryparse: no file of the core calls the
// pulsarproto entry parsers but entryparse.go, so the counting hook of
// TestSendParsesOnce sees every parse.
func TestCoreParsesThroughEntryparse(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "entryparse.go" {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, call := range []string{"pulsarproto.ParseEntry(", "pulsarproto.ParseMetadata(", "pulsarproto.VerifyEntry("} {
			if strings.Contains(string(src), call) {
				t.Errorf("%s calls %s: parse through entryparse.go", f, call)
			}
		}
	}
}

// restamp is a broker-wide PublishInterceptor that rewrites every entry
// (as broker entry metadata does) from the parsed view, without parsing.
type restamp struct{ seen atomic.Int64 }

func (*restamp) Name() string { return "restamp" }

func (r *restamp) BeforeAdd(_ Topic, e *Entry) {
	if e.Meta() == nil {
		panic("entry without parsed metadata")
	}
	r.seen.Add(1)
	data := e.Data()
	buf := make([]byte, mledger.EntryHeadroom, mledger.EntryHeadroom+len(data))
	e.SetData(append(buf, data...), mledger.EntryHeadroom)
}

func (*restamp) AfterAdd(Topic, *Entry, storage.Position, error) {}

// claimTxn claims transactional SENDs as the transaction feature does:
// from the parsed view it rebuilds the entry with the txn id in its
// metadata, and attaches a hook of the entry's own.
type claimTxn struct{ added atomic.Int64 }

func (*claimTxn) Name() string { return "claim-txn" }

func (c *claimTxn) InterceptSend(_ Producer, m *pb.CommandSend, e *Entry) error {
	if m.TxnidLeastBits == nil {
		return nil
	}
	metadata, payload := e.Sections()
	meta := protowire.AppendTag(append([]byte(nil), metadata...), 22, protowire.VarintType)
	meta = protowire.AppendVarint(meta, m.GetTxnidLeastBits())
	buf := make([]byte, mledger.EntryHeadroom, mledger.EntryHeadroom+10+len(meta)+len(payload))
	e.SetData(pulsarproto.AppendEntry(buf, meta, payload), mledger.EntryHeadroom)
	e.Meta().HasTxnid, e.Meta().TxnidLeastBits = true, m.GetTxnidLeastBits()
	e.Attach(txnEntryHook{c})
	return nil
}

// txnEntryHook is the hook of one claimed entry (a type of its own: Use
// would register a PublishInterceptor on claimTxn broker-wide).
type txnEntryHook struct{ c *claimTxn }

func (txnEntryHook) BeforeAdd(Topic, *Entry) {}

func (h txnEntryHook) AfterAdd(_ Topic, e *Entry, _ storage.Position, err error) {
	if err == nil && e.Meta().HasTxnid {
		h.c.added.Add(1)
	}
}

// TestSendParsesOnce: a SEND's entry is parsed once (framing with its
// checksum, and the MessageMetadata) on its way to storage, whatever the
// stages it passes: deduplication, the encryption-required check, a
// replicator producer's dedup by original name, a transaction's id
// stamping (a SendInterceptor claiming it as the transaction feature
// does), a broker-wide PublishInterceptor rewriting it.
func TestSendParsesOnce(t *testing.T) {
	meta := memmeta.New()
	f, err := mledger.NewFactory(mledger.Options{Ledgers: memstore.New(), Metadata: meta})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(brokerconf.Config{ServiceAddr: "127.0.0.1:0", HTTPAddr: "-", AdvertisedHost: "127.0.0.1", MaxMessageSize: 1 << 20,
		Deduplication: true},
		Deps{Metadata: meta, OpenLedger: storage.Opener(f, mledger.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	stamp, claim := &restamp{}, &claimTxn{}
	if err := b.Use(stamp); err != nil {
		t.Fatal(err)
	}
	if err := b.Use(claim); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(); f.Close() })
	tb := &testBroker{Broker: b}
	ctx := ctxT(t)
	if err := b.Policies().CreateNamespace(ctx, "public/enc", &policy.Policies{NamespaceExtras: policy.NamespaceExtras{EncryptionRequired: true}}); err != nil {
		t.Fatal(err)
	}
	const topic = "persistent://public/enc/parse-once"
	r := dialRaw(t, tb, true)
	r.rawNamedProducer(topic, 1, "plain")
	r.rawNamedProducer(topic, 2, ReplicatorPrefix+".east-->"+b.cfg.ClusterName)

	entry := func(name string, seq uint64) []byte {
		md := &pb.MessageMetadata{ProducerName: ptr(name), SequenceId: &seq, PublishTime: ptr(uint64(time.Now().UnixMilli())),
			EncryptionKeys: []*pb.EncryptionKeys{{Key: ptr("k"), Value: []byte{1}}}, NumMessagesInBatch: ptr(int32(2))}
		mb, err := protoMarshal(md)
		if err != nil {
			t.Fatal(err)
		}
		return pulsarproto.AppendEntry(nil, mb, []byte("payload"))
	}
	var entries, metas atomic.Int64
	count := func(md bool) {
		if md {
			metas.Add(1)
		} else {
			entries.Add(1)
		}
	}
	testHookParse.Store(&count)
	defer testHookParse.Store(nil)

	sends := []*pulsarproto.SendHeader{
		{ProducerID: 1, SequenceID: 0, NumMessages: 2},
		{ProducerID: 1, SequenceID: 2, NumMessages: 2, TxnidMostBits: 0, TxnidLeastBits: 9},
		{ProducerID: 2, SequenceID: 0, NumMessages: 2},
	}
	names := []string{"plain", "plain", "origin"}
	for i, h := range sends {
		r.write(pulsarproto.AppendSend(nil, h, entry(names[i], h.SequenceID)))
		f := r.next()
		if f.Type != pb.BaseCommand_SEND_RECEIPT {
			t.Fatalf("send %d answered %s %v", i, f.Type, f.Cmd.SendError)
		}
		if e, m := entries.Load(), metas.Load(); e != int64(i+1) || m != int64(i+1) {
			t.Fatalf("after %d SENDs: %d entry parses and %d metadata parses, want %d of each", i+1, e, m, i+1)
		}
	}
	if n := stamp.seen.Load(); n != int64(len(sends)) {
		t.Fatalf("the interceptor saw %d entries, want %d", n, len(sends))
	}
	if n := claim.added.Load(); n != 1 {
		t.Fatalf("%d transactional entries stored, want 1", n)
	}
}
