package e2e

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/autorecovery"
	"github.com/magnetar-mq/magnetar/internal/zktest"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/zookeeper"
)

// Clustered process tests: a real ZooKeeper (internal/zktest), bookie and
// broker processes of the magnetar binary (magnetarBinary), each
// printing a ready line.

// testCluster is a ZooKeeper server and the processes of one test.
type testCluster struct {
	t      testing.TB
	zk     *zktest.Server
	url    string // zk://.../chroot
	broker *proc
}

func newTestCluster(t testing.TB) *testCluster {
	t.Helper()
	zk := zktest.StartServer(t)
	return &testCluster{t: t, zk: zk, url: "zk://" + zk.Addr() + "/magnetar"}
}

// startMagnetar runs the magnetar subcommand args and waits for the stdout
// line starting with ready; it returns the process and that line's
// key=value fields.
func startMagnetar(t testing.TB, name, ready string, args ...string) (*proc, map[string]string) {
	t.Helper()
	return startMagnetarVia(t, nil, name, ready, args...)
}

// startMagnetarVia is startMagnetar with the binary run through a command
// prefix (e.g. "ip netns exec NS").
func startMagnetarVia(t testing.TB, prefix []string, name, ready string, args ...string) (*proc, map[string]string) {
	t.Helper()
	argv := append(append(append([]string(nil), prefix...), magnetarBinary(t)), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logPath := filepath.Join(t.TempDir(), name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, ready) {
				lines <- line
			}
		}
		io.Copy(io.Discard, out)
	}()
	go func() {
		p.waitErr = cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	t.Cleanup(func() { p.kill() })
	fields := map[string]string{}
	select {
	case line := <-lines:
		for _, f := range strings.Fields(line) {
			if k, v, ok := strings.Cut(f, "="); ok {
				fields[k] = v
			}
		}
		p.service, p.http = fields["service"], fields["http"]
	case <-p.exited:
		t.Fatalf("%s exited before ready (%v); log:\n%s", name, p.waitErr, p.log())
	case <-time.After(60 * time.Second):
		t.Fatalf("%s not ready after 60s; log:\n%s", name, p.log())
	}
	return p, fields
}

// bookieProc is a `magnetar bookie` process.
type bookieProc struct {
	*proc
	id  string
	dir string
}

// startBookie starts a bookie on a fresh directory (dir "" makes one).
func (c *testCluster) startBookie(dir string) *bookieProc {
	c.t.Helper()
	if dir == "" {
		dir = c.t.TempDir()
	}
	p, f := startMagnetar(c.t, "bookie", "magnetar bookie ready",
		"bookie", "--metadata-url", c.url, "--listen", "127.0.0.1:0", "--data-dir", dir)
	return &bookieProc{proc: p, id: f["id"], dir: dir}
}

// startBroker starts `magnetar broker` at E=3, Qw=2, Qa=2 with extra flags.
func (c *testCluster) startBroker(extra ...string) *proc {
	c.t.Helper()
	args := append([]string{"broker", "--metadata-url", c.url,
		"--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--advertised-host", "127.0.0.1",
		"--ensemble", "3", "--write-quorum", "2", "--ack-quorum", "2"}, extra...)
	p, _ := startMagnetar(c.t, "broker", "magnetar broker ready", args...)
	c.broker = p
	return p
}

// clusterNode is a test's own view of a cluster: its metadata store, the
// bookies over the network and a ledger client on them.
type clusterNode struct {
	store    metadata.Store
	resolver *ledger.NetResolver
	lc       *ledger.Client
}

// clusterClient opens the cluster's metadata store and a ledger client on
// the network, closed by t.Cleanup.
func (c *testCluster) clusterClient() *clusterNode {
	c.t.Helper()
	store, err := zookeeper.Open(c.url, zookeeper.Options{SessionTimeout: 10 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { store.Close() })
	resolver := ledger.NewNetResolver(ledger.NetOptions{Logger: slog.New(slog.DiscardHandler)})
	c.t.Cleanup(func() { resolver.Close() })
	lc, err := ledger.NewClient(store, resolver, ledger.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { lc.Close() })
	return &clusterNode{store: store, resolver: resolver, lc: lc}
}

// checkLedgers asserts that ledgers exist and every one has the given
// quorums, on registered bookies only.
func (c *testCluster) checkLedgers(e, qw, qa int) {
	c.t.Helper()
	n := c.clusterClient()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ids, err := n.lc.Ledgers(ctx)
	if err != nil || len(ids) == 0 {
		c.t.Fatalf("ledgers: %v, %v", ids, err)
	}
	avail, err := n.lc.WritableBookies(ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, id := range ids {
		m, _, err := n.lc.Metadata(ctx, id)
		if err != nil {
			c.t.Fatal(err)
		}
		if m.EnsembleSize != e || m.WriteQuorum != qw || m.AckQuorum != qa {
			c.t.Fatalf("ledger %d: E/Qw/Qa %d/%d/%d, want %d/%d/%d", id, m.EnsembleSize, m.WriteQuorum, m.AckQuorum, e, qw, qa)
		}
		for _, b := range m.Ensembles[0].Bookies {
			if !slices.Contains(avail, b) {
				c.t.Fatalf("ledger %d on %s, not a registered bookie (%v)", id, b, avail)
			}
		}
	}
}

func autorecoveryMarks(n *clusterNode) (map[int64]autorecovery.Mark, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return autorecovery.UnderReplicated(ctx, n.store)
}
