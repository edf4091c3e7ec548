package stack

import (
	"sync"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// localBookieStats are the standalone bookie's figures the console and
// /metrics show (bookieinfo.Status.Stats): the disk usage of its
// ledger and journal volumes and the mean journal sync and add latency
// since the previous reading (or the last non-empty one).
type localBookieStats struct {
	bk   *bookie.Bookie
	dirs []string

	mu                  sync.Mutex
	syncSum, syncCount  int64
	addSum, addCount    int64
	syncAvgMs, addAvgMs float64
}

func (l *localBookieStats) read() map[string]float64 {
	st := l.bk.Stats()
	out := map[string]float64{}
	// One volume counted once: volumes are told apart by their size and
	// free space (statfs gives no cheap device id through vfs).
	var fs vfs.OSFS
	seen := map[[2]uint64]bool{}
	var total, used uint64
	for _, d := range l.dirs {
		t, free, err := fs.DiskUsage(d)
		if err != nil || seen[[2]uint64{t, free}] {
			continue
		}
		seen[[2]uint64{t, free}] = true
		total += t
		used += t - free
	}
	if total > 0 {
		out["disk_total_bytes"] = float64(total)
		out["disk_used_bytes"] = float64(used)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	avg := func(sum, count int64, lastSum, lastCount *int64, cur *float64) {
		if count > *lastCount && sum >= *lastSum {
			*cur = float64(sum-*lastSum) / float64(count-*lastCount) / 1e6
		}
		*lastSum, *lastCount = sum, count
	}
	js := st.Journal.SyncLatency
	if js.Counts != nil {
		avg(js.Sum, int64(js.Count), &l.syncSum, &l.syncCount, &l.syncAvgMs)
		out["journal_sync_latency_ms_avg"] = l.syncAvgMs
	}
	avg(st.AddLatency.Sum, int64(st.AddLatency.Count), &l.addSum, &l.addCount, &l.addAvgMs)
	out["add_latency_ms_avg"] = l.addAvgMs
	return out
}
