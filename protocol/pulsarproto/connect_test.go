package pulsarproto

import (
	"testing"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// TestConnectAuthMethod: the name wins over the deprecated enum, which
// reads without its prefix, lowercased; neither gives "".
func TestConnectAuthMethod(t *testing.T) {
	name, athens := "token", pb.AuthMethod_AuthMethodAthens
	for _, c := range []struct {
		m    *pb.CommandConnect
		want string
	}{
		{&pb.CommandConnect{AuthMethodName: &name, AuthMethod: &athens}, "token"},
		{&pb.CommandConnect{AuthMethod: &athens}, "athens"},
		{&pb.CommandConnect{}, ""},
	} {
		if got := ConnectAuthMethod(c.m); got != c.want {
			t.Errorf("ConnectAuthMethod(%v) = %q, want %q", c.m, got, c.want)
		}
	}
}
