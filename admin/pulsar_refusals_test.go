package admin

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/rest"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// TestNamespacePolicyRefusalsArePulsars: a namespace policy value Pulsar
// refuses is refused with Pulsar's status and reason (what pulsaradmin
// shows its user), nothing is stored, and the edge values Pulsar takes
// (0) are taken.
func TestNamespacePolicyRefusalsArePulsars(t *testing.T) {
	tb, ac := startAdmin(t)
	ns := newNamespace(t, tb)
	name, _ := utils.GetNamespaceName(ns)
	nss := ac.Namespaces()
	refused := func(what string, err error, code int, reason string) {
		t.Helper()
		var re rest.Error
		if !errors.As(err, &re) || re.Code != code || re.Reason != reason {
			t.Errorf("%s: %v, want %d %q", what, err, code, reason)
		}
	}
	two := 2
	for _, c := range []struct {
		cfg    utils.TopicAutoCreationConfig
		reason string
	}{
		{utils.TopicAutoCreationConfig{Allow: true, Type: utils.Partitioned}, "[defaultNumPartitions] cannot be null when the type is partitioned."},
		{utils.TopicAutoCreationConfig{Allow: true, Type: utils.Partitioned, Partitions: new(int)}, "[defaultNumPartitions] cannot be less than 1 for partition type."},
		{utils.TopicAutoCreationConfig{Allow: true, Type: utils.NonPartitioned, Partitions: &two}, "[defaultNumPartitions] is not allowed to be set when the type is non-partition."},
		{utils.TopicAutoCreationConfig{Allow: true, Type: "sharded"}, "Unknown topic type [sharded]"},
		{utils.TopicAutoCreationConfig{Allow: true}, "Unknown topic type []"},
	} {
		refused("autoTopicCreation", nss.SetTopicAutoCreation(*name, c.cfg), http.StatusPreconditionFailed,
			"Invalid configuration for autoTopicCreationOverride. the detail is "+c.reason)
	}
	// An override that allows creation and sends no type: Java's null.
	if out := mustHTTP(t, tb, "POST", "/admin/v2/namespaces/"+ns+"/autoTopicCreation", `{"allowAutoTopicCreation":true}`, http.StatusPreconditionFailed); !strings.Contains(out, "Unknown topic type [null]") {
		t.Errorf("override without a type: %s", out)
	}
	if got, err := nss.GetTopicAutoCreation(*name); err != nil || got != nil {
		t.Fatalf("a refused override was stored: %+v %v", got, err)
	}
	// Pulsar checks an override only while it allows creation.
	if err := nss.SetTopicAutoCreation(*name, utils.TopicAutoCreationConfig{Allow: false, Type: utils.Partitioned}); err != nil {
		t.Fatalf("disallowing override: %v", err)
	}
	if err := nss.SetTopicAutoCreation(*name, utils.TopicAutoCreationConfig{Allow: true, Type: utils.Partitioned, Partitions: &two}); err != nil {
		t.Fatalf("partitioned override: %v", err)
	}
	if got, err := nss.GetTopicAutoCreation(*name); err != nil || got == nil || got.Partitions == nil || *got.Partitions != 2 {
		t.Fatalf("override read back: %+v %v", got, err)
	}

	refused("subscriptionExpirationTime", nss.SetSubscriptionExpirationTime(*name, -60), http.StatusPreconditionFailed,
		"Invalid value for subscription expiration time")
	refused("offloadThresholdInSeconds", nss.SetOffloadThresholdInSeconds(*name, -60), http.StatusPreconditionFailed,
		"Invalid value for offloadThresholdInSecond")
	refused("maxTopicsPerNamespace", nss.SetMaxTopicsPerNamespace(*name, -1), http.StatusPreconditionFailed,
		"maxTopicsPerNamespace must be 0 or more")
	refused("maxProducersPerTopic", nss.SetMaxProducersPerTopic(*name, -1), http.StatusPreconditionFailed,
		"maxProducersPerTopic must be 0 or more")
	refused("messageTTL", nss.SetNamespaceMessageTTL(ns, -1), http.StatusPreconditionFailed, "Invalid value for message TTL")
	if v, err := nss.GetSubscriptionExpirationTime(*name); err != nil || v != -1 {
		t.Fatalf("a refused expiration time was stored: %d %v", v, err)
	}
	if v, err := nss.GetMaxTopicsPerNamespace(*name); err != nil || v != 0 {
		t.Fatalf("a refused topic limit was stored: %d %v", v, err)
	}
	// 0 is a value Pulsar takes: never expire, no limit, offload at once.
	if err := nss.SetSubscriptionExpirationTime(*name, 0); err != nil {
		t.Fatal(err)
	}
	if v, err := nss.GetSubscriptionExpirationTime(*name); err != nil || v != 0 {
		t.Fatalf("expiration time 0 read back: %d %v", v, err)
	}
	if err := nss.SetMaxTopicsPerNamespace(*name, 0); err != nil {
		t.Fatal(err)
	}
	if err := nss.SetOffloadThresholdInSeconds(*name, 0); err != nil {
		t.Fatal(err)
	}
	if v, err := nss.GetOffloadThresholdInSeconds(*name); err != nil || v != 0 {
		t.Fatalf("offload threshold 0 read back: %d %v", v, err)
	}
}

// TestMissingTenantIsNotFoundBeforeRights: as in Pulsar, a call on a
// tenant that does not exist answers 404 "Tenant does not exist" before
// the caller's rights on it are looked at (a tenant's existence is not
// secret, docs/security.md); on an existing tenant a role without rights
// is still refused (403), and a superuser gets the route's own answer.
func TestMissingTenantIsNotFoundBeforeRights(t *testing.T) {
	s := startSecAdmin(t)
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/admin/v2/namespaces/%s/ns/schemaCompatibilityStrategy", `"FULL"`},
		{"POST", "/admin/v2/namespaces/%s/ns/autoTopicCreation", `{"allowAutoTopicCreation":true,"topicType":"non-partitioned"}`},
		{"GET", "/admin/v2/tenants/%s", ""},
		{"PUT", "/admin/v2/namespaces/%s/other", ""},
		{"GET", "/admin/v2/namespaces/%s/ns/topics", ""},
	} {
		body := s.call(t, "mallory", c.method, fmt.Sprintf(c.path, "nope"), c.body, http.StatusNotFound)
		if !strings.Contains(body, `"Tenant does not exist"`) {
			t.Errorf("%s %s: %s", c.method, c.path, body)
		}
		s.call(t, "mallory", c.method, fmt.Sprintf(c.path, "acme"), c.body, http.StatusForbidden)
	}
	body := s.call(t, "root", "POST", "/admin/v2/namespaces/nope/ns/schemaCompatibilityStrategy", `"FULL"`, http.StatusNotFound)
	if !strings.Contains(body, "does not exist") {
		t.Errorf("superuser on a missing tenant: %s", body)
	}
}
