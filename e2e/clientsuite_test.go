package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestClientSuite runs pulsar-client-go's own test suite (the version in
// go.mod) against `magnetar standalone --config` with the client's own
// integration-tests/conf/standalone.conf and its htpasswd (APR1-MD5),
// unmodified: the file's certificate, token and htpasswd paths point
// into the client's Docker image, so PULSAR_PREFIX_ variables point them
// at the same files in the module, as Pulsar's images let one do. The
// setup of the client's scripts/pulsar-test-service-start.sh is done
// over the admin API, then every test package runs; a failed test fails
// this one.
//
// The client's tests dial the fixed ports 6650, 6651, 8080 and 8443 on
// localhost, so the standalone and the tests run in a network namespace
// of their own (unshare --net): nothing else on the machine can hold the
// ports, and the suite cannot disturb other tests.
//
// The client's main package (pulsar) holds most of the suite, and most
// of its time is the tests' own timers and timeouts, so it runs as
// clientSuiteShards processes at once (its test files dealt out by
// size); its tests that change public/default's policies, which every
// other test shares, run alone afterwards, then every other package, one
// at a time.
//
// The tests listed in clientSuiteSkip do not run, each for the reason
// given; clientSuiteRetry lists tests that race inside the client and
// get two more tries.
func TestClientSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("the pulsar-client-go suite takes minutes")
	}
	if dir := os.Getenv(clientSuiteEnv); dir != "" {
		runClientSuiteInside(t, dir)
		return
	}
	for _, tool := range []string{"unshare", "ip", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (util-linux, iproute2; scripts/test installs them): %v", tool, err)
		}
	}
	work := t.TempDir()
	src := clientModuleDir(t)
	mod := filepath.Join(work, "pulsar-client-go")
	run(t, "", nil, "cp", "-r", src, mod)
	run(t, "", nil, "chmod", "-R", "u+w", mod)
	goEnv := append(os.Environ(), "GOFLAGS=-mod=mod")
	start := time.Now()
	run(t, mod, goEnv, "go", "mod", "download")
	// Compile every test package here, where the module proxy is
	// reachable; the namespace only runs them.
	pkgs := strings.Fields(run(t, mod, goEnv, "go", "list", "-f", "{{if or .TestGoFiles .XTestGoFiles}}{{.Dir}}{{end}}", "./..."))
	for _, dir := range pkgs {
		run(t, dir, goEnv, "go", "test", "-c", "-vet=off", "-o", filepath.Join(dir, "suite.test"), ".")
	}
	t.Logf("pulsar-client-go %s: %d test packages built in %s", filepath.Base(src), len(pkgs), time.Since(start).Round(time.Second))
	// The re-executed test binary finds the magnetar binary built here
	// through binEnv in its environment.
	magnetarBinary(t)
	cmd := exec.Command("unshare", "--net", "--", os.Args[0], "-test.run=^TestClientSuite$", "-test.v", "-test.timeout=45m")
	cmd.Env = append(os.Environ(), clientSuiteEnv+"="+mod)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start = time.Now()
	err := cmd.Run()
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, "clientsuite_test.go") || strings.HasPrefix(line, "--- ") {
			t.Log(strings.TrimSpace(line))
		}
	}
	t.Logf("suite ran in %s", time.Since(start).Round(time.Second))
	if err != nil {
		t.Fatalf("the client suite failed (%v); its output is in %s", err, keepOutput(out.String()))
	}
}

const (
	clientSuiteEnv    = "MAGNETAR_CLIENT_SUITE_MODULE"
	clientSuiteRunEnv = "MAGNETAR_CLIENT_SUITE_RUN"
)

// clientSuiteSkip: tests that do not run, with why.
var clientSuiteSkip = map[string]string{
	// They start Pulsar itself in Docker (testcontainers) and kill it.
	"TestConsumerKeepReconnectingAndThenCallClose": "starts apachepulsar/pulsar in Docker",
	"TestProducerKeepReconnectingAndThenCallClose": "starts apachepulsar/pulsar in Docker",
	"TestReconnectConsumer":                        "starts apachepulsar/pulsar in Docker",
	"TestReconnectedBrokerSendPermits":             "starts apachepulsar/pulsar in Docker",
	"TestSendAsyncCouldTimeoutWhileReconnecting":   "starts apachepulsar/pulsar in Docker",
}

