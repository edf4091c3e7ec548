package e2e

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
)

// TestPackagesSurviveRestart: a package of several ledger entries
// uploaded to a standalone downloads byte for byte after the standalone
// restarts on its data directory; an upload with the file part before
// the metadata (as Pulsar's Java client sends it) is stored with that
// metadata; one without metadata or without a file is refused with 400
// and leaves nothing.
func TestPackagesSurviveRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a standalone twice")
	}
	dir := t.TempDir()
	p := startStandalone(t, dir)
	pk := v3Client(t, p.http).Packages()
	big := make([]byte, 5<<20+77)
	for i := range big {
		big[i] = byte(i ^ i>>9)
	}
	f := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(f, big, 0o644); err != nil {
		t.Fatal(err)
	}
	const url = "sink://public/default/big@1.0"
	if err := pk.Upload(url, f, "big", "me", map[string]string{"a": "b"}); err != nil {
		t.Fatal(err)
	}
	// File first, metadata second.
	base := p.http + "/admin/v3/packages/source/public/default/late-meta/v1"
	if code, body := postParts(t, base, []part{{"file", "", []byte("contents")}, {"metadata", "application/json", []byte(`{"description":"late"}`)}}); code != http.StatusNoContent {
		t.Fatalf("file-first upload: %d %s", code, body)
	}
	noMeta := p.http + "/admin/v3/packages/source/public/default/no-meta/v1"
	if code, body := postParts(t, noMeta, []part{{"file", "", []byte("contents")}}); code != http.StatusBadRequest {
		t.Fatalf("upload without metadata: %d %s", code, body)
	}
	noFile := p.http + "/admin/v3/packages/source/public/default/no-file/v1"
	if code, body := postParts(t, noFile, []part{{"metadata", "application/json", []byte(`{}`)}}); code != http.StatusBadRequest {
		t.Fatalf("upload without a file: %d %s", code, body)
	}
	p.stop()

	p = startStandalone(t, dir)
	pk = v3Client(t, p.http).Packages()
	dst := filepath.Join(t.TempDir(), "got")
	if err := pk.Download(url, dst); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, big) {
		t.Fatalf("after a restart the package is %d bytes (or differs), uploaded %d", len(got), len(big))
	}
	m, err := pk.GetMetadata(url)
	if err != nil || m.Description != "big" || m.Properties["a"] != "b" {
		t.Fatalf("metadata after a restart: %+v %v", m, err)
	}
	late, err := pk.GetMetadata("source://public/default/late-meta@v1")
	if err != nil || late.Description != "late" {
		t.Fatalf("file-first upload's metadata: %+v %v", late, err)
	}
	names, err := pk.List("source", "public/default")
	if err != nil || len(names) != 1 || names[0] != "late-meta" {
		t.Fatalf("source packages (refused uploads leave nothing): %v %v", names, err)
	}
	if err := pk.Delete(url); err != nil {
		t.Fatal(err)
	}
	if err := pk.Download(url, filepath.Join(t.TempDir(), "x")); err == nil {
		t.Fatal("a deleted package downloads")
	}
}

// TestPackagesDisabled: with enablePackagesManagement=false every
// package route answers 503, as Pulsar's broker does.
func TestPackagesDisabled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a standalone")
	}
	p := startStandalone(t, t.TempDir(), "--packages-management=false")
	resp, err := http.Get(p.http + "/admin/v3/packages/function/public/default")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !bytes.Contains(body, []byte("Package Management Service is not enabled")) {
		t.Fatalf("list with package management off: %d %s", resp.StatusCode, body)
	}
}

