package enforcement

import (
	"context"
	"fmt"
	"strings"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// The admission limits (broker.Admission), each read from the topic's
// effective policy when asked, refused as Pulsar refuses them:
//
//   - maxProducersPerTopic, maxConsumersPerTopic: a PRODUCER (SUBSCRIBE)
//     at the limit gets ProducerBusy (ConsumerBusy) "Topic '<topic>'
//     reached max producers (consumers) limit";
//   - subscriptionKeySharedEnable false (the broker's, dynamic): a
//     Key_Shared SUBSCRIBE gets NotAllowedError "Key_Shared subscription
//     is disabled by broker." (to a new or an existing subscription;
//     consumers already attached stay);
//   - subscriptionTypesEnabled (the broker's, dynamic): a SUBSCRIBE of a
//     type not in it gets NotAllowedError "Topic[{<topic>}] doesn't
//     support <type> sub type!" (Pulsar's text, braces included), to a
//     new or an existing subscription, except on the namespace events
//     topic (__change_events), as in Pulsar; a list naming no valid type
//     admits no subscribe (Pulsar's null set); consumers already
//     attached stay;
//   - maxConsumersPerSubscription: ConsumerBusy "Subscription reached max
//     consumers limit";
//   - maxSubscriptionsPerTopic: a SUBSCRIBE that would create one more
//     subscription gets NotAllowedError "Exceed the maximum number of
//     subscriptions of the topic: <topic>" (counted under the lock that
//     creates subscriptions: concurrent SUBSCRIBEs cannot both pass);
//   - autoSubscriptionCreation false: a durable SUBSCRIBE to a missing
//     subscription of a persistent topic gets SubscriptionNotFound
//     "Subscription does not exist";
//   - encryption_required: a SEND whose metadata carries no
//     encryption_keys gets MetadataError "Messages must be encrypted" (an
//     encryption_algo alone does not make it encrypted); a PRODUCER that
//     declares itself unencrypted (CommandProducer.encrypted false, as
//     the Java and C++ clients send it) gets MetadataError "Encryption is
//     required in <topic>"; an unset flag is let through (pulsar-client-go
//     never sets it, even when it encrypts) and its SENDs are checked one
//     by one;
//   - maxMessageSize (topic level): a SEND whose metadata and payload are
//     larger gets NotAllowedError "Exceed maximum message size", unless it
//     is a chunk or the limit is not below the broker's maxMessageSize
//     (the frame limit already applies);
//   - delayed delivery: with maxDeliveryDelayInMillis > 0 a SEND whose
//     deliverAt is further than that past its publish time gets
//     NotAllowedError "Exceeds max allowed delivery delay of N
//     milliseconds";
//   - maxTopicsPerNamespace (the namespace's, else the broker's; 0:
//     unlimited) bounds the persistent topics of a namespace as Pulsar
//     counts them: every non-partitioned topic and every partition, not
//     system topics (names starting with "__"). Creating topics past it
//     fails with broker.ErrTooManyTopics (the admin API answers 412, a
//     lookup, producer or consumer NotAllowedError). A partitioned topic
//     counts its partitions; a partition of an existing partitioned topic
//     is already counted when it is first loaded.
//
// Replicator producers are exempt from the SEND and encryption checks:
// the origin cluster checked.

var _ broker.Admission = (*Enforcer)(nil)

// Pulsar's refusal texts.
const (
	msgMustBeEncrypted      = "Messages must be encrypted"
	msgMaxConsumersPerSub   = "Subscription reached max consumers limit"
	msgExceedMaxMessageSize = "Exceed maximum message size"
	msgSubscriptionMissing  = "Subscription does not exist"
	msgKeySharedDisabled    = "Key_Shared subscription is disabled by broker."
)

func refusal(code pb.ServerError, msg string) *broker.SendError {
	return &broker.SendError{Code: code, Msg: msg}
}

// AdmitProducer implements broker.Admission: max producers, then a
// producer declaring itself unencrypted where encryption is required.
func (e *Enforcer) AdmitProducer(t broker.Topic, cmd *pb.CommandProducer) *broker.SendError {
	pol := t.EffectivePolicy()
	if m := pol.MaxProducers; m > 0 && t.ProducerCount() >= m {
		return refusal(pb.ServerError_ProducerBusy, fmt.Sprintf("Topic '%s' reached max producers limit", t.Name()))
	}
	if pol.EncryptionRequired && cmd.Encrypted != nil && !cmd.GetEncrypted() &&
		broker.ReplicatorOrigin(cmd.GetProducerName()) == "" {
		return refusal(pb.ServerError_MetadataError, "Encryption is required in "+t.Name())
	}
	return nil
}

// changeEventsTopic is the local name of Pulsar's namespace events
// topic, which admits every subscription type.
const changeEventsTopic = "__change_events"

// AdmitConsumer implements broker.Admission: Key_Shared turned off, the
// subscription types enabled, then max consumers per topic.
func (e *Enforcer) AdmitConsumer(t broker.Topic, cmd *pb.CommandSubscribe) *broker.SendError {
	pol := t.EffectivePolicy()
	if pol.KeySharedDisabled && cmd.GetSubType() == pb.CommandSubscribe_Key_Shared {
		return refusal(pb.ServerError_NotAllowedError, msgKeySharedDisabled)
	}
	if typ := cmd.GetSubType(); pol.SubscriptionTypesOff.Has(int32(typ)) && t.TopicName().Parent().Local != changeEventsTopic {
		return refusal(pb.ServerError_NotAllowedError,
			fmt.Sprintf("Topic[{%s}] doesn't support %s sub type!", t.Name(), typ))
	}
	if m := pol.MaxConsumers; m > 0 && t.ConsumerCount() >= m {
		return refusal(pb.ServerError_ConsumerBusy, fmt.Sprintf("Topic '%s' reached max consumers limit", t.Name()))
	}
	return nil
}

// AdmitSubscription implements broker.Admission: auto subscription
// creation and max subscriptions per topic (subs counted under the lock
// that creates them).
func (e *Enforcer) AdmitSubscription(t broker.Topic, subs int, durable bool) *broker.SendError {
	pol := t.EffectivePolicy()
	if durable && t.Persistent() && !pol.AutoSubscriptionCreation {
		return refusal(pb.ServerError_SubscriptionNotFound, msgSubscriptionMissing)
	}
	if m := pol.MaxSubscriptionsPerTopic; m > 0 && subs >= m {
		return refusal(pb.ServerError_NotAllowedError, "Exceed the maximum number of subscriptions of the topic: "+t.Name())
	}
	return nil
}

// AdmitSubscriber implements broker.Admission: max consumers per
// subscription.
func (e *Enforcer) AdmitSubscriber(t broker.Topic, consumers int) *broker.SendError {
	if m := t.EffectivePolicy().MaxConsumersPerSubscription; m > 0 && consumers >= m {
		return refusal(pb.ServerError_ConsumerBusy, msgMaxConsumersPerSub)
	}
	return nil
}

// AdmitSend implements broker.Admission: required encryption, the
// topic's max message size and the max delivery delay.
func (e *Enforcer) AdmitSend(t broker.Topic, en *broker.Entry, size int, replicator bool) *broker.SendError {
	if replicator {
		return nil
	}
	pol := t.EffectivePolicy()
	md := en.Meta()
	if pol.EncryptionRequired && (md == nil || md.EncryptionKeys == 0) {
		return refusal(pb.ServerError_MetadataError, msgMustBeEncrypted)
	}
	chunk := md != nil && md.NumChunksFromMsg > 1
	if m := pol.MaxMessageSize; m > 0 && !chunk && m < e.maxMessageSize && size > m {
		return refusal(pb.ServerError_NotAllowedError, msgExceedMaxMessageSize)
	}
	dd := pol.DelayedDelivery
	if dd.Active && dd.MaxDeliveryDelayInMillis > 0 && md != nil && md.HasDeliverAtTime &&
		md.DeliverAtTime-int64(md.PublishTime) > dd.MaxDeliveryDelayInMillis {
		return refusal(pb.ServerError_NotAllowedError,
			fmt.Sprintf("Exceeds max allowed delivery delay of %d milliseconds", dd.MaxDeliveryDelayInMillis))
	}
	return nil
}

// AdmitTopics implements broker.Admission: max topics per namespace.
func (e *Enforcer) AdmitTopics(ctx context.Context, nt broker.NewTopics) error {
	tn := nt.Name
	if !tn.IsPersistent() || systemTopic(tn) {
		return nil
	}
	limit := nt.Policy().MaxTopicsPerNamespace
	if limit <= 0 {
		return nil
	}
	existing, err := e.b.Registry().TopicsOfNamespace(ctx, tn.NamespaceName(), true, false)
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(existing))
	for _, name := range existing {
		if t, err := pulsarproto.ParseTopicName(name); err == nil && !systemTopic(t) {
			seen[name] = true
		}
	}
	if nt.N == 1 && seen[tn.String()] {
		return nil // a partition of an existing partitioned topic
	}
	if len(seen)+nt.N > limit {
		return broker.ErrTooManyTopics
	}
	return nil
}

// systemTopic reports whether tn (or its partitioned topic) is a system
// topic, not counted against maxTopicsPerNamespace.
func systemTopic(tn pulsarproto.TopicName) bool { return strings.HasPrefix(tn.Parent().Local, "__") }
