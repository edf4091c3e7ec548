package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/internal/zktest"
)

// netns is a Linux network namespace joined to the host by a veth pair:
// host side hostIP, namespace side nsIP, a /24 of their own.
type netns struct {
	t            testing.TB
	name, hostIf string
	nsIf         string
	hostIP, nsIP string
}

func ipCmd(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// newNetns creates the namespace and the link (removed by t.Cleanup). It
// needs root and iproute2, as CI has.
func newNetns(t testing.TB) *netns {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the network partition test needs root (ip netns, veth)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatal("the network partition test needs iproute2: apt-get install iproute2")
	}
	id := os.Getpid() % 100000
	sub := 16 + os.Getpid()%200
	n := &netns{t: t, name: fmt.Sprintf("mgn%d", id), hostIf: fmt.Sprintf("mgh%d", id), nsIf: fmt.Sprintf("mgn%d", id),
		hostIP: fmt.Sprintf("10.213.%d.1", sub), nsIP: fmt.Sprintf("10.213.%d.2", sub)}
	ipCmd(t, "netns", "add", n.name)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", n.name).Run() })
	ipCmd(t, "link", "add", n.hostIf, "type", "veth", "peer", "name", n.nsIf)
	t.Cleanup(func() { exec.Command("ip", "link", "del", n.hostIf).Run() })
	ipCmd(t, "link", "set", n.nsIf, "netns", n.name)
	ipCmd(t, "addr", "add", n.hostIP+"/24", "dev", n.hostIf)
	ipCmd(t, "link", "set", n.hostIf, "up")
	ipCmd(t, "netns", "exec", n.name, "ip", "addr", "add", n.nsIP+"/24", "dev", n.nsIf)
	ipCmd(t, "netns", "exec", n.name, "ip", "link", "set", n.nsIf, "up")
	ipCmd(t, "netns", "exec", n.name, "ip", "link", "set", "lo", "up")
	return n
}

// cut takes the namespace's side of the link down: nothing passes either
// way (the host keeps its address, so host processes still reach each
// other on it); heal brings it back.
func (n *netns) cut()  { ipCmd(n.t, "netns", "exec", n.name, "ip", "link", "set", n.nsIf, "down") }
func (n *netns) heal() { ipCmd(n.t, "netns", "exec", n.name, "ip", "link", "set", n.nsIf, "up") }