func v3Client(t *testing.T, url string) pulsaradmin.Client {
	t.Helper()
	c, err := pulsaradmin.NewClient(&pulsaradmin.Config{WebServiceURL: url, PulsarAPIVersion: config.V3})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type part struct {
	name, contentType string
	data              []byte
}

// postParts POSTs a multipart body of parts, in order.
func postParts(t *testing.T, url string, parts []part) (int, string) {
	t.Helper()
	return postPartsAs(t, url, "", parts)
}

// postPartsAs is postParts with a bearer token ("": none).
func postPartsAs(t *testing.T, url, token string, parts []part) (int, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		if p.contentType != "" {
			h.Set("Content-Disposition", `form-data; name="`+p.name+`"`)
			h.Set("Content-Type", p.contentType)
		} else {
			h.Set("Content-Disposition", `form-data; name="`+p.name+`"; filename="f"`)
			h.Set("Content-Type", "application/octet-stream")
		}
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(p.data)
	}
	mw.Close()
	req, err := http.NewRequest(http.MethodPost, url, &buf)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestPackagesAuthorization: with authorization on, package routes take
// Pulsar's rule (superuser, tenant admin, or the packages permission on
// the namespace), and a function:// URL is read only if the deploying
// role passes it for the package's namespace: a tenant admin cannot
// deploy another tenant's package (and so cannot download it through
// the function either).
func TestPackagesAuthorization(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a standalone")
	}
	bin := buildFnProg(t, "1")
	exe, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	key, tok := tokenKey(t, t.TempDir())
	admin, alice, bob, carol, eve := tok("admin"), tok("alice"), tok("bob"), tok("carol"), tok("eve")
	p := startStandalone(t, t.TempDir(), "--authenticationEnabled", "--authenticationProviders", "token", "--tokenSecretKey", "file://"+key,
		"--authorizationEnabled", "--superUserRoles", "admin",
		"--brokerClientAuthenticationPlugin", "token", "--brokerClientAuthenticationParameters", "token:"+admin)
	for _, call := range []struct{ method, path, body string }{
		{"PUT", "/admin/v2/tenants/acme", `{"adminRoles":["alice"],"allowedClusters":["standalone"]}`},
		{"PUT", "/admin/v2/namespaces/acme/ns", ""},
		{"PUT", "/admin/v2/tenants/other", `{"adminRoles":["bob"],"allowedClusters":["standalone"]}`},
		{"PUT", "/admin/v2/namespaces/other/ns", ""},
		{"POST", "/admin/v2/namespaces/acme/ns/permissions/carol", `["packages"]`},
	} {
		if code, body := authHTTP(t, call.method, p.http+call.path, admin, call.body, nil); code != 204 {
			t.Fatalf("%s %s: %d %s", call.method, call.path, code, body)
		}
	}
	// Refused uploads carry a small file: the server may answer and
	// close before reading a body (a large one then meets a broken pipe).
	up := func(token, url string, content []byte) (int, string) {
		return postPartsAs(t, p.http+"/admin/v3/packages/"+url, token, []part{{"metadata", "application/json", []byte(`{}`)}, {"file", "", content}})
	}
	if code, body := up(bob, "function/other/ns/secret/v1", exe); code != 204 {
		t.Fatalf("bob's upload to his tenant: %d %s", code, body)
	}
	for _, c := range []struct {
		who, token, url string
		want            int
	}{
		{"nobody", "", "function/acme/ns/x/v1", 401},
		{"eve", eve, "function/acme/ns/x/v1", 403},
		{"alice to another tenant", alice, "function/other/ns/x/v1", 403},
		{"carol to another namespace", carol, "function/acme/other/x/v1", 403},
		{"carol (packages permission)", carol, "function/acme/ns/carols/v1", 204},
		{"alice (tenant admin)", alice, "function/acme/ns/own/v1", 204},
	} {
		content := []byte("small")
		if c.want == 204 {
			content = exe
		}
		if code, body := up(c.token, c.url, content); code != c.want {
			t.Fatalf("upload by %s: %d %s, want %d", c.who, code, body, c.want)
		}
	}
	if code, body := authHTTP(t, "GET", p.http+"/admin/v3/packages/function/other/ns/secret/v1", alice, "", nil); code != 403 {
		t.Fatalf("alice downloads bob's package: %d %.200s", code, body)
	}
	if code, body := authHTTP(t, "GET", p.http+"/admin/v3/packages/function/acme/ns", carol, "", nil); code != 200 || string(bytes.TrimSpace(body)) != `["carols","own"]` {
		t.Fatalf("carol lists acme/ns: %d %s", code, body)
	}
	cfg := `{"runtime":"GO","inputs":["persistent://acme/ns/in"],"output":"persistent://acme/ns/out"}`
	deploy := func(name, url string) (int, string) {
		return postPartsAs(t, p.http+"/admin/v3/functions/acme/ns/"+name, alice,
			[]part{{"functionConfig", "application/json", []byte(cfg)}, {"url", "text/plain", []byte(url)}})
	}
	if code, body := deploy("steal", "function://other/ns/secret@v1"); code != 403 {
		t.Fatalf("alice deploys bob's package: %d %s", code, body)
	}
	if code, body := authHTTP(t, "GET", p.http+"/admin/v3/functions/acme/ns/steal", alice, "", nil); code != 404 {
		t.Fatalf("the refused function: %d %s", code, body)
	}
	if code, body := deploy("mine", "function://acme/ns/own@v1"); code != 204 {
		t.Fatalf("alice deploys her package: %d %s", code, body)
	}
	code, body := authHTTP(t, "GET", p.http+"/admin/v3/functions/acme/ns/mine/download", alice, "", nil)
	if code != 200 || !bytes.Equal(body, exe) {
		t.Fatalf("download of alice's function: %d, %d bytes, want %d", code, len(body), len(exe))
	}
	// Upload and download by path are superusers' only.
	if code, body := postPartsAs(t, p.http+"/admin/v3/functions/upload", alice, []part{{"path", "text/plain", []byte("x")}, {"data", "", []byte("small")}}); code != 403 {
		t.Fatalf("upload by path by a tenant admin: %d %s", code, body)
	}
	if code, body := authHTTP(t, "GET", p.http+"/admin/v3/functions/download?path=x", alice, "", nil); code != 403 {
		t.Fatalf("download by path by a tenant admin: %d %.200s", code, body)
	}
	if code, body := authHTTP(t, "DELETE", p.http+"/admin/v3/functions/acme/ns/mine", alice, "", nil); code != 204 {
		t.Fatalf("delete: %d %s", code, body)
	}
}
