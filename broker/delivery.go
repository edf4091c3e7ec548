package broker

import (
	"fmt"

	"github.com/magnetar-mq/magnetar/policy"
)

// The delivery and admission policies the core enforces from a topic's
// effective policy (policy.ResolvedDelivery), as Pulsar does:
//
//   - maxMessageSize (topic level): a SEND whose metadata and payload are
//     larger is refused with SEND_ERROR NotAllowedError "Exceed maximum
//     message size", unless it is a chunk or the limit is not below the
//     broker's maxMessageSize (the frame limit already applies);
//   - delayed delivery: with maxDeliveryDelayInMillis > 0 a SEND whose
//     deliverAt is further than that past its publish time is refused
//     (NotAllowedError "Exceeds max allowed delivery delay of N
//     milliseconds"); inactive, deliverAt is ignored and messages go out
//     at once; active, a Shared or Key_Shared subscription holds a message
//     until deliverAt, never earlier (pulsar-client-go's suite requires
//     a 3 s delay to last 3 s against Pulsar's test broker; a non-strict
//     tick that releases a message a tick early failed it);
//   - maxSubscriptionsPerTopic: a SUBSCRIBE that would create one more
//     subscription is refused (NotAllowedError "Exceed the maximum number
//     of subscriptions of the topic: <topic>");
//   - autoSubscriptionCreation false: a durable SUBSCRIBE to a missing
//     subscription of a persistent topic is refused (SubscriptionNotFound
//     "Subscription does not exist").

// Pulsar's refusal texts.
const (
	msgExceedMaxMessageSize = "Exceed maximum message size"
	msgSubscriptionMissing  = "Subscription does not exist"
)

// refuseSend reports why the SEND of e (size bytes of metadata and
// payload) by p must be refused under the topic's delivery policies
// ("" to admit it). Replicator producers are exempt: the origin checked.
func refuseSend(p *producer, e *Entry, size int) string {
	if p.remote != "" {
		return ""
	}
	pol := p.topic.pol.Load()
	md := e.Meta()
	chunk := md != nil && md.NumChunksFromMsg > 1
	if m := pol.MaxMessageSize; m > 0 && !chunk && m < p.topic.b.cfg.MaxMessageSize && size > m {
		return msgExceedMaxMessageSize
	}
	dd := pol.DelayedDelivery
	if dd.Active && dd.MaxDeliveryDelayInMillis > 0 && md != nil && md.HasDeliverAtTime &&
		md.DeliverAtTime-int64(md.PublishTime) > dd.MaxDeliveryDelayInMillis {
		return fmt.Sprintf("Exceeds max allowed delivery delay of %d milliseconds", dd.MaxDeliveryDelayInMillis)
	}
	return ""
}

// admitNewSubscription refuses creating subscription req on t (t.mu
// held; the subscription does not exist yet).
func (t *topic) admitNewSubscription(req subscribeReq) error {
	pol := t.pol.Load()
	if req.durable && t.persistent() && !pol.AutoSubscriptionCreation {
		return &errSubscribe{codeSubscriptionNotFound, msgSubscriptionMissing}
	}
	if m := pol.MaxSubscriptionsPerTopic; m > 0 && len(t.mu.subs) >= m {
		return &errSubscribe{codeNotAllowed, "Exceed the maximum number of subscriptions of the topic: " + t.full}
	}
	return nil
}

// delayedDelivery returns the topic's delayed-delivery policy for its
// subscriptions.
func (t *topic) delayedDelivery() policy.DelayedDeliveryPolicies {
	if p := t.pol.Load(); p != nil {
		return p.DelayedDelivery
	}
	return policy.DelayedDeliveryPolicies{Active: true}
}
