package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/internal/zktest"
)

// `magnetar cluster` starts ZooKeeper, three bookies and a broker as child
// processes; a Pulsar client produces and consumes through it; SIGINT
// stops every child and the command exits cleanly.
func TestClusterCommand(t *testing.T) {
	p, f := startMagnetar(t, "cluster", "magnetar cluster ready", "cluster", "--data-dir", t.TempDir(),
		"--zk-port", "0", "--bookie-base-port", "0", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
		"--advertised-host", "127.0.0.1", "--journal-no-sync")
	zkAddr := strings.TrimSuffix(strings.TrimPrefix(f["metadata"], "zk://"), "/magnetar")
	if !zktest.Serving(zkAddr) || !strings.HasPrefix(p.service, "pulsar://") {
		t.Fatalf("ready fields %v; zookeeper serving: %v", f, zktest.Serving(zkAddr))
	}
	cl := p.client(t)
	const topic = "persistent://public/default/cluster-cmd"
	cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 20 {
		if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(payload(i))}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Payload()) != payload(i) {
			t.Fatalf("message %d = %q", i, m.Payload())
		}
		cons.Ack(m)
	}
	cl.Close()
	p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.exited:
		if p.waitErr != nil {
			t.Fatalf("cluster exited with %v; log:\n%s", p.waitErr, p.log())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("cluster did not stop within 60s of SIGINT; log:\n%s", p.log())
	}
	if zktest.Serving(zkAddr) {
		t.Fatal("zookeeper still serving after the cluster stopped")
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(p.service, "pulsar://"), time.Second); err == nil {
		c.Close()
		t.Fatal("broker still listening after the cluster stopped")
	}
}

// childWithArg returns the pid of a child of pid whose command line holds
// the argument pair name value.
func childWithArg(t *testing.T, pid int, name, value string) int {
	t.Helper()
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		data, _ := os.ReadFile(f)
		for _, c := range strings.Fields(string(data)) {
			cmdline, _ := os.ReadFile("/proc/" + c + "/cmdline")
			if strings.Contains(string(cmdline), "\x00"+name+"\x00"+value+"\x00") {
				n, _ := strconv.Atoi(c)
				return n
			}
		}
	}
	t.Fatalf("no child of %d with %s %s", pid, name, value)
	return 0
}

// `magnetar cluster --brokers 3 --restart`: the service URL lists every
// broker; SIGKILL of the broker serving a topic is reported, the cluster
// keeps serving (the clients fail over), and the broker comes back.
func TestClusterCommandBrokersSurviveChildDeath(t *testing.T) {
	p, f := startMagnetar(t, "cluster", "magnetar cluster ready", "cluster", "--data-dir", t.TempDir(),
		"--zk-port", "0", "--bookie-base-port", "0", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
		"--advertised-host", "127.0.0.1", "--journal-no-sync", "--brokers", "3", "--restart", "--zk-session-timeout", "2s")
	if n := strings.Count(f["service"], ","); n != 2 {
		t.Fatalf("service %q does not list 3 brokers", f["service"])
	}
	cl := newClusterClient(t, f["service"])
	const topic = "persistent://public/default/cluster-cmd-failover"
	cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, SendTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for i := range 20 {
		if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(payload(i))}); err != nil {
			t.Fatal(err)
		}
	}
	code, _, body := httpDo(t, "GET", f["http"]+"/lookup/v2/topic/persistent/public/default/cluster-cmd-failover", "", true)
	var ld struct {
		BrokerURL string `json:"brokerUrl"`
	}
	if code != 200 || json.Unmarshal(body, &ld) != nil {
		t.Fatalf("lookup: %d %s", code, body)
	}
	victim := childWithArg(t, p.cmd.Process.Pid, "--listen", strings.TrimPrefix(ld.BrokerURL, "pulsar://"))
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i := 20; i < 40; i++ {
		if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(payload(i))}); err != nil {
			t.Fatalf("send %d after the owner's death: %v", i, err)
		}
	}
	seen := receiveUntil(t, cons, 60*time.Second, func(s map[string]int) bool { return len(s) == 40 })
	for i := range 40 {
		if seen[payload(i)] == 0 {
			t.Fatalf("message %d lost", i)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		l := p.log()
		if strings.Contains(l, "exited unexpectedly") && strings.Contains(l, "restarted") {
			break
		}
		select {
		case <-p.exited:
			t.Fatalf("cluster exited after a child's death; log:\n%s", l)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker death not reported and restarted; log:\n%s", l)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cl.Close()
	p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.exited:
		if p.waitErr != nil {
			t.Fatalf("cluster exited with %v; log:\n%s", p.waitErr, p.log())
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("cluster did not stop within 90s of SIGINT; log:\n%s", p.log())
	}
}
