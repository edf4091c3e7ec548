package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
)

// TestMain runs the children some tests start from this test binary (a
// producer, a transaction pipeline: see childProducerEnv and
// childTxnPipelineEnv), else the tests.
func TestMain(m *testing.M) {
	if spec, ok := os.LookupEnv(childProducerEnv); ok {
		os.Exit(runChildProducer(spec))
	}
	if spec, ok := os.LookupEnv(childTxnPipelineEnv); ok {
		os.Exit(runChildTxnPipeline(spec))
	}
	code := m.Run()
	cleanupFnBuilds()
	removeMagnetarBuild()
	os.Exit(code)
}

// proc is a magnetar subprocess started by a test.
type proc struct {
	t       testing.TB
	cmd     *exec.Cmd
	service string // pulsar://host:port
	http    string // http://host:port
	logPath string
	exited  chan struct{}
	waitErr error
}

// startStandalone runs `magnetar standalone` on dataDir with free ports
// and waits for its ready line. extra flags are appended.
func startStandalone(t testing.TB, dataDir string, extra ...string) *proc {
	t.Helper()
	// Function instances run as an unprivileged account under a root
	// worker: they must be able to reach the worker's data directory.
	instancesMayReach(t, dataDir, 0o711)
	args := append([]string{"standalone", "--data-dir", dataDir,
		"--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--advertised-host", "127.0.0.1"}, extra...)
	p, _ := startMagnetar(t, "standalone", "magnetar standalone ready", args...)
	return p
}

func (p *proc) log() string {
	b, _ := os.ReadFile(p.logPath)
	if len(b) > 8000 {
		b = b[len(b)-8000:]
	}
	return string(b)
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// stop sends SIGTERM and waits for a graceful exit, which must succeed.
func (p *proc) stop() {
	p.t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		if p.waitErr != nil {
			p.t.Fatalf("standalone exited with %v after SIGTERM; log:\n%s", p.waitErr, p.log())
		}
	case <-time.After(60 * time.Second):
		p.t.Fatalf("standalone did not stop within 60s of SIGTERM; log:\n%s", p.log())
	}
}

// client connects the Go client to p. Close it before stopping p: a
// client closed against a dead server waits out its operation timeout for
// every producer and consumer it still has.
func (p *proc) client(t testing.TB) pulsar.Client {
	t.Helper()
	return p.clientWithTimeout(t, 30*time.Second)
}

func (p *proc) clientWithTimeout(t testing.TB, opTimeout time.Duration) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{
		URL:               p.service,
		OperationTimeout:  opTimeout,
		ConnectionTimeout: 10 * time.Second,
		Logger:            plog.DefaultNopLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func (p *proc) get(t testing.TB, path string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(p.http + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// receiveAll reads from c until want is satisfied or the deadline passes,
// acking everything, and returns every payload seen with its count.
func receiveUntil(t testing.TB, c pulsar.Consumer, deadline time.Duration, done func(seen map[string]int) bool) map[string]int {
	t.Helper()
	seen := map[string]int{}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	for !done(seen) {
		m, err := c.Receive(ctx)
		if err != nil {
			t.Fatalf("receive after %d distinct messages: %v", len(seen), err)
		}
		seen[string(m.Payload())]++
		if err := c.Ack(m); err != nil {
			t.Fatalf("ack: %v", err)
		}
	}
	return seen
}

func payload(i int) string { return fmt.Sprintf("msg-%08d", i) }
