package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/internal/testenv"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
)

// Exactly-once consume-process-produce across kill -9 of the broker.
//
// A pipeline process (this test binary, see runChildTxnPipeline) reads
// the input topic and, per transaction, produces "out:<input>" for a few
// inputs and acknowledges them, then commits. The test SIGKILLs the
// standalone at a random point of that loop (after a random number of
// commits, a random few milliseconds in), kills the pipeline (it has no
// broker left), restarts the standalone on the same data and starts a
// fresh pipeline. Transactions open at a kill are aborted by their
// timeout after the restart, releasing their acks, so their inputs are
// processed again. At the end every input must be in the output exactly
// once and the input subscription's backlog must be empty.
//
// The pipeline runs in a child process because pulsar-client-go v0.19
// races with itself when a connection drops under a producer or the
// transaction handler; a fresh process per broker life keeps those races
// out of this process (whose race detector watches the test).
func TestTxnE2EExactlyOnceKill9(t *testing.T) {
	inputs, kills := 200, 4
	if testenv.Soak() {
		inputs, kills = 2000, 25
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	flags := []string{"--transaction-coordinator-enabled", "--transaction-coordinators", "2"}
	p := startStandalone(t, dir, flags...)
	in := "persistent://public/default/eo-in"
	out := "persistent://public/default/eo-out"

	cl := p.client(t)
	prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: in, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for i := range inputs {
		if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("in-%05d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	prod.Close()
	cl.Close()

	for k := range kills {
		pl := startTxnPipeline(t, p, in, out, rng.Uint64())
		after := rng.IntN(8)
		select {
		case <-pl.commitsReached(after):
		case <-pl.exited:
			t.Fatalf("pipeline %d exited early\n%s", k, pl.output())
		case <-time.After(60 * time.Second):
			t.Fatalf("pipeline %d: %d commits not reached in 60s\n%s\nbroker:\n%s", k, after, pl.output(), p.log())
		}
		time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond) // a random point in the loop, not a wait for an event
		p.kill()
		pl.kill()
		t.Logf("kill %d: the pipeline had committed %d transactions", k, pl.commits())
		p = startStandalone(t, dir, flags...)
	}

	// The last life: runs until every input is out.
	pl := startTxnPipeline(t, p, in, out, rng.Uint64())
	cl = p.client(t)
	cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: out, SubscriptionName: "verify",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	deadline, dcancel := context.WithTimeout(ctx, 90*time.Second)
	defer dcancel()
	for len(seen) < inputs {
		m, err := cons.Receive(deadline)
		if err != nil {
			t.Fatalf("%d of %d inputs in the output: %v\npipeline:\n%s\nbroker:\n%s", len(seen), inputs, err, pl.output(), p.log())
		}
		seen[string(m.Payload())]++
		cons.Ack(m)
	}
	pl.stop()
	// Whatever the pipeline committed is visible now: drain it.
	quiet, qcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	for {
		m, err := cons.Receive(quiet)
		if err != nil {
			break
		}
		seen[string(m.Payload())]++
	}
	qcancel()
	for i := range inputs {
		want := fmt.Sprintf("out:in-%05d", i)
		if n := seen[want]; n != 1 {
			t.Errorf("%s is in the output %d times", want, n)
		}
		delete(seen, want)
	}
	if len(seen) > 0 {
		t.Errorf("unexpected output: %v", seen)
	}
	// Every input's ack was committed.
	backlog := func() int64 {
		_, body := p.get(t, "/admin/v2/persistent/public/default/eo-in/stats")
		var st struct {
			Subscriptions map[string]struct {
				MsgBacklog int64 `json:"msgBacklog"`
			} `json:"subscriptions"`
		}
		if err := json.Unmarshal(body, &st); err != nil {
			t.Fatalf("stats: %v: %s", err, body)
		}
		return st.Subscriptions["pipeline"].MsgBacklog
	}
	if n := backlog(); n != 0 {
		t.Errorf("input backlog %d after the pipeline finished", n)
	}
	// The input subscription's pending acks are all ended.
	if out := runAdmin(t, p, false, "-o", "json", "transactions", "pending-ack-stats", "-t", in, "-s", "pipeline"); !strings.Contains(out, `"pendingAckedEntries": 0`) || !strings.Contains(out, `"ongoingTxnSize": 0`) {
		t.Errorf("pending-ack-stats:\n%s", out)
	}
	cons.Close()
	cl.Close()
	p.stop()
}

// txnPipeline is a running pipeline child.
type txnPipeline struct {
	cmd    *exec.Cmd
	exited chan struct{}
	mu     sync.Mutex
	n      int
	lines  []string
	wait   map[int][]chan struct{}
}

func startTxnPipeline(t *testing.T, p *proc, in, out string, seed uint64) *txnPipeline {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childTxnPipelineEnv+"="+strings.Join([]string{p.service, in, out, strconv.FormatUint(seed, 10)}, "\x1f"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pl := &txnPipeline{cmd: cmd, exited: make(chan struct{}), wait: map[int][]chan struct{}{}}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			pl.mu.Lock()
			if strings.HasPrefix(line, "COMMIT ") {
				pl.n++
				for _, ch := range pl.wait[pl.n] {
					close(ch)
				}
				delete(pl.wait, pl.n)
			}
			pl.lines = append(pl.lines, line)
			if len(pl.lines) > 200 {
				pl.lines = pl.lines[len(pl.lines)-200:]
			}
			pl.mu.Unlock()
		}
		cmd.Wait()
		close(pl.exited)
	}()
	t.Cleanup(pl.kill)
	return pl
}

// commitsReached is closed once the pipeline has committed n
// transactions.
func (pl *txnPipeline) commitsReached(n int) <-chan struct{} {
	ch := make(chan struct{})
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.n >= n {
		close(ch)
	} else {
		pl.wait[n] = append(pl.wait[n], ch)
	}
	return ch
}

func (pl *txnPipeline) commits() int {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return pl.n
}

func (pl *txnPipeline) output() string {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return strings.Join(pl.lines, "\n")
}

func (pl *txnPipeline) kill() {
	pl.cmd.Process.Kill()
	<-pl.exited
}

// stop asks the pipeline to finish its transaction and exit.
func (pl *txnPipeline) stop() {
	pl.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-pl.exited:
	case <-time.After(30 * time.Second):
		pl.kill()
	}
}

