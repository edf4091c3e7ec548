package broker

import (
	"testing"

	"github.com/magnetar-mq/magnetar/policy"
)

// TestPolicyChangeDuringTopicLoad changes the namespace's policies in
// the window where a loading topic has resolved its policies but is not
// yet listed by loadedTopics, so the change's notification passes it by.
// The load must still end with the new policies: a TTL is applied in
// place, a retention change reopens the topic with it.
func TestPolicyChangeDuringTopicLoad(t *testing.T) {
	tb := startBroker(t, nil)
	ctx := ctxT(t)
	const ns = "public/default"
	cases := []struct {
		name   string
		mutate func(*policy.Policies) error
		check  func(*policy.Resolved) bool
	}{
		{"ttl", func(p *policy.Policies) error {
			ttl := 7
			p.MessageTTLInSeconds = &ttl
			return nil
		}, func(r *policy.Resolved) bool { return r.MessageTTLSeconds == 7 }},
		{"retention", func(p *policy.Policies) error {
			p.RetentionPolicies = &policy.RetentionPolicies{RetentionTimeInMinutes: 11, RetentionSizeInMB: 13}
			return nil
		}, func(r *policy.Resolved) bool {
			return r.Retention != nil && r.Retention.RetentionTimeInMinutes == 11 && r.Retention.RetentionSizeInMB == 13
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tn, err := parseTopicName("persistent://" + ns + "/" + newTopicName("polrace-"+c.name))
			if err != nil {
				t.Fatal(err)
			}
			fired := 0
			testHookPoliciesResolved = func(got topicName) {
				if got != tn || fired > 0 {
					return
				}
				fired++
				if err := tb.policies.Update(ctx, ns, c.mutate); err != nil {
					t.Error(err)
				}
			}
			defer func() { testHookPoliciesResolved = nil }()
			tp, err := tb.getTopic(ctx, tn, true)
			if err != nil {
				t.Fatal(err)
			}
			if fired != 1 {
				t.Fatalf("hook ran %d times, want 1", fired)
			}
			if !c.check(tp.pol.Load()) {
				t.Fatalf("topic kept the policies resolved before the change: %+v", *tp.pol.Load())
			}
			if tp.isClosed() {
				t.Fatal("getTopic returned a closed topic")
			}
			// The topic the broker lists is the one returned.
			if got := tb.lookupTopic(tn.String()); got != tp {
				t.Fatalf("loaded topic %p, returned %p", got, tp)
			}
		})
	}
}
