package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgServer is a PostgreSQL server run by a test (Debian's postgresql
// package, as the postgres user, on a temp dir and a free port).
type pgServer struct {
	bin, data, sock, log string
	port                 int
}

func startPostgres(t *testing.T) *pgServer {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(bins) == 0 {
		t.Fatal("PostgreSQL server not installed (Debian package postgresql; scripts/test installs it)")
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("no postgres user: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	root, err := os.MkdirTemp("", "magnetar-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	os.Chmod(root, 0o755)
	pg := &pgServer{bin: filepath.Dir(bins[0]), data: filepath.Join(root, "data"), sock: root, log: filepath.Join(root, "pg.log")}
	for _, d := range []string{pg.data} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		os.Chown(d, uid, gid)
	}
	os.Chown(root, uid, gid)
	pg.run(t, filepath.Join(pg.bin, "initdb"), "-D", pg.data, "-U", "postgres", "--auth=trust", "-E", "UTF8")
	// PostgreSQL binds its port itself, so the port found free here may be
	// taken by another test's listener before the server starts: then
	// the start fails with "Address already in use" and another port is
	// tried.
	for attempt := 1; ; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		pg.port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		os.Truncate(pg.log, 0) // the log then holds this attempt's failure only
		err = pg.tryStart()
		if err == nil {
			break
		}
		log, _ := os.ReadFile(pg.log)
		if attempt == 3 || !strings.Contains(string(log), "already in use") {
			t.Fatalf("%v\n%s", err, log)
		}
		t.Logf("port %d taken before PostgreSQL bound it; trying another", pg.port)
	}
	t.Cleanup(func() { pg.stop(t) })
	return pg
}

// command runs args as the postgres user, returning an error with their
// output.
func (pg *pgServer) command(args ...string) error {
	cmd := exec.Command("runuser", append([]string{"-u", "postgres", "--"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %v\n%s", args, err, out)
	}
	return nil
}

func (pg *pgServer) run(t *testing.T, args ...string) {
	t.Helper()
	if err := pg.command(args...); err != nil {
		log, _ := os.ReadFile(pg.log)
		t.Fatalf("%v\n%s", err, log)
	}
}

func (pg *pgServer) tryStart() error {
	return pg.command(filepath.Join(pg.bin, "pg_ctl"), "-D", pg.data, "-l", pg.log, "-w", "-o",
		fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=on", pg.port, pg.sock), "start")
}

func (pg *pgServer) start(t *testing.T) {
	t.Helper()
	if err := pg.tryStart(); err != nil {
		log, _ := os.ReadFile(pg.log)
		t.Fatalf("%v\n%s", err, log)
	}
}

func (pg *pgServer) stop(t *testing.T) {
	pg.run(t, filepath.Join(pg.bin, "pg_ctl"), "-D", pg.data, "-w", "-m", "fast", "stop")
}

func (pg *pgServer) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", pg.port)
}

// TestFunctionsE2EPostgresSink: the builtin PostgreSQL sink upserts every
// message of a topic as a row (batched), and a PostgreSQL restart in the
// middle loses nothing.
func TestFunctionsE2EPostgresSink(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	pg := startPostgres(t)
	ctx := context.Background()
	db, err := pgx.Connect(ctx, pg.url())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, "CREATE TABLE events (id bigint PRIMARY KEY, body text, n bigint)"); err != nil {
		t.Fatal(err)
	}
	db.Close(ctx)
	count := func() (int64, error) {
		c, err := pgx.Connect(ctx, pg.url())
		if err != nil {
			return 0, err
		}
		defer c.Close(ctx)
		var n int64
		err = c.QueryRow(ctx, "SELECT count(*) FROM events").Scan(&n)
		return n, err
	}
	waitRows := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			n, err := count()
			if err == nil && n == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("rows: %d (err %v), want %d", n, err, want)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// The operator allows the sink this one PostgreSQL server.
	p := startStandalone(t, t.TempDir(), "--connectors-allowed-hosts", fmt.Sprintf("127.0.0.1:%d", pg.port))
	cfg := map[string]any{"inputs": []string{"pg-in"}, "archive": "builtin://jdbc-postgres",
		"sourceSubscriptionPosition": "Earliest",
		"configs":                    map[string]any{"url": pg.url(), "table": "events", "key": "id", "batchSize": 50, "lingerMs": 20}}
	if code, b := fnUpload(t, p, http.MethodPost, "sinks", "pg", cfg, "", ""); code != http.StatusNoContent {
		t.Fatalf("create sink: %d %s", code, b)
	}
	waitRunning(t, p, "sinks", "pg", 1)
	c := p.client(t)
	msgs := func(from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			out = append(out, fmt.Sprintf(`{"id": %d, "body": "event-%d", "n": %d}`, i, i, int64(i)*1_000_000_007))
		}
		return out
	}
	produceAll(t, c, "persistent://public/default/pg-in", msgs(0, 1000))
	waitRows(1000)

	// PostgreSQL goes away; messages keep coming; it comes back.
	pg.stop(t)
	produceAll(t, c, "persistent://public/default/pg-in", msgs(1000, 2000))
	// Upserts: re-sending keys updates, not duplicates.
	produceAll(t, c, "persistent://public/default/pg-in", []string{`{"id": 0, "body": "updated", "n": 0}`})
	pg.start(t)
	waitRows(2000)
	conn, err := pgx.Connect(ctx, pg.url())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var body string
	deadline := time.Now().Add(30 * time.Second)
	for body != "updated" && time.Now().Before(deadline) {
		if err := conn.QueryRow(ctx, "SELECT body FROM events WHERE id = 0").Scan(&body); err != nil {
			t.Fatal(err)
		}
	}
	if body != "updated" {
		t.Fatalf("row 0 body %q, want the upserted value", body)
	}
	var n int64
	if err := conn.QueryRow(ctx, "SELECT n FROM events WHERE id = 1999").Scan(&n); err != nil || n != 1999*1_000_000_007 {
		t.Fatalf("row 1999 n = %d (%v)", n, err)
	}
	s := getStatus(t, p, "sinks", "pg")
	if !s.Instances[0].Status.Running {
		t.Fatalf("sink status %+v", s)
	}
	p.stop()
}

// TestFunctionsE2EFileSource: the builtin file source ingests a directory
// exactly once even when the standalone (worker and instance) is killed
// with SIGKILL in the middle and restarted.
func TestFunctionsE2EFileSource(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	dir := t.TempDir()
	in := t.TempDir()
	instancesMayReach(t, in, 0o777) // the source (an unprivileged account) moves finished files
	const files, lines = 20, 500
	for f := 0; f < files; f++ {
		var b strings.Builder
		for l := 0; l < lines; l++ {
			fmt.Fprintf(&b, "f%02d-l%04d\n", f, l)
		}
		if err := os.WriteFile(filepath.Join(in, fmt.Sprintf("part-%02d.txt", f)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Broker-wide deduplication: its state is rebuilt when the topic is
	// loaded again after the restart.
	p := startStandalone(t, dir, "--dedup", "--connectors-allowed-directories", in)
	cfg := map[string]any{"topicName": "files-out", "archive": "builtin://file", "processingGuarantees": "EFFECTIVELY_ONCE",
		"configs": map[string]any{"inputDirectory": in}}
	if code, b := fnUpload(t, p, http.MethodPost, "sources", "files", cfg, "", ""); code != http.StatusNoContent {
		t.Fatalf("create source: %d %s", code, b)
	}
	c := p.client(t)
	out := subscribeOut(t, c, "persistent://public/default/files-out")
	seen := receiveUntil(t, out, 90*time.Second, func(s map[string]int) bool { return len(s) >= files*lines/4 })
	// Kill everything mid-directory and restart.
	p.kill()
	c.Close()
	p = startStandalone(t, dir, "--dedup", "--connectors-allowed-directories", in)
	c = p.client(t)
	out = subscribeOut(t, c, "persistent://public/default/files-out")
	// The barrier file sorts last: once its line is out, every earlier
	// line (and any duplicate) is out too.
	if err := os.WriteFile(filepath.Join(in, "zz-barrier.txt"), []byte("barrier\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rest := receiveUntil(t, out, 120*time.Second, func(s map[string]int) bool { return s["barrier"] > 0 })
	// Every line reached the subscription (before or after the kill).
	missing, dup := 0, 0
	for f := 0; f < files; f++ {
		for l := 0; l < lines; l++ {
			if k := fmt.Sprintf("f%02d-l%04d", f, l); rest[k] == 0 && seen[k] == 0 {
				missing++
			}
		}
	}
	if missing > 0 {
		t.Fatalf("%d lines never ingested", missing)
	}
	// Exactly once on the topic: read it from the start with a reader.
	topicCount := map[string]int{}
	rd, err := c.CreateReader(readerEarliest("persistent://public/default/files-out"))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	total := 0
	for {
		m, err := rd.Next(ctxTimeout(t, 60*time.Second))
		if err != nil {
			t.Fatalf("reader after %d: %v", total, err)
		}
		total++
		topicCount[string(m.Payload())]++
		if string(m.Payload()) == "barrier" {
			break
		}
	}
	for k, v := range topicCount {
		if v > 1 {
			dup++
			if dup < 5 {
				t.Errorf("line %s is on the topic %d times", k, v)
			}
		}
	}
	if dup > 0 || total != files*lines+1 {
		t.Fatalf("topic holds %d messages (%d duplicated lines), want %d", total, dup, files*lines+1)
	}
	if left, _ := filepath.Glob(filepath.Join(in, "*.txt")); len(left) != 0 {
		t.Fatalf("files not moved to .processed: %v", left)
	}
	p.stop()
}

// TestFunctionsE2EWebhookSource: the builtin HTTP source turns each POST
// body into a message, answering 200 once it is persisted.
func TestFunctionsE2EWebhookSource(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	p := startStandalone(t, t.TempDir())
	cfg := map[string]any{"topicName": "hook-out", "archive": "builtin://http", "configs": map[string]any{"path": "/events"}}
	if code, b := fnUpload(t, p, http.MethodPost, "sources", "hook", cfg, "", ""); code != http.StatusNoContent {
		t.Fatalf("create source: %d %s", code, b)
	}
	waitRunning(t, p, "sources", "hook", 1)
	var addr string
	deadline := time.Now().Add(30 * time.Second)
	for addr == "" {
		code, b := p.get(t, "/admin/v3/functions/public/default/hook/state/http-address%2F0")
		if code == http.StatusOK {
			var st struct {
				ByteValue []byte `json:"byteValue"`
			}
			if err := json.Unmarshal(b, &st); err != nil {
				t.Fatal(err)
			}
			addr = string(st.ByteValue)
		} else if time.Now().After(deadline) {
			t.Fatalf("webhook address never published: %d %s", code, b)
		} else {
			time.Sleep(100 * time.Millisecond)
		}
	}
	c := p.client(t)
	out := subscribeOut(t, c, "persistent://public/default/hook-out")
	for i := 0; i < 20; i++ {
		code, b := fnHTTP(t, http.MethodPost, "http://"+addr+"/events", "text/plain", []byte(fmt.Sprintf("event-%d", i)))
		if code != http.StatusOK {
			t.Fatalf("POST %d: %d %s", i, code, b)
		}
	}
	if code, _ := fnHTTP(t, http.MethodGet, "http://"+addr+"/events", "", nil); code != http.StatusMethodNotAllowed {
		t.Fatalf("GET on the webhook: %d", code)
	}
	seen := receiveUntil(t, out, 30*time.Second, func(s map[string]int) bool { return len(s) == 20 })
	for k, v := range seen {
		if v != 1 {
			t.Fatalf("%s seen %d times", k, v)
		}
	}
	p.stop()
}
