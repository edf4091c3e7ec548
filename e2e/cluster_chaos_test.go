package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/internal/testenv"
)

// TestClusterChaos: 3 brokers and 4 bookies (E=3, Qw=2, Qa=2) on a real
// ZooKeeper, producers on 4 topics with 32 sends in flight each, and a
// chaos loop that SIGKILLs a random broker or bookie every few seconds
// and starts it again on the same ports (a bookie on its directory) a
// moment later: at most one broker and one bookie down at a time. All
// the while, no topic is served by two brokers at once (each live
// broker's stats endpoint is asked without following redirects). Then
// everything is started again, the producers go on a little, and every
// acknowledged message is read back byte for byte in each producer's
// order.
//
// 45 s of chaos in CI (about 70 s in all); MAGNETAR_SOAK=1 runs 10
// minutes, CHAOS_DURATION sets it:
//
//	MAGNETAR_SOAK=1 go test ./e2e/ -run TestClusterChaos -v -timeout 60m
func TestClusterChaos(t *testing.T) {
	dur := 45 * time.Second
	if testenv.Soak() {
		dur = 10 * time.Minute
	}
	if v := os.Getenv("CHAOS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		dur = d
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("CHAOS_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (CHAOS_SEED replays the kill order)", seed)
	rng := rand.New(rand.NewPCG(seed, 34))
	bc := startBrokerCluster(t, 4, 3, "--load-shedding-interval", "-1s")
	bc.createNamespace("public/chaos", 8)
	log := &ackedLog{acked: map[string][]string{}}
	stop := make(chan struct{})
	var topics, names []string
	var wgs []*sync.WaitGroup
	for i := range 4 {
		topic := fmt.Sprintf("persistent://public/chaos/t%d", i)
		name := fmt.Sprintf("cp%d", i)
		topics, names = append(topics, topic), append(names, name)
		wgs = append(wgs, runProducersWindow(t, bc.serviceURL(), topic, []string{name}, 32, stop, log))
	}
	waitAcked(t, log, 2000, 60*time.Second)

	ch := &chaos{t: t, bc: bc, rng: rng}
	end := time.Now().Add(dur)
	next := time.Now()
	checks := 0
	for time.Now().Before(end) && !t.Failed() {
		if time.Now().After(next) {
			ch.step()
			next = time.Now().Add(time.Duration(1500+rng.IntN(2500)) * time.Millisecond)
		}
		ch.checkOneServer(topics)
		checks++
		time.Sleep(200 * time.Millisecond)
	}
	ch.restartAll()
	bc.waitBrokers(3)
	n := log.total()
	waitAcked(t, log, n+2000, 120*time.Second)
	close(stop)
	for _, wg := range wgs {
		wg.Wait()
	}
	t.Logf("%v of chaos: %d broker and %d bookie kills, %d ownership checks, %d messages acknowledged",
		dur, ch.brokerKills, ch.bookieKills, checks, log.total())
	if t.Failed() {
		return
	}
	ch.checkOneServer(topics)
	cl := newClusterClient(t, bc.serviceURL())
	for i, topic := range topics {
		one := &ackedLog{acked: map[string][]string{names[i]: log.acked[names[i]]}}
		dups := checkDelivered(t, cl, topic, "check", one)
		t.Logf("%s: %d acknowledged, all read back, %d duplicates", topic, len(log.acked[names[i]]), dups)
	}
}

// chaos kills and restarts the processes of a brokerCluster.
type chaos struct {
	t                        *testing.T
	bc                       *brokerCluster
	rng                      *rand.Rand
	downBroker, downBookie   int // index of the process down, or -1
	brokerKills, bookieKills int
	init                     bool
}

// step brings back what is down, or kills one broker or bookie.
func (c *chaos) step() {
	if !c.init {
		c.downBroker, c.downBookie, c.init = -1, -1, true
	}
	switch {
	case c.downBroker >= 0 && c.rng.IntN(2) == 0:
		c.restartBroker(c.downBroker)
	case c.downBookie >= 0 && c.rng.IntN(2) == 0:
		c.restartBookie(c.downBookie)
	case c.rng.IntN(2) == 0 && c.downBroker < 0:
		i := c.rng.IntN(len(c.bc.brokers))
		c.bc.brokers[i].kill()
		c.downBroker = i
		c.brokerKills++
	case c.downBookie < 0:
		i := c.rng.IntN(len(c.bc.bookies))
		c.bc.bookies[i].kill()
		c.downBookie = i
		c.bookieKills++
	}
}

// restartBroker starts broker i again on its ports.
func (c *chaos) restartBroker(i int) {
	old := c.bc.brokers[i]
	c.bc.brokers[i] = c.bc.startBroker("--load-shedding-interval", "-1s",
		"--listen", strings.TrimPrefix(old.service, "pulsar://"), "--http", strings.TrimPrefix(old.http, "http://"))
	c.downBroker = -1
}

// restartBookie starts bookie i again on its port and directory.
func (c *chaos) restartBookie(i int) {
	old := c.bc.bookies[i]
	p, f := startMagnetar(c.t, "bookie", "magnetar bookie ready",
		"bookie", "--metadata-url", c.bc.c.url, "--listen", old.id, "--data-dir", old.dir)
	c.bc.bookies[i] = &bookieProc{proc: p, id: f["id"], dir: old.dir}
	c.downBookie = -1
}

// restartAll brings back whatever is down.
func (c *chaos) restartAll() {
	if !c.init {
		return
	}
	if c.downBroker >= 0 {
		c.restartBroker(c.downBroker)
	}
	if c.downBookie >= 0 {
		c.restartBookie(c.downBookie)
	}
}

// checkOneServer fails the test if any topic is served by two live
// brokers at once (stats answered without a redirect).
func (c *chaos) checkOneServer(topics []string) {
	for _, tp := range topics {
		path := "/admin/v2/" + strings.Replace(tp, "://", "/", 1) + "/stats"
		var serving []string
		for _, b := range c.bc.brokers {
			select {
			case <-b.exited:
				continue
			default:
			}
			if code, _, _ := httpDo(c.t, "GET", b.http+path, "", false); code == 200 {
				serving = append(serving, b.service)
			}
		}
		if len(serving) > 1 {
			c.t.Errorf("%s served by %d brokers at once: %v", tp, len(serving), serving)
		}
	}
}
