package e2e

import (
	"strings"
	"testing"
)

// TestAdminWatchE2E: `magnetar admin topics stats --watch` against a
// standalone prints refreshed tables; bad flags and a missing topic fail.
func TestAdminWatchE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	p := startStandalone(t, t.TempDir())
	if code, _, body := httpDo(t, "PUT", p.http+"/admin/v2/persistent/public/default/watched", "", false); code != 204 {
		t.Fatalf("create topic: %d %s", code, body)
	}
	out := runAdmin(t, p, false, "topics", "stats", "public/default/watched", "--watch", "--watch-interval", "50ms", "--watch-count", "3")
	if c := strings.Count(out, "Every 50ms: magnetar admin topics stats public/default/watched"); c != 3 {
		t.Fatalf("%d frames, want 3:\n%s", c, out)
	}
	if c := strings.Count(out, "msgInCounter"); c != 3 {
		t.Fatalf("%d stats tables, want 3:\n%s", c, out)
	}
	if out := runAdmin(t, p, false, "topics", "stats-internal", "public/default/watched", "-w", "--watch-interval", "10ms", "--watch-count", "2"); strings.Count(out, "Every 10ms") != 2 || strings.Count(out, "entriesAddedCounter") != 2 {
		t.Fatalf("stats-internal -w:\n%s", out)
	}
	if msg := runAdmin(t, p, true, "topics", "stats", "public/default/missing", "--watch", "--watch-count", "2"); !strings.Contains(msg, "404") {
		t.Fatalf("watch of a missing topic: %s", msg)
	}
	if msg := runAdmin(t, p, true, "topics", "stats", "public/default/watched", "--watch", "--watch-interval", "0s"); !strings.Contains(msg, "--watch-interval") {
		t.Fatalf("zero interval: %s", msg)
	}
	p.stop()
}
