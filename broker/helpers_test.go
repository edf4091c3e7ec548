package broker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/broker/snap"
	"github.com/magnetar-mq/magnetar/internal/testenv"
)

// waitUntil polls cond (a state observation, not a timer) until it holds.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, 0, what, cond)
}

// earliest is the Earliest sentinel of Service's MessageID.
var earliest = MessageID{LedgerID: -1, EntryID: -1}

// TestMain removes the binary runWithoutRace built.
func TestMain(m *testing.M) {
	code := m.Run()
	if withoutRace.bin != "" {
		os.RemoveAll(filepath.Dir(withoutRace.bin))
	}
	os.Exit(code)
}

// withoutRace is this package's test binary built without the race
// detector, built once per run by runWithoutRace.
var withoutRace struct {
	once sync.Once
	bin  string
	took time.Duration
	err  error
}

// runWithoutRace runs the tests matching the -test.run pattern run in
// this package's tests built without the race detector, with env added:
// the sizes the race detector makes too slow to run in process.
func runWithoutRace(t *testing.T, run string, env ...string) {
	t.Helper()
	withoutRace.once.Do(func() {
		dir, err := os.MkdirTemp("", "broker-norace-")
		if err != nil {
			withoutRace.err = err
			return
		}
		withoutRace.bin = filepath.Join(dir, "broker.test")
		t0 := time.Now()
		if out, err := exec.Command("go", "test", "-c", "-o", withoutRace.bin, ".").CombinedOutput(); err != nil {
			withoutRace.err = fmt.Errorf("go test -c: %v\n%s", err, out)
		}
		withoutRace.took = time.Since(t0)
	})
	if withoutRace.err != nil {
		t.Fatal(withoutRace.err)
	}
	// The run may take what is left of this test's own deadline (a
	// loaded CI machine runs it several times slower than a quiet one).
	timeout := 10 * time.Minute
	if dl, ok := t.Deadline(); ok {
		timeout = max(time.Until(dl)-30*time.Second, time.Minute)
	}
	cmd := exec.Command(withoutRace.bin, "-test.run="+run, "-test.count=1", "-test.v", "-test.timeout="+timeout.String())
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	t.Logf("built in %s; the run without the race detector:\n%s", withoutRace.took.Round(time.Millisecond), out)
	if err != nil {
		t.Fatal(err)
	}
}

// subBacklog returns the backlog of topic's subscription sub.
func subBacklog(t testing.TB, b *Broker, topic, sub string) int64 {
	t.Helper()
	st, err := topicStats(b, ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	return st.Subscriptions[sub].MsgBacklog
}

// The admin operations the tests use, as package brokeradmin builds them
// on the core's seams (Broker.Topic and the view's operations).

// topicStats returns a topic's stats, loading it if it exists.
func topicStats(b *Broker, ctx context.Context, topic string) (snap.Topic, error) {
	v, err := b.Topic(ctx, topic)
	if err != nil {
		return snap.Topic{}, err
	}
	return v.Snapshot(true), nil
}

// terminate terminates a topic.
func terminate(b *Broker, ctx context.Context, topic string) (MessageID, error) {
	v, err := b.Topic(ctx, topic)
	if err != nil {
		return MessageID{}, err
	}
	return v.Terminate()
}

// skipMessages skips n entries of a subscription's backlog.
func skipMessages(b *Broker, ctx context.Context, topic, sub string, n int64) error {
	v, err := b.Topic(ctx, topic)
	if err != nil {
		return err
	}
	s, ok := v.Subscription(sub)
	if !ok {
		return ErrSubscriptionNotFound
	}
	defer v.CursorsMoved()
	return v.SkipEntries(s, n)
}

// createSubscription adds a durable subscription at id.
func createSubscription(b *Broker, ctx context.Context, topic, sub string, id MessageID) error {
	v, err := b.Topic(ctx, topic)
	if err != nil {
		return err
	}
	defer v.CursorsMoved()
	return v.CreateSubscription(sub, id)
}
