package policy

import "testing"

// TestSubscriptionTypesOff: subscriptionTypesEnabled read as Pulsar
// reads it: exact enum names, spaces trimmed, other names ignored, no
// valid name leaving every type off.
func TestSubscriptionTypesOff(t *testing.T) {
	for _, c := range []struct {
		list string
		off  SubscriptionTypes
	}{
		{"Exclusive,Shared,Failover,Key_Shared", 0},
		{"Exclusive, Failover", 1<<1 | 1<<3},
		{"Key_Shared,shared,Nope", 1<<0 | 1<<1 | 1<<2},
		{"", AllSubscriptionTypes},
		{"bogus", AllSubscriptionTypes},
	} {
		if got := SubscriptionTypesOff(c.list); got != c.off {
			t.Errorf("%q: off %04b, want %04b", c.list, got, c.off)
		}
	}
	off := SubscriptionTypesOff("Exclusive")
	if off.Has(0) || !off.Has(1) || !off.Has(3) || off.Has(4) || off.Has(-1) {
		t.Errorf("Has of %04b wrong", off)
	}
}
