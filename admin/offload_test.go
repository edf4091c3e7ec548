package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/topicstats"
)

// TestOffloadAdmin: namespace offload policies (set, get, validation,
// remove; the older threshold and lag endpoints through pulsaradmin),
// the topic offload trigger and status, and internalStats flags.
func TestOffloadAdmin(t *testing.T) {
	tierRoot := t.TempDir()
	tier := filepath.Join(tierRoot, "tier")
	// The namespace may name a directory under the operator's root.
	off := policy.DefaultOffload()
	off.AllowedFileSystemRoots = []string{tierRoot}
	tb := startBrokerOpts(t, brokerOpts{mcfg: mledger.Config{MaxEntriesPerLedger: 10, MinLedgerRolloverTime: -1},
		cfg: func(c *brokerconf.Config) { c.Offload = &off }})
	ac := adminClient(t, tb)
	const ns = "/admin/v2/namespaces/public/default"

	name := uniqueName("off")
	topic := "persistent://public/default/" + name
	tn, _ := utils.GetTopicName(topic)
	c := tb.client(t)
	pr, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 35 {
		if _, err := pr.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("m-%d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	last, err := ac.Topics().GetLastMessageID(*tn)
	if err != nil {
		t.Fatal(err)
	}
	// No driver anywhere: 412 with a reason.
	if err := ac.Topics().Offload(*tn, last); err == nil || !strings.Contains(err.Error(), "not configured") {
		t.Fatalf("offload without a driver: %v", err)
	}
	if s, err := ac.Topics().OffloadStatus(*tn); err != nil || s.Status != utils.NOTRUN {
		t.Fatalf("status before: %+v %v", s, err)
	}

	for _, bad := range []string{
		`{"managedLedgerOffloadDriver":"azureblob"}`,
		`{"managedLedgerOffloadDriver":"S3","managedLedgerOffloadThresholdInBytes":-2}`,
		`{"managedLedgerOffloadDriver":"S3","managedLedgerOffloadedReadPriority":"nearest"}`,
		`{"managedLedgerOffloadDriver":"S3","s3ManagedLedgerOffloadMaxBlockSizeInBytes":1024}`,
		`{"managedLedgerOffloadDriver":`,
	} {
		if code, body := httpDo(t, tb, "POST", ns+"/offloadPolicies", bad); code != http.StatusPreconditionFailed && code != http.StatusBadRequest {
			t.Fatalf("%s: %d %s", bad, code, body)
		}
	}
	pol := fmt.Sprintf(`{"managedLedgerOffloadDriver":"filesystem","fileSystemURI":"file://%s",
		"managedLedgerOffloadDeletionLagInMillis":-1,"managedLedgerOffloadDriverMetadata":{"x":"y"}}`, tier)
	if code, body := httpDo(t, tb, "POST", ns+"/offloadPolicies", pol); code/100 != 2 {
		t.Fatalf("set offload policies: %d %s", code, body)
	}
	code, body := httpDo(t, tb, "GET", ns+"/offloadPolicies", "")
	var got map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &got) != nil || got["managedLedgerOffloadDriver"] != "filesystem" ||
		got["managedLedgerOffloadDeletionLagInMillis"] != float64(-1) {
		t.Fatalf("get offload policies: %d %s", code, body)
	}
	if err := ac.Topics().Offload(*tn, last); err != nil {
		t.Fatalf("offload: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	var s utils.OffloadProcessStatus
	for {
		if s, err = ac.Topics().OffloadStatus(*tn); err != nil {
			t.Fatal(err)
		}
		if s.Status != utils.RUNNING {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("offload did not finish")
		}
		time.Sleep(10 * time.Millisecond) // REST polling: no push signal
	}
	st, err := ac.Topics().GetInternalStats(*tn)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != utils.SUCCESS || s.FirstUnOffloadedMessage.LedgerID != st.Ledgers[3].LedgerID {
		t.Fatalf("status %+v, ledgers %+v", s, st.Ledgers)
	}
	for i, l := range st.Ledgers {
		if l.Offloaded != (i < 3) {
			t.Fatalf("ledger %d offloaded=%v", i, l.Offloaded)
		}
	}
	code, body = httpDo(t, tb, "GET", "/admin/v2/persistent/public/default/"+name+"/stats", "")
	var ts topicstats.TopicStats
	if code != 200 || json.Unmarshal([]byte(body), &ts) != nil || ts.OffloadedStorageSize <= 0 || ts.LastOffloadLedgerID != st.Ledgers[2].LedgerID {
		t.Fatalf("topic stats: %d %s", code, body)
	}
	// A bad message id: 412.
	if err := ac.Topics().Offload(*tn, utils.MessageID{LedgerID: 1 << 40, EntryID: 0}); err == nil || !strings.Contains(err.Error(), "412") {
		t.Fatalf("offload to a bad id: %v", err)
	}

	// The older separate fields.
	nsn, _ := utils.GetNamespaceName("public/default")
	if v, err := ac.Namespaces().GetOffloadThreshold(*nsn); err != nil || v != -1 {
		t.Fatalf("default threshold: %v %v", v, err)
	}
	if err := ac.Namespaces().SetOffloadThreshold(*nsn, 1<<30); err != nil {
		t.Fatal(err)
	}
	if v, err := ac.Namespaces().GetOffloadThreshold(*nsn); err != nil || v != 1<<30 {
		t.Fatalf("threshold: %v %v", v, err)
	}
	if err := ac.Namespaces().SetOffloadDeleteLag(*nsn, 3600000); err != nil {
		t.Fatal(err)
	}
	if v, err := ac.Namespaces().GetOffloadDeleteLag(*nsn); err != nil || v != 3600000 {
		t.Fatalf("lag: %v %v", v, err)
	}
	if err := ac.Namespaces().ClearOffloadDeleteLag(*nsn); err != nil {
		t.Fatal(err)
	}
	if code, body := httpDo(t, tb, "PUT", ns+"/offloadThreshold", "-5"); code != http.StatusPreconditionFailed {
		t.Fatalf("threshold -5: %d %s", code, body)
	}
	if code, body := httpDo(t, tb, "DELETE", ns+"/removeOffloadPolicies", ""); code/100 != 2 {
		t.Fatalf("remove: %d %s", code, body)
	}
	if code, body := httpDo(t, tb, "GET", ns+"/offloadPolicies", ""); code != http.StatusNoContent || body != "" {
		t.Fatalf("after remove: %d %s", code, body)
	}
	pr.Close()
}
