package e2e

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/internal/testenv"
)

// Failover time: how long the producers of a topic stall when its owner
// goes, from the signal (or the cut) to the first publish acknowledged by
// the new owner (an ack whose message id is in another ledger than the
// acks before: the new owner opened the managed ledger anew). Three ways
// for the owner to go:
//
//	sigterm    a clean exit: the broker releases its bundles as it stops
//	sigkill    the process dies: its ZooKeeper session lives on until it
//	           expires, but its port refuses connections at once
//	partition  its network namespace's link goes down: nothing tells the
//	           others until the session expires (the floor)
//
// Two rounds of each in CI, with bounds; MAGNETAR_SOAK=1 runs 20. The
// figures (p50/p99 over 20 of each) come from BenchmarkClusterFailover,
// which runs the same rounds:
//
//	go test ./e2e/ -run '^$' -bench BenchmarkClusterFailover -benchtime 1x -timeout 60m
//
// The brokers run with a 6 s session timeout (`magnetar cluster`'s
// default); FAILOVER_SESSION_TIMEOUT overrides it.
func TestClusterFailoverTimes(t *testing.T) {
	rounds := 2
	if testenv.Soak() {
		rounds = 20
	}
	session, flags := failoverSetup(t)
	// Bounds that catch a regression, far above the measured figures: a
	// clean exit and a dead process move topics at once, a partition
	// waits for the session to expire.
	bounds := map[string]time.Duration{
		"sigterm":   3 * time.Second,
		"sigkill":   3 * time.Second,
		"partition": session + 5*time.Second,
	}
	for _, mode := range failoverModes {
		t.Run(mode, func(t *testing.T) {
			times := failoverTimes(t, mode, rounds, flags)
			logFailovers(t, mode, session, times)
			if worst := slices.Max(times); worst > bounds[mode] {
				t.Errorf("%s failover took up to %v, want <= %v", mode, worst, bounds[mode])
			}
		})
	}
}

// failoverModes are the ways an owner goes (see above).
var failoverModes = []string{"sigterm", "sigkill", "partition"}

// failoverSetup returns the session timeout and the broker flags of the
// failover rounds.
func failoverSetup(tb testing.TB) (time.Duration, []string) {
	session := 6 * time.Second
	if v := os.Getenv("FAILOVER_SESSION_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			tb.Fatal(err)
		}
		session = d
	}
	return session, []string{"--zk-session-timeout", session.String(), "--load-shedding-interval", "-1s"}
}

// failoverTimes runs rounds of mode on a cluster of its own and returns
// the failover time of each.
func failoverTimes(tb testing.TB, mode string, rounds int, flags []string) []time.Duration {
	if mode == "partition" {
		return partitionFailovers(tb, rounds, flags)
	}
	return killFailovers(tb, mode, rounds, flags)
}

// logFailovers logs the FAILOVER line of one mode.
func logFailovers(tb testing.TB, mode string, session time.Duration, times []time.Duration) {
	tb.Logf("FAILOVER %s: %d rounds, session timeout %v: p50 %v, p99 %v, max %v, all %v", mode, len(times), session,
		percentile(times, 0.5).Round(time.Millisecond), percentile(times, 0.99).Round(time.Millisecond),
		slices.Max(times).Round(time.Millisecond), roundAll(times))
}

// killFailovers runs rounds of: a producer on a new topic, its owner
// SIGKILLed or SIGTERMed, a fresh broker started in its place.
func killFailovers(t testing.TB, mode string, rounds int, flags []string) []time.Duration {
	bc := startBrokerCluster(t, 3, 3, flags...)
	bc.createNamespace("public/fo", 16)
	sig := syscall.SIGKILL
	if mode == "sigterm" {
		sig = syscall.SIGTERM
	}
	var times []time.Duration
	for i := range rounds {
		topic := fmt.Sprintf("persistent://public/fo/%s-%d", mode, i)
		d, owner := measureFailover(t, bc, bc.serviceURL(), topic, func(owner *proc) {
			owner.cmd.Process.Signal(sig)
		})
		times = append(times, d)
		// The old owner is gone (or going): wait for it, start another.
		select {
		case <-owner.exited:
		case <-time.After(60 * time.Second):
			t.Fatalf("broker %s did not exit within 60 s of %v", owner.service, sig)
		}
		for j, b := range bc.brokers {
			select {
			case <-b.exited:
				bc.brokers[j] = bc.startBroker(flags...)
			default:
			}
		}
		bc.waitBrokers(3)
	}
	return times
}

