package functions

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// InstanceStats is what an instance reports on its stats pipe (one JSON
// line per report, cumulative since the process started) and what the
// worker keeps per instance across restarts.
type InstanceStats struct {
	Received             int64              `json:"received"`
	Processed            int64              `json:"processed"`
	UserExceptions       int64              `json:"userExceptions"`
	SystemExceptions     int64              `json:"systemExceptions"`
	LatencySumMs         float64            `json:"latencySumMs"`
	LatencyCount         int64              `json:"latencyCount"`
	LastInvocation       int64              `json:"lastInvocation"` // unix ms
	LatestUserException  []ExceptionInfo    `json:"latestUserExceptions,omitempty"`
	LatestSystemExceptio []ExceptionInfo    `json:"latestSystemExceptions,omitempty"`
	UserMetrics          map[string]float64 `json:"userMetrics,omitempty"`
}

// ExceptionInfo is Pulsar's ExceptionInformation.
type ExceptionInfo struct {
	ExceptionString string `json:"exceptionString"`
	TimestampMs     int64  `json:"timestampMs"`
}

func (s *InstanceStats) add(o InstanceStats) {
	s.Received += o.Received
	s.Processed += o.Processed
	s.UserExceptions += o.UserExceptions
	s.SystemExceptions += o.SystemExceptions
	s.LatencySumMs += o.LatencySumMs
	s.LatencyCount += o.LatencyCount
	s.LastInvocation = max(s.LastInvocation, o.LastInvocation)
}

// Env variables handed to an instance process (the SDK reads them).
const (
	EnvSpec       = "MAGNETAR_FUNCTION_SPEC"
	EnvInstanceID = "MAGNETAR_INSTANCE_ID"
	EnvServiceURL = "MAGNETAR_SERVICE_URL"
	EnvWorkerURL  = "MAGNETAR_WORKER_URL"
	EnvBuiltin    = "MAGNETAR_BUILTIN"
	EnvStateDir   = "MAGNETAR_INSTANCE_DIR"
	// The stats pipe is file descriptor 3 of the instance.
	StatsFD = 3
)

// Restart backoff: doubled per crash from backoffMin up to backoffMax,
// reset once a process has run for backoffReset.
const (
	backoffMin   = 200 * time.Millisecond
	backoffMax   = 30 * time.Second
	backoffReset = 30 * time.Second
	stopGrace    = 10 * time.Second
)

type instKey struct {
	kind Kind
	fqfn string
	id   int
}

// instance supervises one instance process: started, restarted with
// backoff when it dies, stopped when its context ends.
type instance struct {
	key     instKey
	rec     *Record
	version int64
	restart int64
	cancel  context.CancelFunc
	done    chan struct{}

	mu       sync.Mutex
	running  bool
	pid      int
	lastErr  string
	restarts int64
	base     InstanceStats // totals of earlier processes
	cur      InstanceStats // the live process's cumulative report
	started  time.Time
}

func (in *instance) stats() (InstanceStats, bool, string, int64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	s := in.base
	s.add(in.cur)
	s.LatestUserException = in.cur.LatestUserException
	s.LatestSystemExceptio = in.cur.LatestSystemExceptio
	s.UserMetrics = in.cur.UserMetrics
	return s, in.running, in.lastErr, in.restarts
}

// launch describes how to start one process.
type launch struct {
	path string
	args []string
	env  []string
}

func (w *Worker) supervise(ctx context.Context, in *instance) {
	defer close(in.done)
	log := w.log.With("fqfn", in.key.fqfn, "kind", string(in.key.kind), "instance", in.key.id)
	backoff := backoffMin
	for ctx.Err() == nil {
		l, err := w.prepare(ctx, in)
		if err != nil {
			in.mu.Lock()
			in.lastErr = err.Error()
			in.mu.Unlock()
			log.Error("prepare instance", "err", err)
		} else {
			t0 := time.Now()
			err = w.runOnce(ctx, in, l, log)
			if ctx.Err() != nil {
				return
			}
			if time.Since(t0) > backoffReset {
				backoff = backoffMin
			}
			in.mu.Lock()
			in.restarts++
			if err != nil {
				in.lastErr = err.Error()
			}
			in.mu.Unlock()
			log.Warn("instance exited; restarting", "err", err, "backoff", backoff)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, backoffMax)
	}
}

