package functions

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

	"github.com/magnetar-mq/magnetar/functions/iopolicy"
	"github.com/magnetar-mq/magnetar/internal/atomicfile"
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
	// ConfFD is the pipe on which an instance reads its configuration
	// with its credentials (instanceauth.go), once, then EOF; EnvConfFD
	// names it for programs built with functions/sdk.
	ConfFD    = 4
	EnvConfFD = "MAGNETAR_CONF_FD"
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
	if in.running && time.Since(in.started) > backoffReset {
		in.lastErr = "" // up long enough: the earlier failure is history
	}
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
	dir  string // working directory (the instance's own)
	// pf is set for executables built with Pulsar's Go SDK: the control
	// and metrics ports the worker polls (pulsargo.go).
	pf *pfPorts
	// conf is what the instance reads on ConfFD (instanceauth.go).
	conf []byte
}

func (w *Worker) supervise(ctx context.Context, in *instance) {
	defer close(in.done)
	log := w.log.With("fqfn", in.key.fqfn, "kind", string(in.key.kind), "instance", in.key.id)
	backoff := backoffMin
	for ctx.Err() == nil {
		l, err := w.prepare(ctx, in)
		if err != nil {
			in.mu.Lock()
			in.restarts++
			in.mu.Unlock()
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
	dir := filepath.Join(w.opts.DataDir, "instances", string(in.key.kind), strings.ReplaceAll(in.key.fqfn, "/", "_"), strconv.Itoa(in.key.id))
	// Parents are searchable (not listable) by others; the instance's own
	// directory is its alone.
	if err := os.MkdirAll(filepath.Dir(dir), 0o711); err != nil {
		return launch{}, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return launch{}, err
	}
	if w.runAs != nil {
		if err := os.Chown(dir, int(w.runAs.uid), int(w.runAs.gid)); err != nil {
			return launch{}, fmt.Errorf("instance directory for %s: %w", w.runAs.name, err)
		}
	}
	// The environment is built from nothing: no variable of the worker's
	// (credentials, token files, TLS keys, cloud keys) reaches the
	// instance beyond what it needs to run.
	env := []string{
		EnvSpec + "=" + string(spec),
		EnvInstanceID + "=" + strconv.Itoa(in.key.id),
		EnvServiceURL + "=" + w.serviceURL,
		EnvWorkerURL + "=" + w.workerURL(),
		EnvStateDir + "=" + dir,
		EnvConfFD + "=" + strconv.Itoa(ConfFD),
		"PATH=" + instancePath,
		"HOME=" + dir,
		"TMPDIR=" + os.TempDir(),
	}
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
		// Checked again at every start: the operator may have narrowed
		// the allow-list since the connector was deployed.
		if err := w.checkIO(in.key.kind, in.rec.Spec); err != nil {
			return launch{}, err
		}
		env = append(env, EnvBuiltin+"="+name, iopolicy.EnvPolicy+"="+w.io.Encode())
		exe, err := w.runAs.reachableCopy(w.opts.BuiltinCommand[0], filepath.Join(w.opts.DataDir, "bin"))
		if err != nil {
			return launch{}, err
		}
		conf, err := w.builtinConf(in.rec)
		if err != nil {
			return launch{}, err
		}
		return launch{path: exe, args: w.opts.BuiltinCommand[1:], env: env, dir: dir, conf: conf}, nil
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
		if err := atomicfile.WriteBytes(path, data, atomicfile.Options{Perm: 0o755, SyncDir: true}); err != nil {
			return launch{}, err
		}
	}
	if w.runAs != nil && !w.runAs.canExec(path) {
		return launch{}, fmt.Errorf("instances run as %q cannot reach %s: make the directories above the worker's data directory searchable for that account", w.runAs.name, path)
	}
	// Every uploaded executable also gets Pulsar's Go runtime contract
	// (pulsargo.go): programs built with Pulsar's Go SDK read it, programs
	// built with functions/sdk ignore the arguments.
	return w.pulsarGoLaunch(in, launch{path: path, env: env, dir: dir})
}

// instancePath is the PATH instances get.
const instancePath = "/usr/local/bin:/usr/bin:/bin"

func (w *Worker) runOnce(ctx context.Context, in *instance, l launch, log *slog.Logger) error {
	cmd := exec.Command(l.path, l.args...)
	cmd.Env = l.env
	cmd.Dir = l.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: w.runAs.credential()}
	logPath := filepath.Join(w.opts.DataDir, "logs", strings.ReplaceAll(in.key.fqfn, "/", "_")+"-"+string(in.key.kind)+"-"+strconv.Itoa(in.key.id)+".log")
	_ = os.MkdirAll(filepath.Dir(logPath), 0o755)
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer lf.Close()
	logStart, _ := lf.Seek(0, io.SeekEnd)
	cmd.Stdout, cmd.Stderr = lf, lf
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	confR, confW, err := w.confPipe()
	if err != nil {
		pr.Close()
		pw.Close()
		return err
	}
	cmd.ExtraFiles = []*os.File{pw, confR}
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		confR.Close()
		confW.Close()
		return fmt.Errorf("start %s: %w", l.path, err)
	}
	pw.Close()
	confR.Close()
	// The configuration fits the pipe's buffer; should the instance
	// never read it, its exit (or the Close below) ends the write.
	go func() {
		_, _ = confW.Write(l.conf)
		confW.Close()
	}()
	defer confW.Close()
	if d := in.rec.Spec.Resources.Disk; d > 0 {
		// The largest file the instance may write.
		lim := unix.Rlimit{Cur: uint64(d), Max: uint64(d)}
		_ = unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_FSIZE, &lim, nil)
	}
	// lastErr keeps the previous failure until this process has proved
	// itself (see instance.stats): a crash loop never shows as running
	// with no error.
	in.mu.Lock()
	in.running, in.pid, in.started = true, cmd.Process.Pid, time.Now()
	in.mu.Unlock()
	log.Info("instance started", "pid", cmd.Process.Pid)
	pollCtx, stopPoll := context.WithCancel(ctx)
	pollDone := make(chan struct{})
	go func() {
		defer close(pollDone)
		if l.pf != nil {
			w.pollPulsarInstance(pollCtx, in, *l.pf)
		}
	}()
	defer func() { stopPoll(); <-pollDone }()
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
	if werr != nil && ctx.Err() == nil {
		if tail := logTail(logPath, logStart); tail != "" {
			werr = fmt.Errorf("%w: %s", werr, tail)
		}
	}
	return werr
}

// logTail returns what an instance said before it died, from its log
// after offset from: a Go panic or fatal error line, else its last lines
// (at most 512 bytes).
func logTail(path string, from int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() <= from {
		return ""
	}
	start := max(from, st.Size()-4096)
	b := make([]byte, st.Size()-start)
	if _, err := f.ReadAt(b, start); err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if start > from && len(lines) > 1 {
		lines = lines[1:] // the first may be cut
	}
	// A Go program's panic or fatal error says more than the stack below.
	for _, l := range lines {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			return strings.TrimSpace(l)
		}
	}
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	out := strings.Join(lines, " | ")
	if len(out) > 512 {
		out = out[len(out)-512:]
	}
	return out
}
