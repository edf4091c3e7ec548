package txnperf

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Setup is a whole benchmark: Rounds rounds, each running every case
// once: plain against the broker without coordinator (Off; skipped when
// nil) and plain against the broker with it (On), then groups-k and
// txn-k for each of Sizes (On); the two cases of each pair swap order
// every round. Each case gets a fresh topic.
type Setup struct {
	On, Off pulsar.Client
	// OnCPU and OffCPU, when set, return the CPU time the broker behind
	// On (Off) has used so far; each Result then carries its case's.
	OnCPU, OffCPU func() time.Duration
	TopicPrefix   string
	// NoPlain skips the plain cases (to profile transactions alone).
	NoPlain bool
	Sizes   []int
	Rounds  int
	Case    Config // the template; Topic is set per case
}

// PlainOff names the plain case against the broker without coordinator.
const PlainOff = "plain-coordinator-off"

// Run runs s; report, when set, is called after each case.
func Run(ctx context.Context, s Setup, report func(round int, r Result)) ([][]Result, error) {
	var out [][]Result
	stamp := time.Now().UnixNano()
	for round := range max(s.Rounds, 1) {
		var rs []Result
		topic := func(name string) string {
			return fmt.Sprintf("%s-%d-%d-%s", s.TopicPrefix, stamp, round, name)
		}
		// one runs a case and records it with its broker's CPU.
		one := func(cpu func() time.Duration, run func() (Result, error)) error {
			var c0 time.Duration
			if cpu != nil {
				settle(ctx, cpu)
				c0 = cpu()
			}
			r, err := run()
			if err != nil {
				return err
			}
			if cpu != nil {
				r.ServerCPU = cpu() - c0
			}
			rs = append(rs, r)
			if report != nil {
				report(round, r)
			}
			return nil
		}
		c := s.Case
		plainOff := func() error {
			if s.Off == nil {
				return nil
			}
			c.Topic = topic("plain-off")
			return one(s.OffCPU, func() (Result, error) {
				r, err := Plain(ctx, s.Off, c)
				r.Case = PlainOff
				return r, err
			})
		}
		plainOn := func() error {
			c.Topic = topic("plain")
			return one(s.OnCPU, func() (Result, error) { return Plain(ctx, s.On, c) })
		}
		first, second := plainOff, plainOn
		if round%2 == 1 {
			first, second = plainOn, plainOff
		}
		if !s.NoPlain {
			if err := first(); err != nil {
				return out, err
			}
			if err := second(); err != nil {
				return out, err
			}
		}
		for _, k := range s.Sizes {
			txnK := func() error {
				c.Topic = topic(fmt.Sprintf("txn-%d", k))
				return one(s.OnCPU, func() (Result, error) { return Transactional(ctx, s.On, c, k) })
			}
			groupsK := func() error {
				c.Topic = topic(fmt.Sprintf("groups-%d", k))
				return one(s.OnCPU, func() (Result, error) { return Groups(ctx, s.On, c, k) })
			}
			first, second := groupsK, txnK
			if round%2 == 1 {
				first, second = txnK, groupsK
			}
			if err := first(); err != nil {
				return out, err
			}
			if err := second(); err != nil {
				return out, err
			}
		}
		out = append(out, rs)
	}
	return out, nil
}

// Settling: before a case, Run waits until the broker's CPU over the
// last settleWindow is under settleIdle of it (at most settleMax), so
// that work a previous case left behind (the bookie's checkpoint of the
// entries it wrote, ledger trimming) is not counted in this case's CPU.
const (
	settleWindow = 200 * time.Millisecond
	settleIdle   = 0.05
	settleMax    = 20 * time.Second
)

