package console

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/bookieinfo"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/topichistory"
	"github.com/magnetar-mq/magnetar/topicstats"
)

func TestNiceCeilAndFormat(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{
		{0, 1}, {-5, 1}, {math.NaN(), 1}, {math.Inf(1), 1}, {0.3, 0.5}, {1, 1}, {1.01, 2}, {3, 5}, {7, 10}, {20, 20}, {21, 50},
		{math.MaxInt64, 1e19},
	} {
		if got := niceCeil(c.in); math.Abs(got-c.want) > c.want*1e-9 {
			t.Errorf("niceCeil(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	for in, want := range map[float64]string{0: "0", 12: "12", 1.5: "1.50", 1500: "1.5k", 2e6: "2.0M", 3e9: "3.0G", 9.2e18: "9200000.0T"} {
		if got := human(in); got != want {
			t.Errorf("human(%v) = %q, want %q", in, got, want)
		}
	}
	if got := bytesIEC(1536); got != "1.5 KiB" {
		t.Errorf("bytesIEC(1536) = %q", got)
	}
	if got := bytesIEC(math.MaxInt64); got != "8.0 PiB" && !strings.HasSuffix(got, "PiB") {
		t.Errorf("bytesIEC(max int64) = %q", got)
	}
}

func TestNames(t *testing.T) {
	if b, i, ok := splitPartition("persistent://t/n/x-partition-12"); !ok || b != "persistent://t/n/x" || i != 12 {
		t.Errorf("splitPartition = %q %d %v", b, i, ok)
	}
	for _, bad := range []string{"persistent://t/n/x", "persistent://t/n/x-partition-", "persistent://t/n/x-partition--1", "persistent://t/n/x-partition-99999999999999999999"} {
		if _, _, ok := splitPartition(bad); ok {
			t.Errorf("splitPartition(%q) accepted", bad)
		}
	}
	if got := topicHref("persistent://t/n/a b?c"); got != "/console/topics/persistent/t/n/a%20b%3Fc" {
		t.Errorf("topicHref = %q", got)
	}
	if got := topicHref("garbage"); got != "" {
		t.Errorf("topicHref(garbage) = %q", got)
	}
}

func TestChartGeometry(t *testing.T) {
	now := time.Now().UnixMilli()
	h := []topichistory.Sample{
		{At: now - 20*60*1000, MsgRateIn: 1e9}, // outside the window: ignored, also for the top
		{At: now - window.Milliseconds()/2, MsgRateIn: 10, MsgBacklog: 4},
		{At: now, MsgRateIn: 20, MsgRateOut: 5, MsgBacklog: 8},
	}
	cs := charts(h)
	if len(cs) != 4 {
		t.Fatalf("%d charts, want 4", len(cs))
	}
	rate := cs[0]
	if rate.Max != "20" || rate.Series[0].N != 2 {
		t.Fatalf("rate chart max %s, %d points", rate.Max, rate.Series[0].N)
	}
	pts := strings.Fields(rate.Series[0].Points)
	// Middle of the window at half height; now at the right edge, top.
	var x0, y0, x1, y1 float64
	fmt.Sscanf(pts[0], "%g,%g", &x0, &y0)
	fmt.Sscanf(pts[1], "%g,%g", &x1, &y1)
	if math.Abs(x0-300) > 2 || y0 != 75 || math.Abs(x1-600) > 2 || y1 != 0 {
		t.Fatalf("points %v", pts)
	}
	if cs[2].Series[0].Last != "8" {
		t.Fatalf("backlog last %q", cs[2].Series[0].Last)
	}
	// No samples: empty polylines, a top of 1.
	for _, c := range charts(nil) {
		if c.Max != "1" || c.Series[0].N != 0 {
			t.Fatalf("empty chart %+v", c)
		}
	}
}

func TestBookieRows(t *testing.T) {
	rows := bookieRows([]bookieinfo.Status{
		{BookieID: "b2", ReadOnly: true},
		{BookieID: "b1", Stats: map[string]float64{statDiskTotal: 1000, statDiskUsed: 250, statJournalSyncAvg: 1.5}},
	})
	if rows[0].ID != "b1" || !rows[0].HasDisk || rows[0].DiskPercent != 25 || !rows[0].HasJournal || rows[0].HasAddLatency {
		t.Fatalf("row %+v", rows[0])
	}
	if !rows[1].ReadOnly || rows[1].HasDisk {
		t.Fatalf("row %+v", rows[1])
	}
}

// fakeSource is a Source over a real policy store that knows no topics:
// every topic is missing.
type fakeSource struct {
	pol *policy.Store
}

func (f fakeSource) ClusterName() string                             { return "c1" }
func (f fakeSource) WebURL() string                                  { return "http://x" }
func (f fakeSource) ServiceURL() string                              { return "pulsar://x" }
func (f fakeSource) Policies() *policy.Store                         { return f.pol }
func (f fakeSource) Bookies() []bookieinfo.Status                    { return nil }
func (f fakeSource) TopicHistory(string) []topichistory.Sample       { return nil }
func (f fakeSource) HistoryInterval() time.Duration                  { return time.Second }
func (f fakeSource) Cluster() *cluster.Service                       { return nil }
func (f fakeSource) Partitions(context.Context, string) (int, error) { return 0, nil }
func (f fakeSource) TopicExists(context.Context, string) (bool, error) {
	return false, nil
}
func (f fakeSource) LoadedTopicStats(string) (topicstats.TopicStats, bool) {
	return topicstats.TopicStats{}, false
}
func (f fakeSource) TopicStats(context.Context, string) (topicstats.TopicStats, error) {
	return topicstats.TopicStats{}, broker.ErrTopicNotFound
}

func TestErrorPages(t *testing.T) {
	st, err := embedded.Open(filepath.Join(t.TempDir(), "m.db"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pol := policy.NewStore(st, "c1")
	ctx := context.Background()
	if err := pol.CreateTenant(ctx, "acme", policy.TenantInfo{AllowedClusters: []string{"c1"}}); err != nil {
		t.Fatal(err)
	}
	if err := pol.CreateNamespace(ctx, "acme/app", nil); err != nil {
		t.Fatal(err)
	}
	rt := httpapi.NewTable()
	if _, err := Register(rt, fakeSource{pol: pol}, nil); err != nil {
		t.Fatal(err)
	}
	h, err := rt.Handler(httpapi.Guard{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for path, want := range map[string]int{
		"/console":                                      200,
		"/console/tenants/acme":                         200,
		"/console/tenants/nobody":                       404,
		"/console/namespaces/acme/app":                  200,
		"/console/namespaces/acme/none":                 404,
		"/console/topics/persistent/acme/app/x":         404,
		"/console/topics/persistent/acme/none/x":        404,
		"/console/topics/other/acme/app/x":              404,
		"/console/topics/persistent/acme/app/x/history": 404,
		"/console/what":                                 404,
		"/console/static/console.js":                    200,
		"/console/static/nope.js":                       404,
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d: %.200s", path, resp.StatusCode, want, body)
		}
		if want == 404 && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") && !strings.Contains(string(body), `data-status="404"`) {
			t.Errorf("GET %s: 404 without the error page: %.300s", path, body)
		}
	}
}

func (f fakeSource) TopicsOfNamespace(context.Context, string, bool, bool) ([]string, error) {
	return nil, nil
}
func (f fakeSource) PartitionedTopics(context.Context, string, string) ([]string, error) {
	return nil, nil
}
