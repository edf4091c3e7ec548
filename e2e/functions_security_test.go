package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/internal/testcert"
)

// fnUploadAs is fnUpload (a create, multipart) with a bearer token ("":
// none) against the worker at base.
func fnUploadAs(t testing.TB, base, token, kind, ns, name string, cfg any, bin string) (int, string) {
	t.Helper()
	return fnUploadAsWith(t, &http.Client{Transport: &http.Transport{ExpectContinueTimeout: 10 * time.Second}}, base, token, kind, ns, name, cfg, bin)
}

// fnUploadAsWith is fnUploadAs over cl.
func fnUploadAsWith(t testing.TB, cl *http.Client, base, token, kind, ns, name string, cfg any, bin string) (int, string) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	cj, _ := json.Marshal(cfg)
	mw.WriteField(map[string]string{"functions": "functionConfig", "sources": "sourceConfig", "sinks": "sinkConfig"}[kind], string(cj))
	fw, _ := mw.CreateFormFile("data", filepath.Base(bin))
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(b)
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, base+"/admin/v3/"+kind+"/"+ns+"/"+name, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	// As curl does for large bodies: a refused upload is never sent.
	req.Header.Set("Expect", "100-continue")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(rb)
}

// TestFunctionsWorkerSecurity: a `magnetar functions-worker` with token
// authentication and authorization refuses an upload without credentials
// (401) or from a role that is neither a superuser, an admin of the
// tenant nor granted functions on the namespace (403), and then nothing
// is stored and no instance runs; the tenant's admin's upload runs and
// processes input. Listing needs credentials too. (Issue 31 item 1: the
// worker used to run anyone's program.)
func TestFunctionsWorkerSecurity(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	bin := buildFnProg(t, "1")
	dir := t.TempDir()
	key, tok := tokenKey(t, dir)
	root, bob, eve := tok("root"), tok("bob"), tok("eve")
	c := newTestCluster(t)
	c.startBookie(t.TempDir())
	b := c.startBroker("--ensemble", "1", "--write-quorum", "1", "--ack-quorum", "1")
	for _, call := range []struct{ method, path, body string }{
		{"PUT", "/admin/v2/tenants/acme", `{"adminRoles":["bob"],"allowedClusters":["magnetar"]}`},
		{"PUT", "/admin/v2/namespaces/acme/ns", ""},
	} {
		if code, body := authHTTP(t, call.method, b.http+call.path, "", call.body, nil); code != 204 {
			t.Fatalf("%s %s: %d %s", call.method, call.path, code, body)
		}
	}
	data := t.TempDir()
	instancesMayReach(t, data, 0o711)
	w, _ := startMagnetar(t, "worker", "magnetar functions-worker ready", "functions-worker", "--metadata-url", c.url,
		"--http", "127.0.0.1:0", "--advertised-host", "127.0.0.1", "--worker-id", "w1", "--broker-service-url", b.service,
		"--data-dir", data, "--cluster-name", "magnetar",
		"--authenticationEnabled", "--authenticationProviders", "token", "--tokenSecretKey", "file://"+key,
		"--authorizationEnabled", "--superUserRoles", "root")
	cfg := func(ns, name string) map[string]any {
		return map[string]any{"runtime": "GO", "inputs": []string{"persistent://" + ns + "/" + name + "-in"},
			"output": "persistent://" + ns + "/" + name + "-out", "subscriptionPosition": "Earliest"}
	}
	for _, c := range []struct {
		who, token, ns string
		want           int
	}{
		{"nobody", "", "acme/ns", 401},
		{"eve", eve, "acme/ns", 403},
		{"bob on another tenant", bob, "public/default", 403},
	} {
		if code, body := fnUploadAs(t, w.http, c.token, "functions", c.ns, "evil", cfg(c.ns, "evil"), bin); code != c.want {
			t.Fatalf("upload by %s: %d %s, want %d", c.who, code, body, c.want)
		}
	}
	if code, body := authHTTP(t, "GET", w.http+"/admin/v3/functions/acme/ns", "", "", nil); code != 401 {
		t.Fatalf("list without credentials: %d %s", code, body)
	}
	for _, ns := range []string{"acme/ns", "public/default"} {
		code, body := authHTTP(t, "GET", w.http+"/admin/v3/functions/"+ns, root, "", nil)
		if code != 200 || strings.TrimSpace(string(body)) != "[]" {
			t.Fatalf("functions of %s after refused uploads: %d %s", ns, code, body)
		}
	}
	if pids := instancePids(t, bin); len(pids) != 0 {
		t.Fatalf("refused uploads run: pids %v", pids)
	}
	// The tenant's admin deploys; the instance runs and processes input.
	if code, body := fnUploadAs(t, w.http, bob, "functions", "acme/ns", "ok", cfg("acme/ns", "ok"), bin); code != 204 {
		t.Fatalf("upload by the tenant admin: %d %s", code, body)
	}
	cl := b.client(t)
	out := subscribeOut(t, cl, "persistent://acme/ns/ok-out")
	produceAll(t, cl, "persistent://acme/ns/ok-in", []string{"hello"})
	receiveUntil(t, out, 60*time.Second, func(s map[string]int) bool { return s["hello!"] == 1 })
	if code, body := authHTTP(t, "GET", w.http+"/admin/v3/functions/acme/ns/ok/status", eve, "", nil); code != 403 {
		t.Fatalf("status by eve: %d %s", code, body)
	}
	if code, body := authHTTP(t, "GET", w.http+"/admin/v3/functions/acme/ns/ok/status", bob, "", nil); code != 200 {
		t.Fatalf("status by bob: %d %s", code, body)
	}
}