// relay forwards connections accepted on listen to target until the test
// ends (ZooKeeper listens on 127.0.0.1 only).
func relay(t testing.TB, listen, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, u)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(u, c); u.Close() }()
			go func() { defer wg.Done(); io.Copy(c, u); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// partitionCluster is a cluster for partition tests: ZooKeeper and three
// bookies reachable from a network namespace (through its link), two
// brokers on the host, and brokers started in the namespace on demand.
type partitionCluster struct {
	bc     *brokerCluster
	ns     *netns
	zkURL  string   // the metadata URL through the link
	common []string // flags of every broker
}

// startPartitionCluster starts it (without the namespaced broker); extra
// flags go to every broker.
func startPartitionCluster(t testing.TB, extra ...string) *partitionCluster {
	t.Helper()
	ns := newNetns(t)
	zk := zktest.StartServer(t)
	zkRelay := relay(t, ns.hostIP+":0", zk.Addr())
	c := &testCluster{t: t, zk: zk, url: "zk://" + zk.Addr() + "/magnetar"}
	bc := &brokerCluster{t: t, c: c}
	for range 3 {
		port, err := freeTCPPort()
		if err != nil {
			t.Fatal(err)
		}
		p, f := startMagnetar(t, "bookie", "magnetar bookie ready", "bookie", "--metadata-url", c.url,
			"--listen", fmt.Sprintf("0.0.0.0:%d", port), "--advertised-address", fmt.Sprintf("%s:%d", ns.hostIP, port),
			"--data-dir", t.TempDir())
		bc.bookies = append(bc.bookies, &bookieProc{proc: p, id: f["id"]})
	}
	common := append([]string{"--load-report-interval", "300ms",
		"--autorecovery=false", "--load-shedding-interval", "-1s",
		"--ensemble", "3", "--write-quorum", "2", "--ack-quorum", "2"}, extra...)
	pc := &partitionCluster{bc: bc, ns: ns, zkURL: "zk://" + zkRelay + "/magnetar", common: common}
	for range 2 {
		p, _ := startMagnetar(t, "broker", "magnetar broker ready", append([]string{"broker", "--metadata-url", c.url,
			"--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--advertised-host", "127.0.0.1"}, common...)...)
		bc.brokers = append(bc.brokers, p)
	}
	bc.store = c.clusterClient().store
	return pc
}

// startCutBroker starts a broker inside the namespace and adds it to the
// cluster's brokers.
func (pc *partitionCluster) startCutBroker() *proc {
	p, _ := startMagnetarVia(pc.bc.t, []string{"ip", "netns", "exec", pc.ns.name}, "broker-netns", "magnetar broker ready",
		append([]string{"broker", "--metadata-url", pc.zkURL,
			"--listen", pc.ns.nsIP + ":0", "--http", pc.ns.nsIP + ":0", "--advertised-host", pc.ns.nsIP}, pc.common...)...)
	pc.bc.brokers = append(pc.bc.brokers, p)
	return p
}

// A broker in its own network namespace owns a topic; the namespace's
// link goes down (cut from ZooKeeper, the bookies and its clients): it
// loses the bundle, another broker takes it, the clients move and every
// acknowledged message is kept. Healing the link does not make a second
// owner: the cut broker has stopped serving, and at every check exactly
// one broker serves the topic.
func TestClusterBrokerNetworkPartition(t *testing.T) {
	pc := startPartitionCluster(t, "--zk-session-timeout", clusterSessionTimeout.String())
	bc, ns := pc.bc, pc.ns
	cutBroker := pc.startCutBroker()
	bc.waitBrokers(3)
	bc.createNamespace("public/np", 4)
	const topic = "persistent://public/np/cut"
	// The namespaced broker takes the topic's bundle.
	code, _, body := httpDo(t, "GET", cutBroker.http+"/lookup/v2/topic/persistent/public/np/cut?authoritative=true", "", true)
	if code != 200 || !strings.Contains(string(body), ns.nsIP) {
		t.Fatalf("authoritative lookup on the namespaced broker: %d %s", code, body)
	}
	cl := newClusterClient(t, bc.brokers[1].service)
	log := &ackedLog{acked: map[string][]string{}}
	stop := make(chan struct{})
	wg := runProducers(t, bc.brokers[1].service, topic, []string{"na", "nb"}, stop, log)
	waitAcked(t, log, 200, 60*time.Second)
	if o := bc.owner(topic); o != cutBroker.service {
		t.Fatalf("owner %s, want the namespaced broker %s", o, cutBroker.service)
	}

	ns.cut()
	t0 := time.Now()
	deadline := t0.Add(60 * time.Second)
	for {
		if o := bc.owner(topic); o != "" && o != cutBroker.service {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no new owner 60s after the partition")
		}
		time.Sleep(50 * time.Millisecond)
	}
	n := log.total()
	waitAcked(t, log, n+200, 60*time.Second)
	t.Logf("clients moved: %d more acks %v after the cut", log.total()-n, time.Since(t0).Round(time.Millisecond))

	ns.heal()
	// After healing: the cut broker reports the bundle lost and never
	// serves the topic again; exactly one broker serves it throughout.
	deadline = time.Now().Add(30 * time.Second)
	for {
		bc.checkOwners([]string{topic}, true, true)
		data, _ := os.ReadFile(cutBroker.logPath)
		if strings.Contains(string(data), "lease lost") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("healed broker did not report its bundles lost; log:\n%s", cutBroker.log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	code, _, body = httpDo(t, "GET", cutBroker.http+"/admin/v2/broker-stats/load-report", "", true)
	var rep struct {
		Bundles []string `json:"bundles"`
	}
	if code != 200 || json.Unmarshal(body, &rep) != nil {
		t.Fatalf("load report of the healed broker: %d %s", code, body)
	}
	for _, b := range rep.Bundles {
		if strings.HasPrefix(b, "public/np/") {
			t.Fatalf("healed broker owns %s again", b)
		}
	}
	// Once reconnected, its lookups name the new owner too.
	deadline = time.Now().Add(30 * time.Second)
	for {
		code, _, body := httpDo(t, "GET", cutBroker.http+"/lookup/v2/topic/persistent/public/np/cut", "", true)
		if code == 200 {
			if !strings.Contains(string(body), bc.owner(topic)) {
				t.Fatalf("healed broker's lookup: %s, owner %s", body, bc.owner(topic))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("healed broker's lookups still fail: %d %s", code, body)
		}
		bc.checkOwners([]string{topic}, true, true)
		time.Sleep(100 * time.Millisecond)
	}
	n = log.total()
	waitAcked(t, log, n+100, 60*time.Second)
	close(stop)
	wg.Wait()
	if t.Failed() {
		return
	}
	dups := checkDelivered(t, cl, topic, "check", log)
	t.Logf("%d acked, %d duplicates", log.total(), dups)
	bc.checkSingleOwner([]string{topic})
}

// freeTCPPort is a port free on 127.0.0.1 now.
func freeTCPPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
