package iopolicy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func mustNew(t *testing.T, dirs, listen, hosts []string) *Policy {
	t.Helper()
	p, err := New(dirs, listen, hosts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestListen(t *testing.T) {
	def := mustNew(t, nil, DefaultListen, nil)
	ops := mustNew(t, nil, []string{"0.0.0.0:9000-9009", "10.1.2.3:8080", "localhost:7000"}, nil)
	anyHost := mustNew(t, nil, []string{"*:*"}, nil)
	none := mustNew(t, nil, nil, nil)
	for _, c := range []struct {
		p    *Policy
		addr string
		ok   bool
	}{
		{def, "127.0.0.1:0", true},
		{def, "127.0.0.1:8080", true},
		{def, "localhost:0", true},
		{def, "[::1]:0", true},
		{def, ":0", false},
		{def, ":8080", false},
		{def, "0.0.0.0:8080", false},
		{def, "[::]:8080", false},
		{def, "10.1.2.3:8080", false},
		{def, "example.com:80", false},
		{def, "127.0.0.1", false},
		{def, "127.0.0.1:70000", false},
		{ops, ":9000", true},
		{ops, "0.0.0.0:9009", true},
		{ops, "[::]:9005", true},
		{ops, "10.9.9.9:9001", true}, // one interface, where all are allowed
		{ops, ":9010", false},
		{ops, ":0", false}, // the kernel's choice may lie outside the range
		{ops, "10.1.2.3:8080", true},
		{ops, "10.1.2.3:8081", false},
		{ops, "127.0.0.1:7000", true},
		{ops, "[::1]:7000", true},
		{ops, "127.0.0.1:0", false},
		{anyHost, ":0", true},
		{anyHost, "192.0.2.1:1", true},
		{none, "127.0.0.1:0", false},
	} {
		err := c.p.CheckListen(c.addr)
		if (err == nil) != c.ok {
			t.Errorf("%v CheckListen(%q) = %v, want ok=%v", c.p.Listen, c.addr, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrRefused) {
			t.Errorf("%q: error %v does not wrap ErrRefused", c.addr, err)
		}
	}
	if err := none.CheckListen("127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "connectorsAllowedListenAddresses") {
		t.Errorf("error should name the setting: %v", err)
	}
}

func TestBadEntries(t *testing.T) {
	for _, c := range []struct{ dirs, listen, hosts []string }{
		{dirs: []string{"relative/dir"}},
		{dirs: []string{"/srv/../etc"}},
		{listen: []string{"127.0.0.1"}},
		{listen: []string{":80"}},
		{listen: []string{"db.example.com:80"}}, // names only for hosts
		{listen: []string{"127.0.0.1:90-80"}},
		{listen: []string{"127.0.0.1:x"}},
		{hosts: []string{"bad_name!:5432"}},
	} {
		if _, err := New(c.dirs, c.listen, c.hosts); err == nil {
			t.Errorf("New(%v %v %v) accepted", c.dirs, c.listen, c.hosts)
		}
	}
}

func TestHosts(t *testing.T) {
	p := mustNew(t, nil, nil, []string{"db.example.com:5432", "10.0.0.5:5432-5433", "[2001:db8::1]:*"})
	for _, c := range []struct {
		host string
		port int
		ok   bool
	}{
		{"db.example.com", 5432, true},
		{"DB.Example.COM.", 5432, true},
		{"db.example.com", 5433, false},
		{"evil.example.com", 5432, false},
		{"10.0.0.5", 5433, true},
		{"10.0.0.6", 5432, false},
		{"2001:db8::1", 1, true},
		{"127.0.0.1", 5432, false},
	} {
		if err := p.CheckHost(c.host, c.port); (err == nil) != c.ok {
			t.Errorf("CheckHost(%s, %d) = %v, want ok=%v", c.host, c.port, err, c.ok)
		}
	}
}

func TestPostgresURL(t *testing.T) {
	p := mustNew(t, nil, nil, []string{"db.internal:5432", "10.0.0.5:*"})
	for _, c := range []struct {
		url string
		ok  bool
	}{
		{"postgres://u:p@db.internal/app", true},
		{"postgresql://u:p@db.internal:5432/app?sslmode=require", true},
		{"postgres://u@10.0.0.5:6000,db.internal:5432/app", true},
		{"postgres://u@db.internal:5433/app", false},
		{"postgres://u@db.internal/app?host=evil.example", false}, // the query overrides the authority
		{"postgres://u@db.internal/app?sslrootcert=/etc/shadow", false},
		{"postgres://u@db.internal/app?passfile=/root/.pgpass", false},
		{"postgres://u@/app", false},
		{"postgres://u@%2Fvar%2Frun%2Fpostgresql/app", false},
		{"host=db.internal user=u dbname=app", true},
		{"host=db.internal port=5432 password='a b\\' c'", true},
		{"host=db.internal,evil.example port=5432", false},
		{"host=/var/run/postgresql dbname=app", false},
		{"host=10.0.0.5 port=1,2", false}, // two ports for one host
		{"host=db.internal sslkey=/etc/ssl/private/k.pem", false},
		{"host=db.internal password='unterminated", false},
		{"user=u dbname=app", false}, // no host: the client would pick a local socket
	} {
		if err := p.CheckPostgresURL(c.url); (err == nil) != c.ok {
			t.Errorf("CheckPostgresURL(%q) = %v, want ok=%v", c.url, err, c.ok)
		}
	}
}

func TestCheckPath(t *testing.T) {
	p := mustNew(t, []string{"/srv/io/{tenant}", "/srv/shared/"}, nil, nil)
	for _, c := range []struct {
		tenant, path, root, rel string
	}{
		{"t1", "/srv/io/t1", "/srv/io/t1", "."},
		{"t1", "/srv/io/t1/in", "/srv/io/t1", "in"},
		{"t1", "/srv/io/t1/a/b/", "/srv/io/t1", "a/b"},
		{"t2", "/srv/shared/x", "/srv/shared", "x"},
		{"t1", "/srv/io/t2/in", "", ""},
		{"t1", "/srv/io/t1/../t2", "", ""},
		{"t1", "/srv/io/t1x", "", ""},
		{"t1", "srv/io/t1/in", "", ""},
		{"t1", "/etc", "", ""},
		{"..", "/srv/io/../etc", "", ""},
		{"..", "/srv/io", "", ""},
	} {
		root, rel, err := p.CheckPath(c.tenant, c.path)
		if c.root == "" {
			if err == nil {
				t.Errorf("CheckPath(%s, %q) = %s %s, want refused", c.tenant, c.path, root, rel)
			}
			continue
		}
		if err != nil || string(root) != c.root || rel != c.rel {
			t.Errorf("CheckPath(%s, %q) = %q %q %v, want %q %q", c.tenant, c.path, root, rel, err, c.root, c.rel)
		}
	}
	if _, _, err := mustNew(t, nil, nil, nil).CheckPath("t1", "/tmp/x"); err == nil || !strings.Contains(err.Error(), "connectorsAllowedDirectories is empty") {
		t.Errorf("no directories: %v", err)
	}
}

func TestCheckConnector(t *testing.T) {
	p := mustNew(t, []string{"/srv/io/{tenant}"}, DefaultListen, []string{"db:5432"})
	for _, c := range []struct {
		name, kind string
		cfg        map[string]any
		ok         bool
	}{
		{"file", "sources", map[string]any{"inputDirectory": "/srv/io/t1/in"}, true},
		{"file", "sources", map[string]any{"inputDirectory": "/srv/io/t1/in", "processedDirectory": "/tmp/done"}, false},
		{"file", "sources", map[string]any{"inputDirectory": "/etc"}, false},
		{"file", "sources", map[string]any{}, false},
		{"file", "sinks", map[string]any{"outputFile": "/srv/io/t1/out.txt"}, true},
		{"file", "sinks", map[string]any{"outputFile": "/srv/io/t1"}, false},
		{"file", "sinks", map[string]any{"outputFile": "/srv/io/t2/out.txt"}, false},
		{"http", "sources", map[string]any{}, true},
		{"http", "sources", map[string]any{"listenAddress": ":8080"}, false},
		{"jdbc-postgres", "sinks", map[string]any{"url": "postgres://db/x"}, true},
		{"jdbc-postgres", "sinks", map[string]any{"url": "postgres://other/x"}, false},
		{"log", "sinks", map[string]any{"outputFile": "/etc/passwd"}, true},
	} {
		err := p.CheckConnector(c.name, c.kind, "t1", c.cfg)
		if (err == nil) != c.ok {
			t.Errorf("%s %s %v: %v, want ok=%v", c.name, c.kind, c.cfg, err, c.ok)
		}
	}
}

func TestEncodeDecode(t *testing.T) {
	p := mustNew(t, []string{"/srv/io/{tenant}"}, []string{"localhost:9000-9001"}, []string{"db:5432"})
	q, err := Decode(p.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if q.CheckListen("[::1]:9001") != nil || q.CheckListen("127.0.0.1:9002") == nil || q.CheckHost("db", 5432) != nil {
		t.Fatalf("decoded policy differs: %+v", q)
	}
	if _, _, err := q.CheckPath("t1", "/srv/io/t1/x"); err != nil {
		t.Fatal(err)
	}
	empty, err := Decode("")
	if err != nil || empty.CheckListen("127.0.0.1:0") == nil {
		t.Fatalf("an empty policy must allow nothing: %v", err)
	}
}

// TestOpenBeneath: no symbolic link below a root leads out of it, and a
// refused open creates nothing.
func TestOpenBeneath(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "in")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "in", "file-link")); err != nil {
		t.Fatal(err)
	}
	p := mustNew(t, []string{root}, nil, nil)

	d, err := p.OpenPath("t", filepath.Join(root, "in", "new", "deeper"), true)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if st, err := os.Stat(filepath.Join(root, "in", "new", "deeper")); err != nil || !st.IsDir() {
		t.Fatalf("create below the root: %v", err)
	}
	if _, err := p.OpenPath("t", filepath.Join(root, "link", "sub"), true); !errors.Is(err, ErrRefused) {
		t.Fatalf("a directory through a symbolic link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "sub")); !os.IsNotExist(err) {
		t.Fatalf("a refused open created %s: %v", filepath.Join(outside, "sub"), err)
	}
	if _, err := p.OpenFile("t", filepath.Join(root, "link", "out.txt"), unix.O_WRONLY|unix.O_CREAT, 0o644); !errors.Is(err, ErrRefused) {
		t.Fatalf("a file through a symbolic link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "out.txt")); !os.IsNotExist(err) {
		t.Fatalf("a refused open created out.txt outside: %v", err)
	}
	if _, err := p.OpenFile("t", filepath.Join(root, "in", "file-link"), unix.O_RDONLY, 0); !errors.Is(err, ErrRefused) {
		t.Fatalf("a file that is a symbolic link: %v", err)
	}
	f, err := p.OpenFile("t", filepath.Join(root, "in", "ok.txt"), unix.O_WRONLY|unix.O_CREAT|unix.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := os.Stat(filepath.Join(root, "in", "ok.txt")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.OpenPath("t", filepath.Join(base, "outside"), true); !errors.Is(err, ErrRefused) {
		t.Fatalf("outside the roots: %v", err)
	}
}