// clientSuiteRetry: tests tried up to three times, for races inside the
// client that Pulsar meets as well. TestCachedTracker and
// TestNegativeAckPrecisionBitCnt bound a timer of the client's own
// (10 ms; 100 ms scans of a 300 ms delay) and miss it on a busy
// machine. TestReaderWithSeekByID (latest, inclusive): the reader seeks
// while it is created, which closes its consumer (CLOSE_CONSUMER before
// the SEEK's answer, as Pulsar does); the client's event loop then holds
// both the reconnect and the test's own Seek and picks one at random,
// and a Seek sent first reaches the closed consumer id (ConsumerNotFound,
// Pulsar's answer too; about one run in five).
var clientSuiteRetry = []string{"TestCachedTracker", "TestNegativeAckPrecisionBitCnt", "TestReaderWithSeekByID"}

// runClientSuiteInside runs in the network namespace: loopback up, the
// standalone, the setup, then every built test package.
func runClientSuiteInside(t *testing.T, mod string) {
	run(t, "", nil, "ip", "link", "set", "lo", "up")
	it := filepath.Join(mod, "integration-tests")
	data := t.TempDir()
	instancesMayReach(t, data, 0o711)
	env := []string{
		"PULSAR_PREFIX_tlsCertificateFilePath=" + filepath.Join(it, "certs", "broker-cert.pem"),
		"PULSAR_PREFIX_tlsKeyFilePath=" + filepath.Join(it, "certs", "broker-key.pem"),
		"PULSAR_PREFIX_tlsTrustCertsFilePath=" + filepath.Join(it, "certs", "cacert.pem"),
		"PULSAR_PREFIX_brokerClientTrustCertsFilePath=" + filepath.Join(it, "certs", "cacert.pem"),
		fmt.Sprintf(`PULSAR_PREFIX_brokerClientAuthenticationParameters={"tlsCertFile":%q,"tlsKeyFile":%q}`,
			filepath.Join(it, "certs", "client-cert.pem"), filepath.Join(it, "certs", "client-key.pem")),
		"PULSAR_PREFIX_tokenSecretKey=file://" + filepath.Join(it, "tokens", "secret.key"),
		// The client's Dockerfile gives it as -Dpulsar.auth.basic.conf.
		"PULSAR_PREFIX_basicAuthConf=" + filepath.Join(it, "conf", ".htpasswd"),
		// TestOffloadPolicies names this endpoint in a topic policy;
		// Magnetar takes only endpoints the operator allows (Pulsar any).
		"PULSAR_PREFIX_offloadAllowedServiceEndpoints=https://s3.amazonaws.com",
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	p, _ := startMagnetar(t, "standalone", "magnetar standalone ready", "standalone",
		"--config", filepath.Join(it, "conf", "standalone.conf"), "--data-dir", data, "--no-functions-worker")
	if !strings.Contains(p.log(), "admin (apr1-md5)") {
		t.Errorf("no start-up warning about the APR1 htpasswd:\n%s", p.log())
	}
	clientSuiteSetup(t, filepath.Join(it, "tokens", "admin-token"))

	var dirs []string
	filepath.WalkDir(mod, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "suite.test" {
			dirs = append(dirs, filepath.Dir(path))
		}
		return nil
	})
	sort.Strings(dirs)
	// MAGNETAR_CLIENT_SUITE_RUN (a -test.run pattern) runs only the
	// matching tests, skipped ones included, one package at a time: the
	// way to work on a few of them.
	only := os.Getenv(clientSuiteRunEnv)
	var onlyRE *regexp.Regexp
	if only != "" {
		onlyRE = regexp.MustCompile(only)
	}
	skip := make([]string, 0, len(clientSuiteSkip))
	for name := range clientSuiteSkip {
		if onlyRE == nil || !onlyRE.MatchString(name) {
			skip = append(skip, regexp.QuoteMeta(name))
		}
	}
	sort.Strings(skip)
	skipRE := "^(" + strings.Join(skip, "|") + ")$"
	var shards, alone []suiteJob
	for _, dir := range dirs {
		rel, _ := filepath.Rel(mod, dir)
		if only != "" {
			alone = append(alone, suiteJob{name: rel, dir: dir, run: only})
			continue
		}
		if rel != "pulsar" {
			alone = append(alone, suiteJob{name: rel, dir: dir})
			continue
		}
		groups, shared := shardSuitePackage(t, dir, clientSuiteShards)
		for i, g := range groups {
			shards = append(shards, suiteJob{name: fmt.Sprintf("pulsar[%d/%d]", i+1, len(groups)), dir: dir, run: anyOf(g)})
		}
		alone = append([]suiteJob{{name: "pulsar[public/default policies]", dir: dir, run: anyOf(shared)}}, alone...)
	}
	results := make([]suiteResult, len(shards))
	var wg sync.WaitGroup
	for i, j := range shards {
		wg.Go(func() { results[i] = runSuiteJob(j, skipRE) })
	}
	wg.Wait()
	for _, j := range alone {
		results = append(results, runSuiteJob(j, skipRE))
	}
	var failed, retried []string
	for _, r := range results {
		retried = append(retried, r.retried...)
		t.Logf("%s: %d passed, %d failed, in %s; slowest: %s", r.job.name, r.passed, len(r.failed), r.took.Round(time.Second), strings.Join(r.slowest, ", "))
		for _, note := range r.notes {
			t.Logf("%s: %s", r.job.name, note)
		}
		for _, f := range r.failed {
			failed = append(failed, r.job.name+": "+f)
		}
	}
	for name, why := range clientSuiteSkip {
		t.Logf("not run: %s: %s", name, why)
	}
	// Every retry is reported by name: a retried test hides a failure
	// for this run, so the list must stay short and each must be a
	// race of the client's (clientSuiteRetry).
	if len(retried) > 0 {
		t.Logf("needed a retry: %s", strings.Join(retried, ", "))
	} else {
		t.Logf("needed a retry: none")
	}
	if len(failed) > 0 {
		t.Fatalf("pulsar-client-go tests failed against magnetar:\n  %s", strings.Join(failed, "\n  "))
	}
}