// prepare returns how to start the instance: the builtin command or the
// uploaded package written (once per digest) as an executable file.
func (w *Worker) prepare(ctx context.Context, in *instance) (launch, error) {
	spec, _ := json.Marshal(in.rec.Spec)
	env := []string{
		EnvSpec + "=" + string(spec),
		EnvInstanceID + "=" + strconv.Itoa(in.key.id),
		EnvServiceURL + "=" + w.serviceURL,
		EnvWorkerURL + "=" + w.workerURL(),
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"TMPDIR=" + os.TempDir(),
	}
	dir := filepath.Join(w.opts.DataDir, "instances", string(in.key.kind), strings.ReplaceAll(in.key.fqfn, "/", "_"), strconv.Itoa(in.key.id))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return launch{}, err
	}
	env = append(env, EnvStateDir+"="+dir)
	res := in.rec.Spec.Resources
	if res.RAM > 0 {
		env = append(env, "GOMEMLIMIT="+strconv.FormatInt(res.RAM, 10))
	}
	if res.CPU > 0 {
		env = append(env, "GOMAXPROCS="+strconv.Itoa(int(math.Ceil(res.CPU))))
	}
	if name, ok := strings.CutPrefix(in.rec.Package, "builtin://"); ok {
		if len(w.opts.BuiltinCommand) == 0 {
			return launch{}, fmt.Errorf("builtin %q: this worker has no builtin runtime", name)
		}
		env = append(env, EnvBuiltin+"="+name)
		env = append(env, w.opts.BuiltinEnv...)
		return launch{path: w.opts.BuiltinCommand[0], args: w.opts.BuiltinCommand[1:], env: env}, nil
	}
	sum := strings.TrimPrefix(in.rec.Package, "sha256:")
	if sum == "" || sum == in.rec.Package {
		return launch{}, fmt.Errorf("no package")
	}
	path := filepath.Join(w.opts.DataDir, "packages", sum)
	if _, err := os.Stat(path); err != nil {
		data, err := w.st.getPackage(ctx, in.rec.Package)
		if err != nil {
			return launch{}, err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return launch{}, err
		}
		tmp := path + ".tmp" + strconv.Itoa(os.Getpid())
		if err := os.WriteFile(tmp, data, 0o755); err != nil {
			return launch{}, err
		}
		if err := os.Rename(tmp, path); err != nil {
			return launch{}, err
		}
	}
	return launch{path: path, env: env}, nil
}

func (w *Worker) runOnce(ctx context.Context, in *instance, l launch, log *slog.Logger) error {
	cmd := exec.Command(l.path, l.args...)
	cmd.Env = l.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	logPath := filepath.Join(w.opts.DataDir, "logs", strings.ReplaceAll(in.key.fqfn, "/", "_")+"-"+string(in.key.kind)+"-"+strconv.Itoa(in.key.id)+".log")
	_ = os.MkdirAll(filepath.Dir(logPath), 0o755)
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer lf.Close()
	cmd.Stdout, cmd.Stderr = lf, lf
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.ExtraFiles = []*os.File{pw}
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return fmt.Errorf("start %s: %w", l.path, err)
	}
	pw.Close()
	if d := in.rec.Spec.Resources.Disk; d > 0 {
		// The largest file the instance may write.
		lim := unix.Rlimit{Cur: uint64(d), Max: uint64(d)}
		_ = unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_FSIZE, &lim, nil)
	}
	in.mu.Lock()
	in.running, in.pid, in.started, in.lastErr = true, cmd.Process.Pid, time.Now(), ""
	in.mu.Unlock()
	log.Info("instance started", "pid", cmd.Process.Pid)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			var s InstanceStats
			if json.Unmarshal(sc.Bytes(), &s) == nil {
				in.mu.Lock()
				in.cur = s
				in.mu.Unlock()
			}
		}
		pr.Close()
	}()
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-waitErr:
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case werr = <-waitErr:
		case <-time.After(stopGrace):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			werr = <-waitErr
		}
	}
	<-readDone
	in.mu.Lock()
	in.running, in.pid = false, 0
	in.base.add(in.cur)
	in.cur = InstanceStats{}
	in.mu.Unlock()
	if werr == nil && ctx.Err() == nil {
		werr = errors.New("instance exited")
	}
	return werr
}