// TestFunctionsWorkerRefusesOpenRemote: with authentication off the
// worker listens on loopback only; a non-loopback address is refused at
// start unless --allow-unauthenticated-remote says so.
func TestFunctionsWorkerRefusesOpenRemote(t *testing.T) {
	c := newTestCluster(t)
	cmd := magnetarCommand(t, "functions-worker", "--metadata-url", c.url,
		"--http", "0.0.0.0:0", "--data-dir", t.TempDir(), "--worker-id", "w")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "refusing to listen on 0.0.0.0:0 with authentication off") {
		t.Fatalf("open worker on 0.0.0.0: %v\n%s", err, out)
	}
	p, _ := startMagnetar(t, "worker", "magnetar functions-worker ready", "functions-worker", "--metadata-url", c.url,
		"--http", "0.0.0.0:0", "--data-dir", t.TempDir(), "--worker-id", "w2", "--allow-unauthenticated-remote")
	p.stop()
}

// TestFunctionsWorkerTLS: the worker takes the broker's TLS settings.
// With --https and no --http (Pulsar's workerPortTls without
// workerPort) it serves HTTPS only, with the configured certificate and
// the broker's minimum TLS version; a plain HTTP request to that port is
// refused with 400 and serves nothing. Authentication and authorization
// hold over TLS exactly as over plain HTTP (401, 403, the tenant admin
// served, a refused upload stores nothing); with both listeners set,
// both serve under the same rules. --https without a certificate does
// not start.
func TestFunctionsWorkerTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	dir := t.TempDir()
	key, tok := tokenKey(t, dir)
	root, bob, eve := tok("root"), tok("bob"), tok("eve")
	ca, err := testcert.NewCA("worker test CA")
	if err != nil {
		t.Fatal(err)
	}
	caFile, _ := ca.WriteCA(dir, "ca.pem")
	srv, _ := ca.Server("worker", []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	srv.Write(dir, "worker")
	pool := x509.NewCertPool()
	if pem, err := os.ReadFile(caFile); err != nil || !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("CA file: %v", err)
	}
	trusting := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	call := func(cl *http.Client, method, url, token string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	c := newTestCluster(t)
	c.startBookie(t.TempDir())
	b := c.startBroker("--ensemble", "1", "--write-quorum", "1", "--ack-quorum", "1")
	for _, call := range []struct{ method, path, body string }{
		{"PUT", "/admin/v2/tenants/acme", `{"adminRoles":["bob"],"allowedClusters":["magnetar"]}`},
		{"PUT", "/admin/v2/namespaces/acme/ns", ""},
	} {
		if code, body := authHTTP(t, call.method, b.http+call.path, "", call.body, nil); code != 204 {
			t.Fatalf("%s %s: %d %s", call.method, call.path, code, body)
		}
	}
	security := []string{"--authenticationEnabled", "--authenticationProviders", "token", "--tokenSecretKey", "file://" + key,
		"--authorizationEnabled", "--superUserRoles", "root", "--tlsCertificateFilePath", srv.CertFile, "--tlsKeyFilePath", srv.KeyFile}
	worker := func(id string, listen ...string) map[string]string {
		args := append([]string{"functions-worker", "--metadata-url", c.url, "--advertised-host", "127.0.0.1", "--worker-id", id,
			"--broker-service-url", b.service, "--data-dir", t.TempDir(), "--cluster-name", "magnetar"}, listen...)
		_, f := startMagnetar(t, "worker-"+id, "magnetar functions-worker ready", append(args, security...)...)
		return f
	}
	// rules checks the worker's answers at base, over cl.
	rules := func(cl *http.Client, base string) {
		t.Helper()
		list := base + "/admin/v3/functions/acme/ns"
		for _, c := range []struct {
			who, token string
			want       int
		}{{"nobody", "", 401}, {"eve", eve, 403}, {"bob, the tenant's admin", bob, 200}, {"root", root, 200}} {
			if code, body := call(cl, "GET", list, c.token); code != c.want {
				t.Fatalf("%s: list by %s: %d %s, want %d", base, c.who, code, body, c.want)
			}
		}
		prog := filepath.Join(t.TempDir(), "prog")
		os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755)
		for _, c := range []struct {
			token string
			want  int
		}{{"", 401}, {eve, 403}} {
			if code, body := fnUploadAsWith(t, cl, base, c.token, "functions", "acme/ns", "evil",
				map[string]any{"runtime": "GO", "inputs": []string{"persistent://acme/ns/in"}}, prog); code != c.want {
				t.Fatalf("%s: upload with %q: %d %s, want %d", base, c.token, code, body, c.want)
			}
		}
		if code, body := call(cl, "GET", list, root); code != 200 || strings.TrimSpace(body) != "[]" {
			t.Fatalf("%s: functions after refused uploads: %d %s", base, code, body)
		}
	}

	// HTTPS only.
	f := worker("tls", "--http", "", "--https", "127.0.0.1:0")
	base := f["http"]
	if !strings.HasPrefix(base, "https://") || f["https"] != base {
		t.Fatalf("worker with --https only advertises %v, want one https:// base", f)
	}
	rules(trusting, base)
	hostport := strings.TrimPrefix(base, "https://")
	if code, body := call(&http.Client{Timeout: 30 * time.Second}, "GET", "http://"+hostport+"/admin/v3/functions/acme/ns", root); code != 400 || strings.Contains(body, "[]") {
		t.Fatalf("plain HTTP to the TLS port: %d %s, want 400 serving nothing", code, body)
	}
	if conn, err := tls.Dial("tcp", hostport, &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS11}); err == nil {
		conn.Close()
		t.Fatal("TLS 1.1 handshake accepted (the broker's minimum is 1.2)")
	}

	// Both listeners: each enforces the same rules.
	f = worker("both", "--http", "127.0.0.1:0", "--https", "127.0.0.1:0")
	if !strings.HasPrefix(f["http"], "http://") || !strings.HasPrefix(f["https"], "https://") {
		t.Fatalf("worker with both listeners advertises %v", f)
	}
	rules(&http.Client{Timeout: 30 * time.Second}, f["http"])
	rules(trusting, f["https"])

	// --https without a certificate does not start.
	cmd := magnetarCommand(t, "functions-worker", "--metadata-url", c.url,
		"--http", "", "--https", "127.0.0.1:0", "--data-dir", t.TempDir(), "--worker-id", "w",
		"--authenticationEnabled", "--authenticationProviders", "token", "--tokenSecretKey", "file://"+key)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "--https needs tlsCertificateFilePath") {
		t.Fatalf("--https without a certificate: %v\n%s", err, out)
	}
}
