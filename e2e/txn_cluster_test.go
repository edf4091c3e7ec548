package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
)

// A transaction coordinator ends transactions on topics another broker
// owns: two brokers over ZooKeeper, transactions produce to and
// acknowledge on topics spread over both; the coordinator's broker sends
// END_TXN_ON_PARTITION / END_TXN_ON_SUBSCRIPTION to the owners. A commit
// makes every message visible and applies every ack; an abort hides the
// messages and releases the acks.
func TestTxnClusterEndOnOtherBroker(t *testing.T) {
	bc := startBrokerCluster(t, 3, 2, "--load-shedding-interval", "-1s",
		"--transaction-coordinator-enabled", "--transaction-coordinators", "2")
	bc.createNamespace("public/txn", 16)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := pulsar.NewClient(pulsar.ClientOptions{URL: bc.brokers[0].service, EnableTransaction: true,
		OperationTimeout: 30 * time.Second, ConnectionTimeout: 5 * time.Second, Logger: plog.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	// The owners of coordinators 0 and 1.
	tcOwner := map[uint64]string{}
	for id := range uint64(2) {
		tcOwner[id] = bc.lookupOwner(fmt.Sprintf("persistent://pulsar/system/transaction_coordinator_assign-partition-%d", id))
	}

	// Topics until both brokers own some.
	type tp struct {
		name  string
		owner string
		prod  pulsar.Producer
		cons  pulsar.Consumer
	}
	var topics []*tp
	owners := map[string]int{}
	for i := 0; i < 40 && (len(topics) < 4 || len(owners) < 2); i++ {
		name := fmt.Sprintf("persistent://public/txn/t%d", i)
		prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: name, DisableBatching: true, SendTimeout: 0})
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()
		cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: name, SubscriptionName: "s", Type: pulsar.Shared,
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err != nil {
			t.Fatal(err)
		}
		defer cons.Close()
		o := bc.lookupOwner(name)
		owners[o]++
		topics = append(topics, &tp{name: name, owner: o, prod: prod, cons: cons})
	}
	if len(owners) < 2 {
		t.Fatalf("40 topics over 16 bundles all on one broker: %v", owners)
	}
	// Inputs to acknowledge in the transactions.
	for _, x := range topics {
		for j := range 2 {
			if _, err := x.prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("in-%d", j))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	inputs := map[string][]pulsar.Message{}
	for _, x := range topics {
		for range 2 {
			m, err := x.cons.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			inputs[x.name] = append(inputs[x.name], m)
		}
	}

	run := func(commit bool) pulsar.TxnID {
		tx, err := cl.NewTransaction(time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		idx := 0
		if !commit {
			idx = 1
		}
		for _, x := range topics {
			if _, err := x.prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("txn-%v", commit)), Transaction: tx}); err != nil {
				t.Fatal(err)
			}
			if err := x.cons.AckWithTxn(inputs[x.name][idx], tx); err != nil {
				t.Fatal(err)
			}
		}
		if commit {
			err = tx.Commit(ctx)
		} else {
			err = tx.Abort(ctx)
		}
		if err != nil {
			t.Fatalf("end (commit %v) of %+v: %v", commit, tx.GetTxnID(), err)
		}
		return tx.GetTxnID()
	}
	run(false)
	committed := run(true)
	remote := 0
	for _, x := range topics {
		if x.owner != tcOwner[committed.MostSigBits] {
			remote++
		}
	}
	if remote == 0 {
		t.Fatalf("no topic owned away from coordinator %d's broker %s: %v", committed.MostSigBits, tcOwner[committed.MostSigBits], owners)
	}
	t.Logf("%d topics, %d owned by a broker other than the committing coordinator's", len(topics), remote)

	// Every topic: the committed message arrives, the aborted one never;
	// the aborted transaction's input comes again, the committed one's
	// not.
	for _, x := range topics {
		got := map[string]int{}
		quiet, qcancel := context.WithTimeout(ctx, 3*time.Second)
		for {
			m, err := x.cons.Receive(quiet)
			if err != nil {
				break
			}
			got[string(m.Payload())]++
			x.cons.Ack(m)
			if got["txn-true"] == 1 && got["in-1"] == 1 {
				break
			}
		}
		qcancel()
		if got["txn-true"] != 1 || got["txn-false"] != 0 || got["in-1"] != 1 || got["in-0"] != 0 {
			t.Fatalf("%s (owner %s): received %v; want the committed message and the aborted transaction's input once", x.name, x.owner, got)
		}
	}
	// The acks reached the owners' cursors: no backlog left.
	for _, x := range topics {
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, _, body := httpDo(t, "GET", bc.brokers[0].http+"/admin/v2/"+strings.Replace(x.name, "://", "/", 1)+"/stats", "", true)
			var st struct {
				Subscriptions map[string]struct {
					MsgBacklog int64 `json:"msgBacklog"`
				} `json:"subscriptions"`
			}
			_ = json.Unmarshal(body, &st)
			if code == 200 && st.Subscriptions["s"].MsgBacklog == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: backlog not 0: %d %s", x.name, code, body)
			}
			time.Sleep(100 * time.Millisecond) // the plain acks are grouped by the client; no signal to wait on
		}
	}
}

