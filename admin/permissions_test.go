package admin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/mledger/memstore"
)

// TestPermissionsAuthorizationOff: with authorization off the permission
// endpoints store and answer grants as Pulsar's do (no 501), in the
// namespace's policies; a broker restarted on the same metadata with
// authorization on enforces what was granted.
func TestPermissionsAuthorizationOff(t *testing.T) {
	opts := brokerOpts{metaDir: t.TempDir(), ledgers: memstore.New()}
	tb := startBrokerOpts(t, opts)
	const ns = "/admin/v2/namespaces/acme/ns"
	mustCall := func(method, path, body string, want int) string {
		t.Helper()
		code, b := httpDo(t, tb, method, path, body)
		if code != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, code, b, want)
		}
		return b
	}
	mustCall("PUT", "/admin/v2/tenants/acme", `{"adminRoles":["acme-admin"],"allowedClusters":["standalone"]}`, 204)
	mustCall("PUT", ns, "", 204)
	mustCall("POST", ns+"/permissions/bob", `["produce"]`, 204)
	mustCall("POST", ns+"/permissions/carol", `["consume"]`, 204)
	mustCall("POST", ns+"/permissions/dave", `["consume"]`, 204)
	mustCall("DELETE", ns+"/permissions/dave", "", 204)
	mustCall("POST", ns+"/permissions/subscription/carol-sub", `["carol","erin"]`, 204)
	mustCall("DELETE", ns+"/permissions/carol-sub/erin", "", 204)
	mustCall("POST", ns+"/subscriptionAuthMode", `"Prefix"`, 204)
	mustCall("POST", "/admin/v2/persistent/acme/ns/only-frank/permissions/frank", `["produce"]`, 204)
	mustCall("POST", "/admin/v2/persistent/acme/ns/only-frank/permissions/gina", `["produce"]`, 204)
	mustCall("DELETE", "/admin/v2/persistent/acme/ns/only-frank/permissions/gina", "", 204)

	// Read back as stored: Pulsar's shapes.
	var nsPerms map[string][]string
	if err := json.Unmarshal([]byte(mustCall("GET", ns+"/permissions", "", 200)), &nsPerms); err != nil {
		t.Fatal(err)
	}
	if len(nsPerms) != 2 || strings.Join(nsPerms["bob"], ",") != "produce" || strings.Join(nsPerms["carol"], ",") != "consume" {
		t.Fatalf("namespace permissions %v", nsPerms)
	}
	if got := strings.TrimSpace(mustCall("GET", ns+"/permissions/subscription", "", 200)); got != `{"carol-sub":["carol"]}` {
		t.Fatalf("subscription permissions %s", got)
	}
	if got := strings.TrimSpace(mustCall("GET", ns+"/subscriptionAuthMode", "", 200)); got != `"Prefix"` {
		t.Fatalf("subscription auth mode %s", got)
	}
	var topicPerms map[string][]string
	if err := json.Unmarshal([]byte(mustCall("GET", "/admin/v2/persistent/acme/ns/only-frank/permissions", "", 200)), &topicPerms); err != nil {
		t.Fatal(err)
	}
	if strings.Join(topicPerms["frank"], ",") != "produce" || topicPerms["gina"] != nil || strings.Join(topicPerms["bob"], ",") != "produce" {
		t.Fatalf("topic permissions %v", topicPerms)
	}
	// The namespace's policies (read through the policy store) hold
	// them: the write dropped its cached copy.
	pol := mustCall("GET", ns, "", 200)
	if !strings.Contains(pol, `"frank":["produce"]`) || !strings.Contains(pol, `"subscription_auth_mode":"Prefix"`) {
		t.Fatalf("namespace policies %s", pol)
	}
	// Bad input is still refused, not stored.
	mustCall("POST", ns+"/permissions/bob", `["fly"]`, 412)
	mustCall("POST", ns+"/permissions/bob", `not json`, 400)
	mustCall("POST", "/admin/v2/namespaces/acme/nope/permissions/bob", `["produce"]`, 404)

	// Authorization off: nothing is enforced yet; anyone produces.
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: tb.url, OperationTimeout: 5 * time.Second, Logger: plog.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://acme/ns/open"})
	if err != nil {
		t.Fatalf("producer with authorization off: %v", err)
	}
	p.Close()
	c.Close()

	// Restart on the same metadata with authorization on: the grants
	// made with it off are enforced.
	tb.stop()
	k, _ := auth.NewSecretKey("HS256")
	opts.cfg = func(c *brokerconf.Config) { c.Security = tokenSecurity(k) }
	s := &secAdmin{testBroker: startBrokerOpts(t, opts), key: k}
	canProduce := func(role, topic string) error {
		c, err := pulsar.NewClient(pulsar.ClientOptions{URL: s.url, OperationTimeout: 5 * time.Second,
			Authentication: pulsar.NewAuthenticationToken(s.token(t, role)), Logger: plog.DefaultNopLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, SendTimeout: 5 * time.Second})
		if err != nil {
			return err
		}
		defer p.Close()
		_, err = p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("x")})
		return err
	}
	canConsume := func(role, topic, sub string) error {
		c, err := pulsar.NewClient(pulsar.ClientOptions{URL: s.url, OperationTimeout: 5 * time.Second,
			Authentication: pulsar.NewAuthenticationToken(s.token(t, role)), Logger: plog.DefaultNopLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub})
		if err != nil {
			return err
		}
		cons.Close()
		return nil
	}
	if err := canProduce("bob", "persistent://acme/ns/a"); err != nil {
		t.Fatalf("bob, granted produce on the namespace with authorization off: %v", err)
	}
	if err := canProduce("dave", "persistent://acme/ns/a"); err == nil {
		t.Fatal("dave, whose grant was revoked, produced")
	}
	if err := canProduce("frank", "persistent://acme/ns/only-frank"); err != nil {
		t.Fatalf("frank, granted produce on the topic: %v", err)
	}
	if err := canProduce("frank", "persistent://acme/ns/a"); err == nil {
		t.Fatal("frank produced to a topic he has no grant on")
	}
	if err := canProduce("gina", "persistent://acme/ns/only-frank"); err == nil {
		t.Fatal("gina, whose topic grant was revoked, produced")
	}
	if err := canConsume("carol", "persistent://acme/ns/a", "carol-sub"); err != nil {
		t.Fatalf("carol on carol-sub: %v", err)
	}
	// Prefix mode: carol's subscription must start with her role.
	if err := canConsume("carol", "persistent://acme/ns/a", "other-sub"); err == nil {
		t.Fatal("carol subscribed as other-sub under the Prefix mode")
	}
	if err := canConsume("bob", "persistent://acme/ns/a", "bob-sub"); err == nil {
		t.Fatal("bob, granted only produce, consumed")
	}
	// Tenant admins manage grants; a grantee does not.
	s.call(t, "bob", "POST", ns+"/permissions/bob", `["consume"]`, 403)
	s.call(t, "bob", "GET", ns+"/permissions", "", 403)
	s.call(t, "acme-admin", "GET", ns+"/permissions", "", 200)
}
