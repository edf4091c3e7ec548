package broker

import (
	"context"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// TestEncryptionRequiredOnTheWire: on a namespace requiring encryption
// a SEND without encryption_keys gets SEND_ERROR MetadataError
// "Messages must be encrypted" and stores nothing; one with keys is
// stored; an encryption_algo alone is not enough.
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
