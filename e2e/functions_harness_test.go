package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

var (
	fnBuildMu   sync.Mutex
	fnBuildDir  string
	fnBuildBins = map[string]string{}
)

// buildFnProg builds testdata/fnprog with main.version=version (once per
// version per test binary) and returns the executable's path.
func buildFnProg(t testing.TB, version string) string {
	t.Helper()
	fnBuildMu.Lock()
	defer fnBuildMu.Unlock()
	if p, ok := fnBuildBins[version]; ok {
		return p
	}
	if fnBuildDir == "" {
		d, err := os.MkdirTemp("", "magnetar-fnprog-")
		if err != nil {
			t.Fatal(err)
		}
		fnBuildDir = d
	}
	out := filepath.Join(fnBuildDir, "fnprog-"+version)
	cmd := exec.Command("go", "build", "-ldflags", "-s -w -X main.version="+version, "-o", out, "./testdata/fnprog")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build fnprog: %v\n%s", err, b)
	}
	fnBuildBins[version] = out
	return out
}

func cleanupFnBuilds() {
	if fnBuildDir != "" {
		os.RemoveAll(fnBuildDir)
	}
}

// fnUpload sends a create (POST) or update (PUT) of kind/public/default/name
// with cfg as the config part and, when bin is set, the file as the data
// part; url, when set, goes in the url part.
func fnUpload(t testing.TB, p *proc, method, kind, name string, cfg any, bin, url string) (int, string) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part := map[string]string{"functions": "functionConfig", "sources": "sourceConfig", "sinks": "sinkConfig"}[kind]
	cj, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := mw.WriteField(part, string(cj)); err != nil {
		t.Fatal(err)
	}
	if bin != "" {
		fw, err := mw.CreateFormFile("data", filepath.Base(bin))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(b)
	}
	if url != "" {
		mw.WriteField("url", url)
	}
	mw.Close()
	req, _ := http.NewRequest(method, p.http+"/admin/v3/"+kind+"/public/default/"+name, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func fnHTTP(t testing.TB, method, url, ct string, body []byte) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, bytes.NewReader(body))
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// fnStatus is the subset of Pulsar's FunctionStatus the tests read.
type fnStatus struct {
	NumInstances int `json:"numInstances"`
	NumRunning   int `json:"numRunning"`
	Instances    []struct {
		InstanceID int `json:"instanceId"`
		Status     struct {
			Running     bool   `json:"running"`
			Error       string `json:"error"`
			NumRestarts int64  `json:"numRestarts"`
			NumReceived int64  `json:"numReceived"`
			NumOK       int64  `json:"numSuccessfullyProcessed"`
			NumUserExc  int64  `json:"numUserExceptions"`
			WorkerID    string `json:"workerId"`
		} `json:"status"`
	} `json:"instances"`
}

func getStatus(t testing.TB, p *proc, kind, name string) fnStatus {
	t.Helper()
	code, b := p.get(t, "/admin/v3/"+kind+"/public/default/"+name+"/status")
	if code != http.StatusOK {
		t.Fatalf("status of %s: %d %s", name, code, b)
	}
	var s fnStatus
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("status %s: %v", b, err)
	}
	return s
}

// waitRunning waits until n instances of name report running.
func waitRunning(t testing.TB, p *proc, kind, name string, n int) fnStatus {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := getStatus(t, p, kind, name)
		if s.NumRunning == n {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d instances running after 60s: %+v\nlog:\n%s", name, s.NumRunning, n, s, p.log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// instancePids returns the pids of processes running executable exe.
func instancePids(t testing.TB, exe string) []int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		link, err := os.Readlink("/proc/" + e.Name() + "/exe")
		if err == nil && strings.TrimSuffix(link, " (deleted)") == exe {
			pids = append(pids, pid)
		}
	}
	return pids
}

// fnPackagePath is where a standalone on dataDir unpacks package bin.
func fnPackagePath(t testing.TB, dataDir, bin string) string {
	t.Helper()
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return filepath.Join(dataDir, "functions", "packages", hex.EncodeToString(sum[:]))
}

func readerEarliest(topic string) pulsar.ReaderOptions {
	return pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()}
}

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// instancesMayReach opens dir and the test's temporary directory above it
// for the unprivileged account instances of a root worker run as (the
// tests run as root): search on the parent, mode on dir itself.
func instancesMayReach(t testing.TB, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}
