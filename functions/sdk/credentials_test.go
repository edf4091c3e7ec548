package sdk

import (
	"os"
	"strconv"
	"testing"

	"github.com/magnetar-mq/magnetar/pulsarclient"
)

// TestCredentials: the SDK reads its credentials once from the pipe the
// worker names and turns them into the client's authentication and the
// state calls' bearer token; the parameter forms Pulsar's clients take
// all work, and a plugin it cannot speak is an error.
func TestCredentials(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		w.Write([]byte(`{"clientAuthenticationPlugin":"org.apache.pulsar.client.impl.auth.AuthenticationToken",
 "clientAuthenticationParameters":"{\"token\":\"tok-1\"}", "port": 4001}`))
		w.Close()
	}()
	t.Setenv("MAGNETAR_CONF_FD", strconv.Itoa(int(r.Fd())))
	c, err := readCredentials()
	if err != nil {
		t.Fatal(err)
	}
	var o pulsarclient.ClientOptions
	_, header, err := c.apply(&o)
	if err != nil || header != "Bearer tok-1" || o.Authentication == nil {
		t.Fatalf("apply: %q %v %v", header, o.Authentication, err)
	}
	if d, _ := o.Authentication.Data(); string(d) != "tok-1" {
		t.Fatalf("client token %q", d)
	}
	for params, want := range map[string]string{"token:tok-2": "tok-2", "tok-3": "tok-3", `{"token":"tok-4"}`: "tok-4"} {
		if got, err := (credentials{Plugin: "token", Params: params}).token(); err != nil || got != want {
			t.Errorf("params %q: %q %v", params, got, err)
		}
	}
	if _, err := (credentials{Plugin: "org.apache.pulsar.client.impl.auth.AuthenticationTls", Params: "x"}).token(); err == nil {
		t.Error("a TLS plugin was taken for a token")
	}
	if tok, err := (credentials{}).token(); err != nil || tok != "" {
		t.Errorf("no plugin: %q %v", tok, err)
	}
	t.Setenv("MAGNETAR_CONF_FD", "")
	if c, err := readCredentials(); err != nil || c.Plugin != "" {
		t.Errorf("no pipe: %+v %v", c, err)
	}
}
