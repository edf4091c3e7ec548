package broker

import (
	"context"
	"strings"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
	"google.golang.org/protobuf/proto"
)

// Pulsar's refusals for the namespace extras (policy/extras.go).
const (
	msgMustBeEncrypted       = "Messages must be encrypted"
	msgMaxConsumersPerSubReg = "Subscription reached max consumers limit"
)

// refuseUnencrypted reports whether the SEND of entry by p must be
// refused because t's namespace requires encryption and the entry's
// metadata carries no encryption keys. Replicator producers are exempt
// (the origin cluster checked), as in Pulsar.
func refuseUnencrypted(p *producer, entry []byte) bool {
	if p.remote != "" || !p.topic.pol.Load().EncryptionRequired {
		return false
	}
	e, err := pulsarproto.ParseEntry(entry)
	if err != nil {
		return true
	}
	// Pulsar counts encryption_keys (an encryption_algo alone does not
	// make a message encrypted); only namespaces that require
	// encryption pay for the full decode.
	var md pb.MessageMetadata
	if err := proto.Unmarshal(e.Metadata, &md); err != nil {
		return true
	}
	return len(md.EncryptionKeys) == 0
}

// refusesUnencryptedProducer reports whether t refuses the producer m
// at creation: its namespace requires encryption and m declares itself
// unencrypted (CommandProducer.encrypted false, as the Java and C++
// clients send it), as Pulsar refuses it. An unset flag is let through
// (pulsar-client-go never sets it, even when it encrypts); its SENDs
// are checked one by one (refuseUnencrypted). Replicators are exempt.
func (t *topic) refusesUnencryptedProducer(m *pb.CommandProducer) bool {
	return t.pol.Load().EncryptionRequired && m.Encrypted != nil && !m.GetEncrypted() &&
		remoteOfProducer(m.GetProducerName()) == ""
}

// subConsumersFull reports whether s already holds the most consumers
// the topic's maxConsumersPerSubscription allows. s is locked (runs in
// s.call).
func (t *topic) subConsumersFull(s *subscription) bool {
	m := t.pol.Load().MaxConsumersPerSubscription
	return m > 0 && len(s.consumers) >= m
}

type persistenceKey struct{}

// withPersistence attaches a persistence policy to ctx, for
// LedgerOpener.
func withPersistence(ctx context.Context, p *policy.PersistencePolicies) context.Context {
	if p == nil {
		return ctx
	}
	return context.WithValue(ctx, persistenceKey{}, *p)
}

// applyPersistence sets cfg's ledger quorum from a persistence policy
// carried by ctx, and throttles cursor persistence to
// managedLedgerMaxMarkDeleteRate: the mark-delete position of a cursor
// is written at most that many times a second (the acks between are
// kept in memory and written with the next persist, as in Pulsar).
func applyPersistence(ctx context.Context, cfg *mledger.Config) {
	p, ok := ctx.Value(persistenceKey{}).(policy.PersistencePolicies)
	if !ok {
		return
	}
	cfg.Quorum = mledger.Quorum{Ensemble: p.BookkeeperEnsemble, WriteQuorum: p.BookkeeperWriteQuorum, AckQuorum: p.BookkeeperAckQuorum}
	if iv := markDeleteInterval(p.ManagedLedgerMaxMarkDeleteRate); iv > cfg.CursorPersistInterval {
		cfg.CursorPersistInterval = iv
	}
}

// markDeleteInterval is the least time between two mark-delete persists
// at rate per second (0 for no limit; at most an hour).
func markDeleteInterval(rate float64) time.Duration {
	if rate <= 0 {
		return 0
	}
	iv := float64(time.Second) / rate
	if iv > float64(time.Hour) {
		return time.Hour
	}
	return time.Duration(iv)
}

// antiAffinityPeers lists the other namespaces of ns's tenant in ns's
// anti-affinity group (nil when ns has none), for the load manager's
// placement (cluster.Options.AntiAffinityPeers). As in Pulsar, a group
// is scoped to its tenant.
func (b *Broker) antiAffinityPeers(ctx context.Context, ns string) []string {
	pols := b.Policies()
	p, err := pols.Get(ctx, ns)
	if err != nil || p.AntiAffinityGroup == "" {
		return nil
	}
	tenant, _, _ := strings.Cut(ns, "/")
	nss, err := pols.Namespaces(ctx, tenant)
	if err != nil {
		return nil
	}
	var out []string
	for _, o := range nss {
		if o == ns {
			continue
		}
		if op, err := pols.Get(ctx, o); err == nil && op.AntiAffinityGroup == p.AntiAffinityGroup {
			out = append(out, o)
		}
	}
	return out
}
