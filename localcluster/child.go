package localcluster

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/magnetar-mq/magnetar/internal/zkserver"
)

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
// returns once it runs. If ready is not empty, lines of stdout starting
// with it are sent on the returned channel.
func startChild(name, logPath, ready string, argv ...string) (*child, <-chan string, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	c := &child{name: name, logPath: logPath, done: make(chan struct{})}
	c.cmd = exec.Command(argv[0], argv[1:]...)
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
	c, _, err := startChild("zookeeper", filepath.Join(dir, "zookeeper.log"), "",
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

// startMagnetarChild runs this binary with args as a magnetar subcommand.
func startMagnetarChild(self, name, logPath, ready string, args []string) (*child, <-chan string, error) {
	return startChild(name, logPath, ready, append([]string{self}, args...)...)
}