// partitionFailovers runs rounds of: a broker in a network namespace that
// owns a new topic, the namespace's link cut, then healed and the broker
// stopped.
func partitionFailovers(t testing.TB, rounds int, flags []string) []time.Duration {
	pc := startPartitionCluster(t, flags...)
	bc := pc.bc
	bc.waitBrokers(2)
	var times []time.Duration
	for i := range rounds {
		cut := pc.startCutBroker()
		bc.waitBrokers(3)
		// A namespace per round: its bundles are all unowned (an earlier
		// round's failover left its bundle on a host broker).
		bc.createNamespace(fmt.Sprintf("public/fp%d", i), 4)
		topic := fmt.Sprintf("persistent://public/fp%d/cut", i)
		// The namespaced broker takes the topic's bundle.
		path := strings.Replace(topic, "://", "/", 1)
		if code, _, body := httpDo(t, "GET", cut.http+"/lookup/v2/topic/"+path+"?authoritative=true", "", true); code != 200 || !strings.Contains(string(body), pc.ns.nsIP) {
			t.Fatalf("authoritative lookup on the namespaced broker: %d %s", code, body)
		}
		d, _ := measureFailover(t, bc, bc.brokers[0].service, topic, func(owner *proc) {
			if owner != cut {
				t.Fatalf("owner %s, want the namespaced broker %s", owner.service, cut.service)
			}
			pc.ns.cut()
		})
		times = append(times, d)
		pc.ns.heal()
		cut.stop()
		bc.brokers = slices.DeleteFunc(bc.brokers, func(b *proc) bool { return b == cut })
	}
	return times
}

// measureFailover produces on topic through url until the owner, after
// fail, has been replaced and the new owner acknowledged a publish; it
// returns the time from fail to that acknowledgement, and the old owner.
// Every acknowledged message is then read back byte for byte.
func measureFailover(t testing.TB, bc *brokerCluster, url, topic string, fail func(owner *proc)) (time.Duration, *proc) {
	t.Helper()
	log := &ackedLog{acked: map[string][]string{}, wake: make(chan struct{}, 1)}
	stop := make(chan struct{})
	const name = "fo"
	wg := runProducers(t, url, topic, []string{name}, stop, log)
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()
	waitAcked(t, log, 50, 60*time.Second)
	owner := bc.byService(bc.owner(topic))
	log.mu.Lock()
	before := log.times[name][len(log.times[name])-1].ledger
	log.mu.Unlock()
	t0 := time.Now()
	fail(owner)
	d, ok := firstAckAfter(log, name, t0, before, 90*time.Second)
	if !ok {
		t.Fatalf("no publish acknowledged by a new owner of %s within 90 s", topic)
	}
	n := log.total()
	waitAcked(t, log, n+20, 60*time.Second)
	close(stop)
	wg.Wait()
	if !t.Failed() {
		checkDelivered(t, newClusterClient(t, bc.live().service), topic, "check", log)
	}
	return d, owner
}

// firstAckAfter waits for the first acknowledgement of producer name made
// after t0 in another ledger than before, and returns its delay from t0.
func firstAckAfter(log *ackedLog, name string, t0 time.Time, before int64, limit time.Duration) (time.Duration, bool) {
	deadline := time.After(limit)
	seen := 0
	for {
		log.mu.Lock()
		ts := log.times[name]
		for ; seen < len(ts); seen++ {
			if a := ts[seen]; a.ledger != before && a.at.After(t0) {
				log.mu.Unlock()
				return a.at.Sub(t0), true
			}
		}
		log.mu.Unlock()
		select {
		case <-log.wake:
		case <-deadline:
			return 0, false
		}
	}
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}
