package broker

import (
	"regexp"
	"strconv"
	"testing"
)

// TestPublishLatencyMetric: every persistent entry stored is observed once
// in magnetar_broker_publish_latency_seconds (unbatched sends: one entry
// per message), with a positive sum; non-persistent sends are not.
func TestPublishLatencyMetric(t *testing.T) {
	tb := startBroker(t, nil)
	c := tb.client(t)
	produceN(t, c, "persistent://public/default/publat", 25, 100)
	produceN(t, c, "non-persistent://public/default/publat-np", 5, 100)
	code, body := httpDo(t, tb, "GET", "/metrics", "")
	if code != 200 {
		t.Fatalf("/metrics %d %s", code, body)
	}
	count := regexp.MustCompile(`(?m)^magnetar_broker_publish_latency_seconds_count (\S+)$`).FindStringSubmatch(body)
	sum := regexp.MustCompile(`(?m)^magnetar_broker_publish_latency_seconds_sum (\S+)$`).FindStringSubmatch(body)
	if count == nil || sum == nil {
		t.Fatalf("no publish latency histogram in /metrics:\n%s", body)
	}
	if count[1] != "25" {
		t.Errorf("publish latency count %s, want 25 (one per persistent entry)", count[1])
	}
	if s, _ := strconv.ParseFloat(sum[1], 64); s <= 0 {
		t.Errorf("publish latency sum %s, want > 0", sum[1])
	}
	if !regexp.MustCompile(`(?m)^magnetar_broker_publish_latency_seconds_bucket\{le="0\.001"\} \d+$`).MatchString(body) {
		t.Errorf("no 1 ms bucket")
	}
}