// clientSuiteShards is how many processes run the client's pulsar
// package at once.
const clientSuiteShards = 3

// suiteJob is one run of a built test package: the tests matching run
// ("": all).
type suiteJob struct {
	name, dir, run string
}

type suiteResult struct {
	job     suiteJob
	passed  int
	failed  []string // top-level tests that failed (also on every retry)
	slowest []string // the five slowest passing tests, "name 12s"
	notes   []string // retries, kept output
	retried []string // tests that failed first and passed on a later try, "name (try N)"
	took    time.Duration
}

// runSuiteJob runs j (without the skipped tests), then the failed tests
// of clientSuiteRetry again, up to twice.
func runSuiteJob(j suiteJob, skipRE string) suiteResult {
	r := suiteResult{job: j}
	start := time.Now()
	args := []string{"-test.skip=" + skipRE}
	if j.run != "" {
		args = append(args, "-test.run="+j.run)
	}
	out, ok := runSuitePackage(j.dir, args...)
	r.took = time.Since(start)
	r.passed = strings.Count(out, "\n--- PASS: ")
	r.slowest = slowestTests(out, 5)
	fails := failedTests(out)
	if !ok && len(fails) == 0 {
		fails = []string{"(the package failed: " + lastLines(out, 20) + ")"}
	}
	if len(fails) > 0 {
		r.notes = append(r.notes, fmt.Sprintf("failed %v; output in %s", fails, keepOutput(out)))
	}
	var retry []string
	for _, f := range fails {
		if slices.Contains(clientSuiteRetry, f) {
			retry = append(retry, f)
		} else {
			r.failed = append(r.failed, f)
		}
	}
	for try := 2; len(retry) > 0 && try <= 3; try++ {
		out, _ := runSuitePackage(j.dir, "-test.run=^("+strings.Join(retry, "|")+")$")
		again := failedTests(out)
		r.notes = append(r.notes, fmt.Sprintf("try %d of %v: still failing %v", try, retry, again))
		retry = slices.DeleteFunc(retry, func(f string) bool {
			if slices.Contains(again, f) {
				return false
			}
			r.retried = append(r.retried, fmt.Sprintf("%s (passed on try %d)", f, try))
			return true
		})
	}
	for _, f := range retry {
		r.failed = append(r.failed, f+" (in three tries)")
	}
	return r
}

var testFunc = regexp.MustCompile(`(?m)^func (Test\w+)\(\w+ \*testing\.T\) \{`)

