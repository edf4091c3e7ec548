package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/internal/zkserver"
)

// `magnetar cluster`: a local cluster for trying things out — Apache
// ZooKeeper (Debian's zookeeper package on Java, launched by
// internal/zkserver), N `magnetar bookie` processes and one
// `magnetar broker`, all children of this process, with their data and
// logs under --data-dir.

type clusterFlags struct {
	dataDir        string
	zkPort         int
	zkJar          string
	bookies        int
	bookieBasePort int
	listen         string
	httpAddr       string
	advertisedHost string
	quorum         quorumFlags
	noSync         bool
	brokers        int
	restart        bool
	sessionTimeout time.Duration
}

// newClusterCmd builds `magnetar cluster`.
func newClusterCmd() *cobra.Command {
	var f clusterFlags
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Start a local cluster: ZooKeeper, bookies and brokers (Ctrl-C stops all)",
		Long: `Starts ZooKeeper on 127.0.0.1:--zk-port (Debian's zookeeper package and
java are needed: apt-get install zookeeper default-jre-headless), --bookies
bookie processes on ports --bookie-base-port, +1, ... and --brokers broker
processes on the ports of --listen and --http, +1, ..., each a child of this
process with its data and log under --data-dir. A bookie's id is its
address, bound to its directory by a cookie: restart the cluster on the same
--data-dir with the same ports (0 picks free ports, for a one-off run).

When everything serves it prints (service lists every broker, a URL Pulsar
clients accept as is):
  magnetar cluster ready service=pulsar://HOST:PORT[,HOST:PORT...] http=http://HOST:PORT metadata=zk://127.0.0.1:PORT/magnetar
A child that dies is reported on stderr and the others keep serving (that
is what a local cluster is for: watch failover); with --restart it is
started again on the same ports and directory. SIGINT or SIGTERM stops the
brokers, then the bookies, then ZooKeeper.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCluster(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dataDir, "data-dir", "./magnetar-cluster", "directory for ZooKeeper, bookie data and logs")
	fl.IntVar(&f.zkPort, "zk-port", 2181, "ZooKeeper client port on 127.0.0.1 (0: a free port)")
	fl.StringVar(&f.zkJar, "zk-jar", zkserver.Jar, "ZooKeeper server jar")
	fl.IntVar(&f.bookies, "bookies", 3, "number of bookies")
	fl.IntVar(&f.bookieBasePort, "bookie-base-port", 3181, "port of the first bookie, the next ones follow (0: free ports)")
	fl.StringVar(&f.listen, "listen", ":6650", "broker Pulsar protocol listen address")
	fl.StringVar(&f.httpAddr, "http", ":8080", "broker admin/lookup HTTP listen address")
	fl.StringVar(&f.advertisedHost, "advertised-host", "localhost", "host name the broker gives clients in lookups")
	fl.BoolVar(&f.noSync, "journal-no-sync", false, "bookies skip fdatasync (NOT DURABLE; for quick experiments)")
	fl.IntVar(&f.brokers, "brokers", 1, "number of brokers")
	fl.BoolVar(&f.restart, "restart", false, "start a child that died again (same ports, same directory)")
	fl.DurationVar(&f.sessionTimeout, "zk-session-timeout", 6*time.Second, "brokers' ZooKeeper session timeout: how long a dead broker's bundles stay assigned to it")
	f.quorum.register(cmd)
	return cmd
}

// child is a process started by the cluster, killed if the cluster dies
// (parent-death signal from a thread that outlives the child).
type child struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error // set before done closes
}

// startChild starts argv with stdout and stderr appended to logPath, and
// returns once it runs; env is added to this process's environment. If ready is not empty, lines of stdout starting
// with it are sent on the returned channel.
func startChild(name, logPath, ready string, env []string, argv ...string) (*child, <-chan string, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	c := &child{name: name, logPath: logPath, done: make(chan struct{})}
	c.cmd = exec.Command(argv[0], argv[1:]...)
	if env != nil {
		c.cmd.Env = append(os.Environ(), env...)
	}
	c.cmd.Stderr = logf
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	lines := make(chan string, 1)
	var out io.ReadCloser
	if ready != "" {
		if out, err = c.cmd.StdoutPipe(); err != nil {
			logf.Close()
			return nil, nil, err
		}
	} else {
		c.cmd.Stdout = logf
	}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: Pdeathsig follows this thread
		defer close(c.done)
		defer logf.Close()
		if err := c.cmd.Start(); err != nil {
			c.err = err
			started <- err
			return
		}
		started <- nil
		if out != nil {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				line := sc.Text()
				fmt.Fprintln(logf, line)
				if strings.HasPrefix(line, ready) {
					select {
					case lines <- line:
					default:
					}
				}
			}
			io.Copy(logf, out)
		}
		c.err = c.cmd.Wait()
	}()
	if err := <-started; err != nil {
		<-c.done
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return c, lines, nil
}

// waitReady waits for a ready line, the child's exit, or the timeout.
func (c *child) waitReady(lines <-chan string, timeout time.Duration) (string, error) {
	select {
	case line := <-lines:
		return line, nil
	case <-c.done:
		return "", fmt.Errorf("%s exited before it was ready (%v); see %s:\n%s", c.name, c.err, c.logPath, tailFile(c.logPath, 20))
	case <-time.After(timeout):
		return "", fmt.Errorf("%s not ready after %v; see %s", c.name, timeout, c.logPath)
	}
}

// stop sends SIGTERM and waits up to grace before SIGKILL.
func (c *child) stop(grace time.Duration) {
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		c.cmd.Process.Kill()
		<-c.done
	}
}

func tailFile(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func freeTCPPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startZooKeeper writes a standalone zoo.cfg under dir and starts the
// server, returning once it answers srvr.
func startZooKeeper(dir, jar string, port int) (*child, error) {
	java, err := zkserver.Java(jar)
	if err != nil {
		return nil, err
	}
	// Durable (ZooKeeper's default forceSync), and a long-lived cluster
	// purges old snapshots.
	if _, err := zkserver.WriteConfig(dir, port, "autopurge.snapRetainCount=3\nautopurge.purgeInterval=1\n"); err != nil {
		return nil, err
	}
	c, _, err := startChild("zookeeper", filepath.Join(dir, "zookeeper.log"), "", nil,
		append([]string{java}, zkserver.JavaArgs(dir, jar, dir)...)...)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(60 * time.Second)
	for !zkserver.Serving(addr) {
		select {
		case <-c.done:
			return nil, fmt.Errorf("zookeeper exited during startup (%v):\n%s", c.err, tailFile(c.logPath, 30))
		case <-time.After(50 * time.Millisecond): // readiness poll
		}
		if time.Now().After(deadline) {
			c.stop(5 * time.Second)
			return nil, fmt.Errorf("zookeeper not serving on %s after 60s:\n%s", addr, tailFile(c.logPath, 30))
		}
	}
	return c, nil
}

func runCluster(ctx context.Context, f clusterFlags) error {
	if f.bookies < f.quorum.ensemble {
		return fmt.Errorf("--bookies %d < --ensemble %d", f.bookies, f.quorum.ensemble)
	}
	ctx, stop := signalContext(ctx)
	defer stop()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dataDir, err := filepath.Abs(f.dataDir)
	if err != nil {
		return err
	}
	logs := filepath.Join(dataDir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}
	sup := &supervisor{restart: f.restart}
	defer sup.stopAll()
	// The children re-execute this binary; under `go test` the test binary
	// is magnetar only with MAGNETAR_MAIN_ARGS, so pass the arguments that
	// way too (ignored by a real magnetar binary, which reads os.Args).
	magnetar := func(name, ready string, args ...string) (string, error) {
		start := func() (*child, <-chan string, error) {
			return startMagnetarChild(self, name, filepath.Join(logs, name+".log"), ready, args)
		}
		return sup.add(name, start)
	}

	zkPort := f.zkPort
	if zkPort == 0 {
		if zkPort, err = freeTCPPort(); err != nil {
			return err
		}
	}
	t0 := time.Now()
	zkDir := filepath.Join(dataDir, "zookeeper")
	if _, err := sup.add("zookeeper", func() (*child, <-chan string, error) {
		c, err := startZooKeeper(zkDir, f.zkJar, zkPort)
		return c, nil, err
	}); err != nil {
		return err
	}
	url := fmt.Sprintf("zk://127.0.0.1:%d/magnetar", zkPort)
	fmt.Fprintf(os.Stderr, "zookeeper serving on 127.0.0.1:%d (%v)\n", zkPort, time.Since(t0).Round(time.Millisecond))

	for i := range f.bookies {
		port := 0
		if f.bookieBasePort != 0 {
			port = f.bookieBasePort + i
		} else if port, err = freeTCPPort(); err != nil {
			return err // a fixed port, so that a restart keeps the bookie id
		}
		args := []string{"bookie", "--metadata-url", url, "--listen", fmt.Sprintf("127.0.0.1:%d", port),
			"--data-dir", filepath.Join(dataDir, fmt.Sprintf("bookie-%d", i))}
		if f.noSync {
			args = append(args, "--journal-no-sync")
		}
		line, err := magnetar(fmt.Sprintf("bookie-%d", i), "magnetar bookie ready", args...)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%s\n", line)
	}
	var services []string
	var firstHTTP string
	for i := range f.brokers {
		listen, err := nthAddr(f.listen, i)
		if err != nil {
			return err
		}
		web, err := nthAddr(f.httpAddr, i)
		if err != nil {
			return err
		}
		name := "broker"
		if f.brokers > 1 {
			name = fmt.Sprintf("broker-%d", i)
		}
		line, err := magnetar(name, "magnetar broker ready", "broker", "--metadata-url", url,
			"--listen", listen, "--http", web, "--advertised-host", f.advertisedHost,
			"--zk-session-timeout", f.sessionTimeout.String(),
			"--ensemble", strconv.Itoa(f.quorum.ensemble), "--write-quorum", strconv.Itoa(f.quorum.writeQuorum),
			"--ack-quorum", strconv.Itoa(f.quorum.ackQuorum))
		if err != nil {
			return err
		}
		fields := map[string]string{}
		for _, kv := range strings.Fields(line) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				fields[k] = v
			}
		}
		fmt.Fprintf(os.Stderr, "%s\n", line)
		services = append(services, strings.TrimPrefix(fields["service"], "pulsar://"))
		if firstHTTP == "" {
			firstHTTP = fields["http"]
		}
	}
	fmt.Printf("magnetar cluster ready service=pulsar://%s http=%s metadata=%s\n", strings.Join(services, ","), firstHTTP, url)
	fmt.Fprintf(os.Stderr, "logs in %s; Ctrl-C stops the cluster\n", logs)
	sup.watch(ctx)
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "stopping the cluster")
	return nil
}

// nthAddr is addr ("host:port") with port+i; a port of 0 becomes a free
// port chosen now, so that a restarted child gets the same one.
func nthAddr(addr string, i int) (string, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil {
		return "", fmt.Errorf("address %q: %w", addr, err)
	}
	if port == 0 {
		if port, err = freeTCPPort(); err != nil {
			return "", err
		}
	} else {
		port += i
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// supervisor owns the cluster's children: it reports a child that dies,
// restarts it if asked, and stops them all in reverse start order.
type supervisor struct {
	restart bool
	mu      sync.Mutex
	procs   []*supervised // start order; protected by mu
	stopped bool          // protected by mu
}

type supervised struct {
	name  string
	start func() (*child, <-chan string, error)
	cur   *child // protected by supervisor.mu
}

// add starts a child and waits for its ready line (if it has one).
func (s *supervisor) add(name string, start func() (*child, <-chan string, error)) (string, error) {
	p := &supervised{name: name, start: start}
	c, lines, err := start()
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	p.cur = c
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	if lines == nil {
		return "", nil
	}
	return c.waitReady(lines, 60*time.Second)
}

// watch follows every child until ctx ends: a death is reported and, with
// restart, the child is started again (after a second, then backing off
// to 30 s while it keeps dying).
func (s *supervisor) watch(ctx context.Context) {
	s.mu.Lock()
	procs := slices.Clone(s.procs)
	s.mu.Unlock()
	for _, p := range procs {
		go func() {
			backoff := time.Second
			for {
				s.mu.Lock()
				c := p.cur
				s.mu.Unlock()
				select {
				case <-ctx.Done():
					return
				case <-c.done:
				}
				s.mu.Lock()
				stopped := s.stopped
				s.mu.Unlock()
				if stopped || ctx.Err() != nil {
					return
				}
				fmt.Fprintf(os.Stderr, "magnetar cluster: %s exited unexpectedly (%v); see %s\n", p.name, c.err, c.logPath)
				if !s.restart {
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(backoff):
				}
				started := time.Now()
				nc, lines, err := p.start()
				if err != nil {
					fmt.Fprintf(os.Stderr, "magnetar cluster: restart %s: %v\n", p.name, err)
					backoff = min(2*backoff, 30*time.Second)
					continue
				}
				s.mu.Lock()
				if s.stopped {
					s.mu.Unlock()
					nc.stop(30 * time.Second)
					return
				}
				p.cur = nc
				s.mu.Unlock()
				if lines != nil {
					if _, err := nc.waitReady(lines, 60*time.Second); err != nil {
						fmt.Fprintf(os.Stderr, "magnetar cluster: restart %s: %v\n", p.name, err)
					}
				}
				fmt.Fprintf(os.Stderr, "magnetar cluster: %s restarted (%v)\n", p.name, time.Since(started).Round(time.Millisecond))
				if time.Since(started) > time.Minute {
					backoff = time.Second
				} else {
					backoff = min(2*backoff, 30*time.Second)
				}
			}
		}()
	}
}

// stopAll stops every child, last started first.
func (s *supervisor) stopAll() {
	s.mu.Lock()
	s.stopped = true
	procs := slices.Clone(s.procs)
	s.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		s.mu.Lock()
		c := procs[i].cur
		s.mu.Unlock()
		c.stop(30 * time.Second)
	}
}

// startMagnetarChild runs this binary with args as a magnetar subcommand.
func startMagnetarChild(self, name, logPath, ready string, args []string) (*child, <-chan string, error) {
	env := []string{"MAGNETAR_MAIN_ARGS=" + strings.Join(args, "\x1f")}
	return startChild(name, logPath, ready, env, append([]string{self}, args...)...)
}
