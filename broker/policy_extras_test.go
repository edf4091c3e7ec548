package broker

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/mledger/memstore"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// TestEncryptionRequiredOnTheWire: on a namespace requiring encryption
// a SEND without encryption_keys gets SEND_ERROR MetadataError
// "Messages must be encrypted" and stores nothing; one with keys is
// stored; an encryption_algo alone is not enough. A PRODUCER with
// encrypted=false gets ERROR MetadataError "Encryption is required in
// <topic>".
func TestEncryptionRequiredOnTheWire(t *testing.T) {
	tb := startBroker(t, nil)
	ctx := context.Background()
	if err := tb.Policies().CreateNamespace(ctx, "public/enc", &policy.Policies{NamespaceExtras: policy.NamespaceExtras{EncryptionRequired: true}}); err != nil {
		t.Fatal(err)
	}
	r := dialRaw(t, tb, true)
	topic := "persistent://public/enc/wire"
	pid := r.producer(topic)
	entry := func(seq uint64, keys bool, algo bool) []byte {
		md := &pb.MessageMetadata{ProducerName: ptr("raw"), SequenceId: &seq, PublishTime: ptr(uint64(time.Now().UnixMilli()))}
		if keys {
			md.EncryptionKeys = []*pb.EncryptionKeys{{Key: ptr("k"), Value: []byte{1, 2, 3}}}
		}
		if algo {
			md.EncryptionAlgo = ptr("RSA")
		}
		mb, err := protoMarshal(md)
		if err != nil {
			t.Fatal(err)
		}
		return pulsarproto.AppendEntry(nil, mb, []byte("payload"))
	}
	for seq, c := range []struct{ keys, algo, ok bool }{{false, false, false}, {false, true, false}, {true, true, true}, {true, false, true}} {
		r.write(pulsarproto.AppendSend(nil, &pulsarproto.SendHeader{ProducerID: pid, SequenceID: uint64(seq)}, entry(uint64(seq), c.keys, c.algo)))
		f := r.next()
		switch {
		case c.ok && (f.Type != pb.BaseCommand_SEND_RECEIPT || f.Cmd.SendReceipt.GetSequenceId() != uint64(seq)):
			t.Fatalf("encrypted send %d answered %s %v", seq, f.Type, f.Cmd.SendError)
		case !c.ok && (f.Type != pb.BaseCommand_SEND_ERROR || f.Cmd.SendError.GetError() != pb.ServerError_MetadataError ||
			f.Cmd.SendError.GetMessage() != "Messages must be encrypted"):
			t.Fatalf("unencrypted send %d answered %s %v", seq, f.Type, f.Cmd.SendError)
		}
	}
	st, err := tb.TopicStats(ctx, topic)
	if err != nil || st.MsgInCounter != 2 {
		t.Fatalf("stored %d messages (%v), want the 2 encrypted ones", st.MsgInCounter, err)
	}
	// A producer that declares itself unencrypted is refused at
	// creation, one that declares encryption is accepted.
	for _, enc := range []bool{false, true} {
		rc := dialRaw(t, tb, true)
		rc.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{
			Topic: ptr(topic), ProducerId: ptr(uint64(1)), RequestId: ptr(uint64(1)), Encrypted: ptr(enc),
		}})
		f := rc.next()
		switch {
		case enc && f.Type != pb.BaseCommand_PRODUCER_SUCCESS:
			t.Fatalf("encrypted producer answered %s", f.Type)
		case !enc && (f.Type != pb.BaseCommand_ERROR || f.Cmd.Error.GetError() != pb.ServerError_MetadataError ||
			f.Cmd.Error.GetMessage() != "Encryption is required in "+topic):
			t.Fatalf("unencrypted producer answered %s %v", f.Type, f.Cmd.Error)
		}
	}
}

// TestApplyPersistence: a persistence policy sets the managed ledger's
// quorum and spaces cursor persists by 1/managedLedgerMaxMarkDeleteRate.
func TestApplyPersistence(t *testing.T) {
	cfg := mledger.Config{CursorPersistInterval: 100 * time.Millisecond}
	applyPersistence(context.Background(), &cfg)
	if cfg.Quorum != (mledger.Quorum{}) || cfg.CursorPersistInterval != 100*time.Millisecond {
		t.Fatalf("no policy changed the config: %+v", cfg)
	}
	p := &policy.PersistencePolicies{BookkeeperEnsemble: 3, BookkeeperWriteQuorum: 2, BookkeeperAckQuorum: 2, ManagedLedgerMaxMarkDeleteRate: 2}
	applyPersistence(withPersistence(context.Background(), p), &cfg)
	if cfg.Quorum != (mledger.Quorum{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2}) || cfg.CursorPersistInterval != 500*time.Millisecond {
		t.Fatalf("config %+v", cfg)
	}
	for rate, want := range map[float64]time.Duration{0: 0, -1: 0, 1e-9: time.Hour, 1000: time.Millisecond} {
		if got := markDeleteInterval(rate); got != want {
			t.Errorf("markDeleteInterval(%v) = %v, want %v", rate, got, want)
		}
	}
}