// childTxnPipelineEnv makes the test binary a pipeline child:
// "serviceURL\x1finput\x1foutput\x1fseed".
const childTxnPipelineEnv = "MAGNETAR_TEST_CHILD_TXN_PIPELINE"

// runChildTxnPipeline consumes the input on subscription "pipeline" and
// per transaction produces "out:<payload>" for 1 to 5 inputs and
// acknowledges them, printing "COMMIT n" after each commit, until
// SIGTERM. A failed step aborts the transaction and hands its inputs
// back (negative ack); the broker refuses an ack of an input another
// transaction holds or committed, so an input is never output twice.
func runChildTxnPipeline(spec string) int {
	f := strings.Split(spec, "\x1f")
	seed, _ := strconv.ParseUint(f[3], 10, 64)
	rng := rand.New(rand.NewPCG(seed, 1))
	cl, err := pulsar.NewClient(pulsar.ClientOptions{URL: f[0], EnableTransaction: true,
		OperationTimeout: 10 * time.Second, ConnectionTimeout: 5 * time.Second, Logger: plog.DefaultNopLogger()})
	if err != nil {
		fmt.Println("ERR client", err)
		return 1
	}
	defer cl.Close()
	cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: f[1], SubscriptionName: "pipeline", Type: pulsar.Shared,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, NackRedeliveryDelay: 100 * time.Millisecond})
	if err != nil {
		fmt.Println("ERR subscribe", err)
		return 1
	}
	defer cons.Close()
	prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: f[2], DisableBatching: true, SendTimeout: 10 * time.Second})
	if err != nil {
		fmt.Println("ERR producer", err)
		return 1
	}
	defer prod.Close()
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	commits := 0
	for {
		select {
		case <-term:
			return 0
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		first, err := cons.Receive(ctx)
		cancel()
		if err != nil {
			continue
		}
		batch := []pulsar.Message{first}
		for want := 1 + rng.IntN(5); len(batch) < want; {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			m, err := cons.Receive(ctx)
			cancel()
			if err != nil {
				break
			}
			batch = append(batch, m)
		}
		if err := processInTxn(cl, cons, prod, batch); err != nil {
			fmt.Println("ERR", err)
			for _, m := range batch {
				cons.Nack(m)
			}
			continue
		}
		commits++
		fmt.Println("COMMIT", commits)
	}
}

func processInTxn(cl pulsar.Client, cons pulsar.Consumer, prod pulsar.Producer, batch []pulsar.Message) error {
	tx, err := cl.NewTransaction(4 * time.Second)
	if err != nil {
		return fmt.Errorf("new transaction: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fail := func(what string, err error) error {
		tx.Abort(ctx)
		return fmt.Errorf("%s in %v: %w", what, tx.GetTxnID(), err)
	}
	for _, m := range batch {
		if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: append([]byte("out:"), m.Payload()...), Transaction: tx}); err != nil {
			return fail("send", err)
		}
	}
	for _, m := range batch {
		if err := cons.AckWithTxn(m, tx); err != nil {
			return fail("ack "+string(m.Payload()), err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fail("commit", err)
	}
	return nil
}