// An unloaded coordinator moves: when the bundle of its assign partition
// is unloaded, the broker that served it closes it (it no longer lists
// it), and the next transactional client recovers it from its log on
// the new owner; ids continue above every id given out.
func TestTxnClusterCoordinatorUnload(t *testing.T) {
	bc := startBrokerCluster(t, 3, 2, "--load-shedding-interval", "-1s",
		"--transaction-coordinator-enabled", "--transaction-coordinators", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	newClient := func() pulsar.Client {
		cl, err := pulsar.NewClient(pulsar.ClientOptions{URL: bc.brokers[0].service, EnableTransaction: true,
			OperationTimeout: 30 * time.Second, ConnectionTimeout: 5 * time.Second, Logger: plog.DefaultNopLogger()})
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	cl := newClient()
	topic := "persistent://public/default/txn-unload"
	prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true, SendTimeout: 0})
	if err != nil {
		t.Fatal(err)
	}
	var last pulsar.TxnID
	for range 3 {
		tx, err := cl.NewTransaction(time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("a"), Transaction: tx}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		last = tx.GetTxnID()
	}
	prod.Close()
	cl.Close() // a fresh client after the move: the Go client races on reconnects
	owner := bc.byService(bc.lookupOwner("persistent://pulsar/system/transaction_coordinator_assign-partition-0"))
	serving := func(p *proc) bool {
		code, _, body := httpDo(t, "GET", p.http+"/admin/v3/transactions/coordinators", "", false)
		var m map[string]string
		if err := json.Unmarshal(body, &m); code != 200 || err != nil {
			t.Fatalf("coordinators on %s: %d %s", p.service, code, body)
		}
		return m["0"] != ""
	}
	if !serving(owner) {
		t.Fatalf("%s owns the assign partition but does not serve coordinator 0", owner.service)
	}
	if code, _, body := httpDo(t, "PUT", owner.http+"/admin/v2/namespaces/pulsar/system/unload", "", true); code != 204 {
		t.Fatalf("unload pulsar/system: %d %s", code, body)
	}
	if serving(owner) {
		t.Fatalf("%s still serves coordinator 0 after its bundle was unloaded", owner.service)
	}
	cl = newClient()
	defer cl.Close()
	cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	prod, err = cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true, SendTimeout: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	tx, err := cl.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if id := tx.GetTxnID(); id.LeastSigBits <= last.LeastSigBits {
		t.Fatalf("id %+v after the move is not above %+v", id, last)
	}
	if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("b"), Transaction: tx}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 4 {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("after %q: %v", got, err)
		}
		got = append(got, string(m.Payload()))
	}
	if strings.Join(got, "") != "aaab" {
		t.Fatalf("received %q", got)
	}
	n := 0
	for _, p := range bc.brokers {
		if serving(p) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("coordinator 0 served by %d brokers", n)
	}
}

// lookupOwner returns the broker URL an HTTP lookup of topic names.
func (bc *brokerCluster) lookupOwner(topic string) string {
	bc.t.Helper()
	code, _, body := httpDo(bc.t, "GET", bc.live().http+"/lookup/v2/topic/"+strings.Replace(topic, "://", "/", 1), "", true)
	var ld struct {
		BrokerURL string `json:"brokerUrl"`
	}
	if err := json.Unmarshal(body, &ld); err != nil || code != 200 || ld.BrokerURL == "" {
		bc.t.Fatalf("lookup %s: %d %s", topic, code, body)
	}
	return ld.BrokerURL
}
