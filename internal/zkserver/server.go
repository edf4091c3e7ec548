package zkserver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Jar is the ZooKeeper server jar (Debian's zookeeper package). Its manifest
// Class-Path pulls in netty, jackson, slf4j-api and the rest.
const Jar = "/usr/share/java/zookeeper.jar"

// classpathExtra binds slf4j to log4j so the server log lands in a file.
var classpathExtra = []string{"/usr/share/java/slf4j-log4j12.jar", "/usr/share/java/log4j-1.2.jar"}

// StartTimeout bounds the wait for a server to serve.
var StartTimeout = 60 * time.Second

// Server is one running ZooKeeper. Its methods are safe for concurrent use.
type Server struct {
	dir    string
	ownDir bool
	java   string
	port   int

	mu   sync.Mutex
	cmd  *exec.Cmd     // protected by mu; nil when stopped
	done chan struct{} // protected by mu; closed when cmd has exited
}

// LaunchTemp starts a server in a new temporary directory of its own,
// which Close removes.
func LaunchTemp() (*Server, error) {
	dir, err := os.MkdirTemp("", "zkserver-")
	if err != nil {
		return nil, fmt.Errorf("zkserver: %w", err)
	}
	s, err := Launch(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.ownDir = true
	return s, nil
}

// Close stops the server and, for a Launch-ed server, removes its
// directory.
func (s *Server) Close() {
	s.Stop()
	if s.ownDir {
		os.RemoveAll(s.dir)
	}
}

// Java returns the java binary, or an error saying what to install when
// java or the ZooKeeper jar is missing.
func Java(jar string) (string, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("zkserver: java not found in PATH (%v): apt-get install default-jre-headless zookeeper (scripts/test does)", err)
	}
	if _, err := os.Stat(jar); err != nil {
		return "", fmt.Errorf("zkserver: %s missing (%v): apt-get install zookeeper (scripts/test does)", jar, err)
	}
	return java, nil
}

// Launch starts a server in dir (conf/, data/, log/ under it) on a free
// 127.0.0.1 port, with test settings (forceSync=no), and returns once it
// serves. Stop or Close it.
func Launch(dir string) (*Server, error) {
	java, err := Java(Jar)
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, java: java}
	var lastErr error
	for range 3 { // a port picked by the kernel can be taken before Java binds it
		if s.port, err = FreePort(); err != nil {
			return nil, fmt.Errorf("zkserver: %w", err)
		}
		if lastErr = s.start(); lastErr == nil {
			return s, nil
		}
	}
	return nil, fmt.Errorf("zkserver: %w", lastErr)
}

// Addr returns "127.0.0.1:port".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Dir is the server's directory: conf/, data/, log/zookeeper.out.
func (s *Server) Dir() string { return s.dir }

// FreePort returns a 127.0.0.1 port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) writeConfig() (string, error) {
	if err := os.MkdirAll(filepath.Join(s.dir, "log"), 0o755); err != nil {
		return "", err
	}
	return WriteConfig(s.dir, s.port, "forceSync=no\n")
}

// WriteConfig writes a standalone ZooKeeper configuration bound to
// 127.0.0.1:port under dir: dir/conf/zoo.cfg (data in dir/data, plus the
// extra zoo.cfg lines given) and dir/conf/log4j.properties (log to the
// console). It returns the zoo.cfg path. `magnetar cluster` and Server
// both start ZooKeeper from it.
func WriteConfig(dir string, port int, extra string) (string, error) {
	conf, data := filepath.Join(dir, "conf"), filepath.Join(dir, "data")
	for _, d := range []string{conf, data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	cfg := fmt.Sprintf(`tickTime=500
minSessionTimeout=1000
maxSessionTimeout=60000
dataDir=%s
clientPort=%d
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat,mntr,conf
`, data, port) + extra
	log4j := `log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1}: %m%n
`
	cfgPath := filepath.Join(conf, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(conf, "log4j.properties"), []byte(log4j), 0o644); err != nil {
		return "", err
	}
	return cfgPath, nil
}

// JavaArgs are the JVM arguments that run ZooKeeperServerMain from jar
// with the configuration WriteConfig wrote under dir, logging to logDir.
func JavaArgs(dir, jar, logDir string) []string {
	conf := filepath.Join(dir, "conf")
	cp := strings.Join(append([]string{conf, jar}, classpathExtra...), ":")
	return []string{"-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dzookeeper.log.dir=" + logDir,
		"-cp", cp, "org.apache.zookeeper.server.ZooKeeperServerMain", filepath.Join(conf, "zoo.cfg")}
}

// start launches the JVM and waits for imok.
func (s *Server) start() error {
	if _, err := s.writeConfig(); err != nil {
		return err
	}
	logPath := filepath.Join(s.dir, "log", "zookeeper.out")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.java, JavaArgs(s.dir, Jar, filepath.Join(s.dir, "log"))...)
	cmd.Stdout, cmd.Stderr = logf, logf
	killWithParent(cmd)
	t0 := time.Now()
	// The parent-death signal fires when the thread that forked exits, so
	// one goroutine, locked to its thread, starts the JVM and waits for it:
	// the thread outlives the JVM. Owned by Server: Stop waits for done.
	started := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		defer close(done)
		defer logf.Close()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		cmd.Wait()
	}()
	if err := <-started; err != nil {
		<-done
		return fmt.Errorf("start java: %w", err)
	}
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()

	deadline := time.Now().Add(StartTimeout)
	for time.Now().Before(deadline) {
		if Serving(s.Addr()) {
			return nil
		}
		select {
		case <-done:
			s.mu.Lock()
			s.cmd, s.done = nil, nil
			s.mu.Unlock()
			return fmt.Errorf("zookeeper on port %d exited during startup:\n%s", s.port, Tail(logPath, 30))
		case <-time.After(50 * time.Millisecond): // readiness poll interval
		}
	}
	s.Stop()
	return fmt.Errorf("zookeeper on port %d did not serve within %v (started %v ago):\n%s",
		s.port, StartTimeout, time.Since(t0).Round(time.Millisecond), Tail(logPath, 30))
}

// Stop kills the server and waits for the JVM to exit. The data directory
// is kept, so Restart finds the same tree and sessions. Stopping a stopped
// server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd, s.done = nil, nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	<-done
}

// Restart stops the server if it runs and starts it again on the same port
// with the same data.
func (s *Server) Restart() error {
	s.Stop()
	if err := s.start(); err != nil {
		return fmt.Errorf("zkserver: restart: %w", err)
	}
	return nil
}

// Serving reports whether the server at addr serves requests: ruok only
// says the process is up, srvr says "not currently serving" until the
// database is loaded.
func Serving(addr string) bool {
	out, err := FourLetter(addr, "srvr")
	return err == nil && strings.Contains(out, "Mode: ")
}

// Ruok reports whether the server at addr answers ruok with imok.
func Ruok(addr string) bool {
	out, err := FourLetter(addr, "ruok")
	return err == nil && out == "imok"
}

// FourLetter sends a four-letter-word command (ruok, srvr, stat, mntr,
// conf) and returns the reply.
func FourLetter(addr, cmd string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(cmd)); err != nil {
		return "", err
	}
	var buf bytes.Buffer
	_, err = buf.ReadFrom(c)
	if err != nil && !errors.Is(err, net.ErrClosed) && buf.Len() == 0 {
		return "", err
	}
	return buf.String(), nil
}

// Tail returns the last n lines of the file at path (a log), or the
// error reading it.
func Tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