// quorumRecorder records the quorum each ledger Create asks for (nil:
// the store's default).
type quorumRecorder struct {
	*memstore.Store
	mu   sync.Mutex
	seen []any
}

func (r *quorumRecorder) Create(ctx context.Context) (mledger.WriteLedger, error) {
	var v any
	if q, ok := mledger.QuorumFrom(ctx); ok {
		v = q
	}
	r.mu.Lock()
	r.seen = append(r.seen, v)
	r.mu.Unlock()
	return r.Store.Create(ctx)
}

// take returns and forgets what was recorded.
func (r *quorumRecorder) take() []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.seen
	r.seen = nil
	return out
}

// TestPersistencePolicyQuorumOfNewLedgers: a topic of a namespace with a
// persistence policy creates its ledgers with that E/Qw/Qa; a topic
// without one leaves the store's default; changing the policy unloads
// the topic (its producer gets CLOSE_PRODUCER) and the reloaded topic's
// new ledger has the new quorum.
func TestPersistencePolicyQuorumOfNewLedgers(t *testing.T) {
	rec := &quorumRecorder{Store: memstore.New()}
	tb := startBrokerStore(t, nil, newMemMeta(), rec, 0)
	ctx := context.Background()
	pols := tb.Policies()
	first := &policy.PersistencePolicies{BookkeeperEnsemble: 3, BookkeeperWriteQuorum: 2, BookkeeperAckQuorum: 2}
	if err := pols.CreateNamespace(ctx, "public/pers", &policy.Policies{NamespaceExtras: policy.NamespaceExtras{Persistence: first}}); err != nil {
		t.Fatal(err)
	}
	if err := pols.CreateNamespace(ctx, "public/plain", &policy.Policies{}); err != nil {
		t.Fatal(err)
	}
	check := func(what string, want any) {
		t.Helper()
		got := rec.take()
		if len(got) == 0 {
			t.Fatalf("%s: no ledger was created", what)
		}
		for i, q := range got {
			if q != want {
				t.Fatalf("%s: create %d asked for %v, want %v (all: %v)", what, i, q, want, got)
			}
		}
	}
	dialRaw(t, tb, true).producer("persistent://public/plain/t")
	check("no policy", nil)
	r := dialRaw(t, tb, true)
	r.producer("persistent://public/pers/t")
	check("namespace policy", mledger.Quorum{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2})

	if err := pols.Update(ctx, "public/pers", func(p *policy.Policies) error {
		p.Persistence = &policy.PersistencePolicies{BookkeeperEnsemble: 2, BookkeeperWriteQuorum: 2, BookkeeperAckQuorum: 1}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for f := r.next(); f.Type != pb.BaseCommand_CLOSE_PRODUCER; f = r.next() {
	}
	dialRaw(t, tb, true).producer("persistent://public/pers/t")
	check("changed policy", mledger.Quorum{Ensemble: 2, WriteQuorum: 2, AckQuorum: 1})
}

// TestAntiAffinityPeers: the peers of a namespace are the other
// namespaces of its tenant in its group (none without a group; a group
// of the same name in another tenant does not count).
func TestAntiAffinityPeers(t *testing.T) {
	tb := startBroker(t, nil)
	ctx := context.Background()
	pols := tb.Policies()
	if err := pols.CreateTenant(ctx, "other", policy.TenantInfo{AllowedClusters: []string{tb.ClusterName()}}); err != nil {
		t.Fatal(err)
	}
	for ns, g := range map[string]string{"public/a1": "g", "public/a2": "g", "public/a3": "g", "public/b": "h", "public/none": "", "other/x": "g"} {
		if err := pols.CreateNamespace(ctx, ns, &policy.Policies{NamespaceExtras: policy.NamespaceExtras{AntiAffinityGroup: g}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := tb.antiAffinityPeers(ctx, "public/a1"); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"public/a2", "public/a3"}) {
		t.Fatalf("peers of public/a1: %v", got)
	}
	if got := tb.antiAffinityPeers(ctx, "public/b"); len(got) != 0 {
		t.Fatalf("peers of the only namespace of h: %v", got)
	}
	if got := tb.antiAffinityPeers(ctx, "public/none"); got != nil {
		t.Fatalf("peers without a group: %v", got)
	}
}
