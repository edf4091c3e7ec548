package txnperf

import (
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {0, time.Millisecond}} {
		if got := Percentile(ds, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if ds[0] != 100*time.Millisecond {
		t.Fatal("Percentile sorted its argument")
	}
	if Percentile(nil, 50) != 0 || Percentile([]time.Duration{7}, 99) != 7 {
		t.Fatal("empty or single")
	}
}

func TestSummarise(t *testing.T) {
	sec := time.Second
	rounds := [][]Result{
		{{Case: PlainOff, Messages: 1000, Elapsed: sec}, {Case: "plain", Messages: 1000, Elapsed: sec, ServerCPU: 10 * time.Millisecond},
			{Case: "groups-10", TxnSize: 10, Messages: 1000, Elapsed: sec},
			{Case: "txn-10", TxnSize: 10, Messages: 500, Elapsed: sec, CommitP50: 2 * time.Millisecond, CommitP99: 9 * time.Millisecond}},
		{{Case: PlainOff, Messages: 2400, Elapsed: sec}, {Case: "plain", Messages: 2000, Elapsed: sec},
			{Case: "txn-10", TxnSize: 10, Messages: 400, Elapsed: sec, CommitP50: 4 * time.Millisecond, CommitP99: 20 * time.Millisecond}},
		{{Case: PlainOff, Messages: 3000, Elapsed: sec}, {Case: "plain", Messages: 4000, Elapsed: sec},
			{Case: "txn-10", TxnSize: 10, Messages: 3000, Elapsed: sec, CommitP50: 3 * time.Millisecond, CommitP99: 10 * time.Millisecond}},
	}
	ss := Summarise(rounds)
	if len(ss) != 4 || ss[0].Case != PlainOff || ss[1].Case != "plain" || ss[2].Case != "groups-10" || ss[3].Case != "txn-10" {
		t.Fatalf("cases: %+v", ss)
	}
	// Ratios are taken within each round, then their median.
	if off := ss[0]; off.Rate != 2400 || off.Ratio != 1.0 || len(off.Ratios) != 3 || off.Ratios[1] != 1.2 {
		t.Fatalf("off: %+v", off)
	}
	if tx := ss[3]; len(tx.VsGroups) != 1 || tx.VsGroups[0] != 0.5 || tx.VsGroup != 0.5 {
		t.Fatalf("txn-10 against groups-10 (first round only): %+v", tx)
	}
	if tx := ss[3]; tx.Rate != 500 || tx.Ratio != 0.5 || tx.CommitP50 != 3*time.Millisecond || tx.CommitP99 != 10*time.Millisecond {
		t.Fatalf("txn-10: %+v", tx)
	}
	tab := Table(ss)
	if ss[1].CPUPerMsg != 0 { // median of 10 µs, 0, 0
		t.Fatalf("plain CPU per message: %v", ss[1].CPUPerMsg)
	}
	if !strings.Contains(tab, "| txn-10 | 500 [500 400 3000] | 0.50× [0.50 0.20 0.75] | 0.50× [0.50] | – | 3.0 ms / 10.0 ms | 0.0 ms / 0.0 ms |") {
		t.Fatalf("table:\n%s", tab)
	}
	if (Result{Messages: 5}).MsgsPerSec() != 0 {
		t.Fatal("rate without elapsed time")
	}
}
