package policy

import "fmt"

// PersistencePolicies sets the replication of the ledgers a topic's
// managed ledger creates (ensemble E, write quorum Qw, ack quorum Qa)
// and how often a cursor's mark-delete position may be persisted
// (managedLedgerMaxMarkDeleteRate, per second; 0: broker default).
type PersistencePolicies struct {
	BookkeeperEnsemble             int     `json:"bookkeeperEnsemble"`
	BookkeeperWriteQuorum          int     `json:"bookkeeperWriteQuorum"`
	BookkeeperAckQuorum            int     `json:"bookkeeperAckQuorum"`
	ManagedLedgerMaxMarkDeleteRate float64 `json:"managedLedgerMaxMarkDeleteRate"`
}

// Validate refuses anything but E >= Qw >= Qa >= 1 (E at most an int32)
// and a negative mark-delete rate, with Pulsar's wording.
func (p PersistencePolicies) Validate() error {
	if !(p.BookkeeperEnsemble >= p.BookkeeperWriteQuorum && p.BookkeeperWriteQuorum >= p.BookkeeperAckQuorum && p.BookkeeperAckQuorum >= 1) ||
		p.BookkeeperEnsemble > MaxInt32Value {
		//lint:ignore ST1005 Pulsar's capitalised wording (its typo included), shown to admin clients
		return fmt.Errorf("Bookkeeper Ensemble (%d) >= WriteQuorum (%d) >= AckQuoru (%d) >= 1",
			p.BookkeeperEnsemble, p.BookkeeperWriteQuorum, p.BookkeeperAckQuorum)
	}
	if p.ManagedLedgerMaxMarkDeleteRate < 0 || p.ManagedLedgerMaxMarkDeleteRate != p.ManagedLedgerMaxMarkDeleteRate {
		return fmt.Errorf("managedLedgerMaxMarkDeleteRate %v must be >= 0", p.ManagedLedgerMaxMarkDeleteRate)
	}
	return nil
}

// NamespaceExtras are the namespace policies of ledger persistence,
// placement, consumer limits, encryption and labels, embedded
// (flattened) into Policies under Pulsar's field names.
type NamespaceExtras struct {
	// Persistence overrides the broker's managedLedgerDefault* values.
	Persistence *PersistencePolicies `json:"persistence,omitempty"`
	// AntiAffinityGroup: the load manager places the bundles of the
	// namespaces of one group on different brokers where it can.
	AntiAffinityGroup string `json:"antiAffinityGroup,omitempty"`
	// MaxConsumersPerSubscription limits each subscription (0:
	// unlimited).
	MaxConsumersPerSubscription *int `json:"max_consumers_per_subscription,omitempty"`
	// EncryptionRequired refuses unencrypted messages.
	EncryptionRequired bool `json:"encryption_required,omitempty"`
	// Properties are the operator's key/value labels of the namespace
	// (Pulsar's namespace properties); they change no behaviour.
	Properties map[string]string `json:"properties,omitempty"`
	// BookieAffinityGroup places the ledgers of the namespace's topics
	// on groups of bookies (affinity.go; Pulsar keeps it in the
	// namespace's local policies).
	BookieAffinityGroup *BookieAffinityGroup `json:"bookieAffinityGroup,omitempty"`
}

// TopicExtras are the topic-level counterparts (Pulsar's TopicPolicies
// names), embedded into TopicPolicies.
type TopicExtras struct {
	Persistence                 *PersistencePolicies `json:"persistence,omitempty"`
	MaxConsumersPerSubscription *int                 `json:"maxConsumersPerSubscription,omitempty"`
	// MaxUnackedMessagesOnConsumer / ...OnSubscription override the
	// namespace's max_unacked_messages_per_consumer / ...subscription
	// (0: unlimited).
	MaxUnackedMessagesOnConsumer     *int `json:"maxUnackedMessagesOnConsumer,omitempty"`
	MaxUnackedMessagesOnSubscription *int `json:"maxUnackedMessagesOnSubscription,omitempty"`
}

func (e TopicExtras) empty() bool {
	return e.Persistence == nil && e.MaxConsumersPerSubscription == nil &&
		e.MaxUnackedMessagesOnConsumer == nil && e.MaxUnackedMessagesOnSubscription == nil
}

// layer is e as namespace extras (for TopicPolicies.Layer).
func (e TopicExtras) layer() NamespaceExtras {
	return NamespaceExtras{Persistence: e.Persistence, MaxConsumersPerSubscription: e.MaxConsumersPerSubscription}
}

// ResolvedExtras are the resolved values of the extras, embedded into
// Resolved.
type ResolvedExtras struct {
	// Persistence is the most specific layer's (nil: broker defaults).
	Persistence *PersistencePolicies
	// MaxConsumersPerSubscription (0: unlimited).
	MaxConsumersPerSubscription int
	// EncryptionRequired comes from the namespace only (Pulsar has no
	// topic-level value).
	EncryptionRequired bool
	// BookieAffinity comes from the namespace only (nil: none).
	BookieAffinity *BookieAffinityGroup
}

// resolveExtras fills r's extras from layers, most specific first.
func resolveExtras(r *Resolved, layers []*Policies) {
	var pers, maxCS bool
	for _, p := range layers {
		if p == nil {
			continue
		}
		if !pers && p.Persistence != nil {
			v := *p.Persistence
			pers, r.Persistence = true, &v
		}
		if !maxCS && p.MaxConsumersPerSubscription != nil {
			maxCS, r.MaxConsumersPerSubscription = true, *p.MaxConsumersPerSubscription
		}
		r.EncryptionRequired = r.EncryptionRequired || p.EncryptionRequired
		if r.BookieAffinity == nil && p.BookieAffinityGroup != nil {
			g := *p.BookieAffinityGroup
			r.BookieAffinity = &g
		}
	}
}

// SamePersistence reports whether a and b create ledgers alike (quorum
// and bookie affinity) and throttle mark-deletes alike.
func SamePersistence(a, b *Resolved) bool {
	if (a.BookieAffinity == nil) != (b.BookieAffinity == nil) || a.BookieAffinity != nil && *a.BookieAffinity != *b.BookieAffinity {
		return false
	}
	if a.Persistence == nil || b.Persistence == nil {
		return a.Persistence == b.Persistence
	}
	return *a.Persistence == *b.Persistence
}
