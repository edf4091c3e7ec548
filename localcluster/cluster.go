package localcluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config is a local cluster: the flags of `magnetar cluster`.
type Config struct {
	// DataDir holds ZooKeeper's data, one directory per bookie and the
	// children's logs (DataDir/logs).
	DataDir string
	// ZKPort is ZooKeeper's client port on 127.0.0.1 (0: a free port);
	// ZKJar its server jar.
	ZKPort int
	ZKJar  string
	// Bookies is the number of bookies, on BookieBasePort, +1, ... (0:
	// free ports).
	Bookies        int
	BookieBasePort int
	// Brokers is the number of brokers, on the ports of Listen and HTTP,
	// +1, ... (a port of 0: a free port each); AdvertisedHost is the host
	// they give clients in lookups.
	Brokers        int
	Listen, HTTP   string
	AdvertisedHost string
	// Ensemble, WriteQuorum and AckQuorum of the brokers' new ledgers.
	Ensemble, WriteQuorum, AckQuorum int
	// NoSync: bookies skip fdatasync (not durable).
	NoSync bool
	// Restart starts a child that died again (same ports, same directory).
	Restart bool
	// SessionTimeout is the brokers' ZooKeeper session timeout.
	SessionTimeout time.Duration
	// Stdout gets the ready line, Stderr progress and the children's
	// deaths (default: the process's).
	Stdout, Stderr io.Writer
}

// cluster is one run of Run.
type cluster struct {
	cfg  Config
	self string // this binary
	logs string // DataDir/logs
	sup  *supervisor
	url  string // the metadata URL, once ZooKeeper serves
}

// Run starts ZooKeeper, the bookies and the brokers as children of this
// process (which must be the magnetar binary: they run its bookie and
// broker subcommands), prints one ready line on Stdout and supervises
// them until ctx ends; then it stops the brokers, the bookies and
// ZooKeeper, in that order.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Bookies < cfg.Ensemble {
		return fmt.Errorf("--bookies %d < --ensemble %d", cfg.Bookies, cfg.Ensemble)
	}
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stdout
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return err
	}
	c := &cluster{cfg: cfg, self: self, logs: filepath.Join(dataDir, "logs"),
		sup: &supervisor{restart: cfg.Restart, log: cfg.Stderr}}
	if err := os.MkdirAll(c.logs, 0o755); err != nil {
		return err
	}
	defer c.sup.stopAll()
	if err := c.startZooKeeper(filepath.Join(dataDir, "zookeeper")); err != nil {
		return err
	}
	if err := c.startBookies(dataDir); err != nil {
		return err
	}
	services, firstHTTP, err := c.startBrokers()
	if err != nil {
		return err
	}
	fmt.Fprintf(cfg.Stdout, "magnetar cluster ready service=pulsar://%s http=%s metadata=%s\n", strings.Join(services, ","), firstHTTP, c.url)
	fmt.Fprintf(cfg.Stderr, "logs in %s; Ctrl-C stops the cluster\n", c.logs)
	c.sup.watch(ctx)
	<-ctx.Done()
	fmt.Fprintln(cfg.Stderr, "stopping the cluster")
	return nil
}

// magnetar starts this binary's subcommand args as child name and waits
// for its ready line.
func (c *cluster) magnetar(name, ready string, args ...string) (string, error) {
	start := func() (*child, <-chan string, error) {
		return startMagnetarChild(c.self, name, filepath.Join(c.logs, name+".log"), ready, args)
	}
	return c.sup.add(name, start)
}

func (c *cluster) startZooKeeper(dir string) error {
	port := c.cfg.ZKPort
	if port == 0 {
		var err error
		if port, err = freeTCPPort(); err != nil {
			return err
		}
	}
	t0 := time.Now()
	if _, err := c.sup.add("zookeeper", func() (*child, <-chan string, error) {
		ch, err := startZooKeeper(dir, c.cfg.ZKJar, port)
		return ch, nil, err
	}); err != nil {
		return err
	}
	c.url = fmt.Sprintf("zk://127.0.0.1:%d/magnetar", port)
	fmt.Fprintf(c.cfg.Stderr, "zookeeper serving on 127.0.0.1:%d (%v)\n", port, time.Since(t0).Round(time.Millisecond))
	return nil
}

func (c *cluster) startBookies(dataDir string) error {
	for i := range c.cfg.Bookies {
		port := 0
		if c.cfg.BookieBasePort != 0 {
			port = c.cfg.BookieBasePort + i
		} else {
			var err error
			if port, err = freeTCPPort(); err != nil {
				return err // a fixed port, so that a restart keeps the bookie id
			}
		}
		args := []string{"bookie", "--metadata-url", c.url, "--listen", fmt.Sprintf("127.0.0.1:%d", port),
			"--data-dir", filepath.Join(dataDir, fmt.Sprintf("bookie-%d", i))}
		if c.cfg.NoSync {
			args = append(args, "--journal-no-sync")
		}
		line, err := c.magnetar(fmt.Sprintf("bookie-%d", i), "magnetar bookie ready", args...)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.cfg.Stderr, "%s\n", line)
	}
	return nil
}

// startBrokers returns the brokers' service addresses and the first
// one's HTTP URL.
func (c *cluster) startBrokers() (services []string, firstHTTP string, err error) {
	cfg := c.cfg
	for i := range cfg.Brokers {
		listen, err := nthAddr(cfg.Listen, i)
		if err != nil {
			return nil, "", err
		}
		web, err := nthAddr(cfg.HTTP, i)
		if err != nil {
			return nil, "", err
		}
		name := "broker"
		if cfg.Brokers > 1 {
			name = fmt.Sprintf("broker-%d", i)
		}
		line, err := c.magnetar(name, "magnetar broker ready", "broker", "--metadata-url", c.url,
			"--listen", listen, "--http", web, "--advertised-host", cfg.AdvertisedHost,
			"--zk-session-timeout", cfg.SessionTimeout.String(),
			"--ensemble", strconv.Itoa(cfg.Ensemble), "--write-quorum", strconv.Itoa(cfg.WriteQuorum),
			"--ack-quorum", strconv.Itoa(cfg.AckQuorum))
		if err != nil {
			return nil, "", err
		}
		fields := readyFields(line)
		fmt.Fprintf(cfg.Stderr, "%s\n", line)
		services = append(services, strings.TrimPrefix(fields["service"], "pulsar://"))
		if firstHTTP == "" {
			firstHTTP = fields["http"]
		}
	}
	return services, firstHTTP, nil
}

// readyFields are the key=value fields of a ready line.
func readyFields(line string) map[string]string {
	fields := map[string]string{}
	for _, kv := range strings.Fields(line) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			fields[k] = v
		}
	}
	return fields
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
