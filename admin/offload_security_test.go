package admin

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/policy"
)

// TestSecurityOffloadPolicyLimits: a tenant admin (not a superuser)
// choosing offload locations in namespace and topic policies may name
// only the directories and S3 endpoints the operator allowed. A path
// outside the root (also through "..") and an unlisted endpoint get 412
// with the reason; nothing is written to the path, the endpoint (a real
// listener counting requests) is never contacted and the policy stays
// unset. Allowed values work end to end: a topic offloads to the allowed
// S3 endpoint (gofakes3 behind a real listener), a namespace names a
// directory under the allowed root.
func TestSecurityOffloadPolicyLimits(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "stolen")
	var trapHits atomic.Int64
	trap := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		trapHits.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(trap.Close)
	be := s3mem.New()
	if err := be.CreateBucket("tiered"); err != nil {
		t.Fatal(err)
	}
	var s3Puts atomic.Int64
	s3h := gofakes3.New(be).Server()
	s3 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut || r.Method == http.MethodPost {
			s3Puts.Add(1)
		}
		s3h.ServeHTTP(w, r)
	}))
	t.Cleanup(s3.Close)

	k, _ := auth.NewSecretKey("HS256")
	sc := tokenSecurity(k)
	off := policy.DefaultOffload()
	off.DeletionLagMs = -1
	off.AllowedFileSystemRoots = []string{root}
	off.AllowedServiceEndpoints = []string{s3.URL}
	tb := startBrokerOpts(t, brokerOpts{
		cfg:  func(c *brokerconf.Config) { c.Security = sc; c.Offload = &off },
		mcfg: mledger.Config{MaxEntriesPerLedger: 5, MinLedgerRolloverTime: -1},
	})
	s := &secAdmin{testBroker: tb, key: k}
	s.call(t, "root", "PUT", "/admin/v2/tenants/acme", `{"adminRoles":["acme-admin"],"allowedClusters":["standalone"]}`, 204)
	s.call(t, "acme-admin", "PUT", "/admin/v2/namespaces/acme/ns", "", 204)
	const nsPath = "/admin/v2/namespaces/acme/ns/offloadPolicies"
	topic := "persistent://acme/ns/tiered"
	topicPath := "/admin/v2/persistent/acme/ns/tiered/offloadPolicies"

	// The topic must exist for topic policies.
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: s.url, OperationTimeout: 10 * time.Second,
		Authentication: pulsar.NewAuthenticationToken(s.token(t, "acme-admin")), Logger: plog.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := brokertest.Producer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})

	refused := []struct{ body, reason string }{
		{fmt.Sprintf(`{"managedLedgerOffloadDriver":"filesystem","fileSystemURI":"file://%s"}`, outside), "offloadAllowedFileSystemRoots"},
		{fmt.Sprintf(`{"managedLedgerOffloadDriver":"filesystem","fileSystemURI":"%s/../%s"}`, root, filepath.Base(outside)), "offloadAllowedFileSystemRoots"},
		{`{"managedLedgerOffloadDriver":"filesystem","fileSystemURI":"relative/dir"}`, "absolute"},
		{fmt.Sprintf(`{"managedLedgerOffloadDriver":"filesystem","fileSystemProfilePath":"%s/core-site.xml"}`, filepath.Dir(outside)), "fileSystemProfilePath"},
		{fmt.Sprintf(`{"managedLedgerOffloadDriver":"S3","s3ManagedLedgerOffloadBucket":"tiered","s3ManagedLedgerOffloadServiceEndpoint":%q}`, trap.URL), "offloadAllowedServiceEndpoints"},
		{fmt.Sprintf(`{"managedLedgerOffloadDriver":"aws-s3","managedLedgerOffloadBucket":"tiered","managedLedgerOffloadServiceEndpoint":%q}`, trap.URL+"/"), "offloadAllowedServiceEndpoints"},
	}
	for _, path := range []string{nsPath, topicPath} {
		for _, r := range refused {
			body := s.call(t, "acme-admin", "POST", path, r.body, http.StatusPreconditionFailed)
			if !strings.Contains(body, r.reason) {
				t.Errorf("POST %s %s: reason %q lacks %q", path, r.body, body, r.reason)
			}
		}
		if got := strings.TrimSpace(s.call(t, "acme-admin", "GET", path, "", http.StatusNoContent)); got != "" {
			t.Errorf("GET %s after refusals: %s", path, got)
		}
	}

	// Traffic that would use a policy: nothing lands outside the root or
	// at the trap.
	send := func(n int) pulsar.MessageID {
		var last pulsar.MessageID
		for i := range n {
			id, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("m-%d", i))})
			if err != nil {
				t.Fatal(err)
			}
			last = id
		}
		return last
	}
	last := send(17)
	lastJSON := fmt.Sprintf(`{"ledgerId":%d,"entryId":%d}`, last.LedgerID(), last.EntryID())
	s.call(t, "acme-admin", "PUT", "/admin/v2/persistent/acme/ns/tiered/offload", lastJSON, http.StatusPreconditionFailed)
	if _, err := os.Stat(outside); !os.IsNotExist(err) {
		t.Errorf("the refused directory exists: %v", err)
	}
	if n := trapHits.Load(); n != 0 {
		t.Fatalf("the refused endpoint was contacted %d times", n)
	}

	// Allowed: the namespace writes under the root; the topic offloads to
	// the allowed endpoint (the topic's policy wins over the namespace's).
	s.call(t, "acme-admin", "POST", nsPath, fmt.Sprintf(`{"managedLedgerOffloadDriver":"filesystem","fileSystemURI":"file://%s/acme"}`, root), 204)
	s.call(t, "acme-admin", "POST", topicPath, fmt.Sprintf(
		`{"managedLedgerOffloadDriver":"S3","s3ManagedLedgerOffloadBucket":"tiered","s3ManagedLedgerOffloadServiceEndpoint":%q,"s3ManagedLedgerOffloadRegion":"us-east-1"}`, s3.URL+"/"), 204)
	s.call(t, "acme-admin", "PUT", "/admin/v2/persistent/acme/ns/tiered/offload", lastJSON, 204)
	deadline := time.Now().Add(30 * time.Second)
	var st struct {
		Status    string `json:"status"`
		LastError string `json:"lastError"`
	}
	for {
		s.getJSON(t, "acme-admin", "/admin/v2/persistent/acme/ns/tiered/offload", &st)
		if st.Status != "RUNNING" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("offload did not finish")
		}
		time.Sleep(20 * time.Millisecond) // REST polling: no push signal
	}
	if st.Status != "SUCCESS" || s3Puts.Load() == 0 {
		t.Fatalf("offload to the allowed endpoint: %+v, %d S3 writes", st, s3Puts.Load())
	}
	objs, err := be.ListBucket("tiered", nil, gofakes3.ListBucketPage{})
	if err != nil || len(objs.Contents) == 0 {
		t.Fatalf("allowed S3 endpoint holds nothing: %v %+v", err, objs)
	}
	if n := trapHits.Load(); n != 0 {
		t.Fatalf("the refused endpoint was contacted %d times", n)
	}
	// The offloaded ledgers read back.
	r, err := c.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := range 17 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		m, err := r.Next(ctx)
		cancel()
		if err != nil || string(m.Payload()) != fmt.Sprintf("m-%d", i) {
			t.Fatalf("read %d: %v %q", i, err, m)
		}
	}
}
