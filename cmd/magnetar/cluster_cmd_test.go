package main

import (
	"context"
	"net"
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