func settle(ctx context.Context, cpu func() time.Duration) {
	end := time.Now().Add(settleMax)
	prev := cpu()
	t := time.NewTicker(settleWindow)
	defer t.Stop()
	for time.Now().Before(end) {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := cpu()
		if float64(now-prev) < settleIdle*float64(settleWindow) {
			return
		}
		prev = now
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Summary is one case over the rounds: medians, and the per-round values
// of the rate and of its ratio to the same round's plain case (against
// the broker with the coordinator).
type Summary struct {
	Case          string
	Rates, Ratios []float64
	Rate, Ratio   float64
	// VsGroups and VsGroup: txn-k's rate over groups-k's, per round and
	// the median.
	VsGroups []float64
	VsGroup  float64
	// CPUPerMsg is the median over rounds of the broker's CPU time per
	// message (0 without CPU figures).
	CPUPerMsg            time.Duration
	CommitP50, CommitP99 time.Duration
	TxnP50, TxnP99       time.Duration
}

// Summarise folds rounds (as Run returns them) into one Summary per case.
func Summarise(rounds [][]Result) []Summary {
	var order []string
	by := map[string]*Summary{}
	lat := map[string][5][]float64{}
	for _, rs := range rounds {
		plain := 0.0
		rate := map[string]float64{}
		for _, r := range rs {
			rate[r.Case] = r.MsgsPerSec()
			if r.Case == "plain" {
				plain = r.MsgsPerSec()
			}
		}
		for _, r := range rs {
			s := by[r.Case]
			if s == nil {
				s = &Summary{Case: r.Case}
				by[r.Case] = s
				order = append(order, r.Case)
			}
			s.Rates = append(s.Rates, r.MsgsPerSec())
			if plain > 0 {
				s.Ratios = append(s.Ratios, r.MsgsPerSec()/plain)
			}
			if g := rate[fmt.Sprintf("groups-%d", r.TxnSize)]; strings.HasPrefix(r.Case, "txn-") && g > 0 {
				s.VsGroups = append(s.VsGroups, r.MsgsPerSec()/g)
			}
			l := lat[r.Case]
			var perMsg time.Duration
			if r.Messages > 0 {
				perMsg = r.ServerCPU / time.Duration(r.Messages)
			}
			for i, d := range []time.Duration{r.CommitP50, r.CommitP99, r.TxnP50, r.TxnP99, perMsg} {
				l[i] = append(l[i], float64(d))
			}
			lat[r.Case] = l
		}
	}
	out := make([]Summary, 0, len(order))
	for _, name := range order {
		s := by[name]
		s.Rate, s.Ratio, s.VsGroup = median(s.Rates), median(s.Ratios), median(s.VsGroups)
		l := lat[name]
		s.CommitP50, s.CommitP99 = time.Duration(median(l[0])), time.Duration(median(l[1]))
		s.TxnP50, s.TxnP99 = time.Duration(median(l[2])), time.Duration(median(l[3]))
		s.CPUPerMsg = time.Duration(median(l[4]))
		out = append(out, *s)
	}
	return out
}

// Table formats summaries as a Markdown table (NOTES.md's).
func Table(ss []Summary) string {
	var b strings.Builder
	b.WriteString("| case | msgs/s, median [rounds] | / plain, same round | txn-k / groups-k, same round | broker CPU per msg | commit p50 / p99 | k msgs end to end p50 / p99 |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }
	list := func(v []float64, f string) string {
		out := make([]string, len(v))
		for i, x := range v {
			out[i] = fmt.Sprintf(f, x)
		}
		return strings.Join(out, " ")
	}
	for _, s := range ss {
		commit, full, vs := "–", "–", "–"
		if strings.HasPrefix(s.Case, "txn-") {
			commit = ms(s.CommitP50) + " / " + ms(s.CommitP99)
			if len(s.VsGroups) > 0 {
				vs = fmt.Sprintf("%.2f× [%s]", s.VsGroup, list(s.VsGroups, "%.2f"))
			}
		}
		if strings.HasPrefix(s.Case, "txn-") || strings.HasPrefix(s.Case, "groups-") {
			full = ms(s.TxnP50) + " / " + ms(s.TxnP99)
		}
		cpu := "–"
		if s.CPUPerMsg > 0 {
			cpu = fmt.Sprintf("%.1f µs", float64(s.CPUPerMsg)/1e3)
		}
		fmt.Fprintf(&b, "| %s | %.0f [%s] | %.2f× [%s] | %s | %s | %s | %s |\n", s.Case, s.Rate, list(s.Rates, "%.0f"),
			s.Ratio, list(s.Ratios, "%.2f"), vs, cpu, commit, full)
	}
	return b.String()
}
