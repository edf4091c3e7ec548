package auth

import "testing"

// TestBrokerClientSet: the broker's client identity changes only to
// settings that parse; each change is a new generation, a repeat is not.
func TestBrokerClientSet(t *testing.T) {
	c := NewBrokerClient(&Config{BrokerClientAuthenticationPlugin: "token", BrokerClientAuthenticationParameters: "token:one"})
	s0, g0 := c.Current()
	if s0.Params != "token:one" {
		t.Fatalf("start: %+v", s0)
	}
	if err := c.Set(BrokerClientSettings{Plugin: "org.apache.pulsar.client.impl.auth.AuthenticationTls", Params: "token:two"}); err == nil {
		t.Fatal("a tls plugin with token parameters was taken")
	}
	if s, g := c.Current(); s != s0 || g != g0 {
		t.Fatalf("a refused Set changed the settings: %+v %d", s, g)
	}
	next := BrokerClientSettings{Plugin: "token", Params: "token:two", TLSEnabled: true}
	if err := c.Set(next); err != nil {
		t.Fatal(err)
	}
	s1, g1 := c.Current()
	if s1 != next || g1 == g0 {
		t.Fatalf("after Set: %+v gen %d (was %d)", s1, g1, g0)
	}
	if ca, err := c.Auth(); err != nil || ca.Method != MethodToken {
		t.Fatalf("auth %+v %v", ca, err)
	} else if d, _ := ca.Data(); string(d) != "two" {
		t.Fatalf("token %q", d)
	}
	if err := c.Set(next); err != nil {
		t.Fatal(err)
	}
	if _, g := c.Current(); g != g1 {
		t.Fatalf("the same settings again made generation %d (was %d)", g, g1)
	}
	var none *BrokerClient
	if s, g := none.Current(); s != (BrokerClientSettings{}) || g != 0 {
		t.Fatalf("nil holder: %+v %d", s, g)
	}
}