// shardSuitePackage deals the test functions of the package in dir out
// into n groups, a file's tests to one group, the largest file first to
// the group with the fewest bytes so far, and returns apart (shared) the
// tests whose body changes the policies of public/default (the namespace
// the client's tests share: a backlog quota set there holds every other
// test's producers).
func shardSuitePackage(t *testing.T, dir string, n int) (groups [][]string, shared []string) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("test files of %s: %v", dir, err)
	}
	type file struct {
		size  int
		tests []string
	}
	var fs []file
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		f := file{size: len(b)}
		locs := testFunc.FindAllStringSubmatchIndex(src, -1)
		for i, l := range locs {
			name, end := src[l[2]:l[3]], len(src)
			if i+1 < len(locs) {
				end = locs[i+1][0]
			}
			if strings.Contains(src[l[0]:end], "namespaces/public/default") {
				shared = append(shared, name)
			} else {
				f.tests = append(f.tests, name)
			}
		}
		if len(f.tests) > 0 {
			fs = append(fs, f)
		}
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].size > fs[j].size })
	groups = make([][]string, n)
	sizes := make([]int, n)
	for _, f := range fs {
		g := 0
		for i := range sizes {
			if sizes[i] < sizes[g] {
				g = i
			}
		}
		groups[g] = append(groups[g], f.tests...)
		sizes[g] += f.size
	}
	if len(shared) == 0 {
		// The scan finds the two of v0.19.0 (TestSendTimeout,
		// TestSendContextExpired); none means it no longer works.
		t.Fatalf("no test of %s sets public/default's policies: the shard scan is out of date", dir)
	}
	return groups, shared
}

func anyOf(names []string) string {
	return "^(" + strings.Join(names, "|") + ")$"
}

var passLine = regexp.MustCompile(`^--- PASS: (\S+) \(([0-9.]+)s\)`)

// slowestTests names the n slowest passing top-level tests of out.
func slowestTests(out string, n int) []string {
	type timed struct {
		name string
		secs float64
	}
	var all []timed
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if m := passLine.FindStringSubmatch(sc.Text()); m != nil {
			secs, _ := strconv.ParseFloat(m[2], 64)
			all = append(all, timed{m[1], secs})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].secs > all[j].secs })
	var names []string
	for _, x := range all[:min(n, len(all))] {
		names = append(names, fmt.Sprintf("%s %.0fs", x.name, x.secs))
	}
	return names
}

// clientSuiteSetup does what the client's
// scripts/pulsar-test-service-start.sh does with pulsar-admin.
func clientSuiteSetup(t *testing.T, tokenFile string) {
	tok, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, body string) {
		req, _ := http.NewRequest(method, "http://localhost:8080"+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("setup %s %s: %d %s", method, path, resp.StatusCode, b)
		}
	}
	// tenants update public -r anonymous
	do("POST", "/admin/v2/tenants/public", `{"adminRoles":["anonymous"],"allowedClusters":["standalone"]}`)
	// namespaces grant-permission public/default --actions produce,consume --role anonymous
	do("POST", "/admin/v2/namespaces/public/default/permissions/anonymous", `["produce","consume"]`)
	// tenants create private
	do("PUT", "/admin/v2/tenants/private", `{"adminRoles":[],"allowedClusters":["standalone"]}`)
	// namespaces create private/auth
	do("PUT", "/admin/v2/namespaces/private/auth", "")
	// namespaces grant-permission private/auth --actions produce,consume --role token-principal
	do("POST", "/admin/v2/namespaces/private/auth/permissions/token-principal", `["produce","consume"]`)
}

// runSuitePackage runs one built test package in its directory (the
// tests read ../integration-tests) and returns its output.
func runSuitePackage(dir string, args ...string) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "suite.test"), append([]string{"-test.v", "-test.count=1", "-test.timeout=25m"}, args...)...)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err == nil
}

var failLine = regexp.MustCompile(`^--- FAIL: (\S+)`)

// failedTests lists the top-level tests that failed.
func failedTests(out string) []string {
	var fails []string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if m := failLine.FindStringSubmatch(sc.Text()); m != nil && !slices.Contains(fails, m[1]) {
			fails = append(fails, m[1])
		}
	}
	return fails
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// keepOutput saves out where it outlives the test's temporary directory.
func keepOutput(out string) string {
	f, err := os.CreateTemp("", "magnetar-client-suite-*.log")
	if err != nil {
		return "(not saved: " + err.Error() + ")"
	}
	f.WriteString(out)
	f.Close()
	return f.Name()
}

// clientModuleDir is the module cache directory of the pulsar-client-go
// version go.mod requires.
func clientModuleDir(t *testing.T) string {
	out := run(t, "", nil, "go", "list", "-m", "-json", "github.com/apache/pulsar-client-go")
	var m struct{ Dir string }
	if err := json.Unmarshal([]byte(out), &m); err != nil || m.Dir == "" {
		t.Fatalf("module dir: %v %q", err, out)
	}
	return m.Dir
}

// run runs a command and returns its output, failing the test on error.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = env
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}
