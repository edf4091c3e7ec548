package admin

import (
	"bytes"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/admincli"
	"github.com/magnetar-mq/magnetar/httpapi"
)

// cliArg is the value TestCLIRequestsHaveRoutes gives each placeholder
// of a verb's usage line.
var cliArg = map[string]string{
	"<topic>": "persistent://acme/ns/x", "<tenant/namespace>": "acme/ns", "<ns>": "acme/ns",
	"<tenant>": "acme", "<cluster>": "standalone", "<subscription>": "s",
	"<strategy>": "FULL", "<size>": "100", "<true|false>": "true",
}

// cliFlags are the flags a verb needs before it sends anything.
var cliFlags = map[string][]string{
	"brokers namespaces":                            {"--url", "127.0.0.1:8080"},
	"clusters create":                               {"--url", "http://127.0.0.1:8080"},
	"namespaces clear-backlog":                      {"--force"},
	"namespaces get-anti-affinity-namespaces":       {"--cluster", "standalone", "--group", "g"},
	"namespaces grant-permission":                   {"--role", "r", "--actions", "produce"},
	"namespaces grant-subscription-permission":      {"--roles", "r"},
	"namespaces revoke-permission":                  {"--role", "r"},
	"namespaces revoke-subscription-permission":     {"--role", "r"},
	"namespaces set-anti-affinity-group":            {"--group", "g"},
	"namespaces set-auto-topic-creation":            {"--enable"},
	"namespaces set-clusters":                       {"--clusters", "standalone"},
	"namespaces set-deduplication":                  {"--enable"},
	"namespaces set-encryption-required":            {"--enable"},
	"namespaces set-inactive-topic-policies":        {"--enable-delete-while-inactive"},
	"namespaces set-offload-policies":               {"--driver", "filesystem"},
	"namespaces split-bundle":                       {"--bundle", "0x00000000_0xffffffff"},
	"subscriptions reset-cursor":                    {"--time", "1m"},
	"topicPolicies set-deduplication":               {"--enable"},
	"topicPolicies set-inactive-topic-policies":     {"--enable-delete-while-inactive"},
	"topics get-message-id-by-index":                {"--index", "1"},
	"topics grant-permission":                       {"--role", "r", "--actions", "produce"},
	"topics offload":                                {"--size-threshold", "1M"},
	"topics remove-properties":                      {"--key", "k"},
	"topics revoke-permission":                      {"--role", "r"},
	"topics set-deduplication":                      {"--enable"},
	"topics set-inactive-topic-policies":            {"--enable-delete-while-inactive"},
	"topics set-replication-clusters":               {"--clusters", "standalone"},
	"topics update-properties":                      {"--property", "k=v"},
	"topics peek-messages":                          {"-s", "s"},
	"transactions coordinator-internal-stats":       {"-c", "0"},
	"transactions pending-ack-stats":                {"--topic", "persistent://acme/ns/x", "--sub-name", "s"},
	"transactions slow-transactions":                {"--time", "1m"},
	"transactions transaction-buffer-stats":         {"--topic", "persistent://acme/ns/x"},
	"transactions transaction-in-buffer-stats":      {"--topic", "persistent://acme/ns/x", "--most-sig-bits", "0", "--least-sig-bits", "1"},
	"transactions transaction-in-pending-ack-stats": {"--topic", "persistent://acme/ns/x", "--sub-name", "s", "--most-sig-bits", "0", "--least-sig-bits", "1"},
	"functions putstate":                            {"--state", `{"key":"k","stringValue":"v"}`},
	"functions querystate":                          {"--key", "k"},
	"transactions transaction-metadata":             {"--most-sig-bits", "0", "--least-sig-bits", "1"},
}

// fnFlags name the function, source or sink the functions, sources and
// sinks verbs act on.
var fnFlags = []string{"--tenant", "acme", "--namespace", "ns", "--name", "f"}

// cliLeaf is one runnable verb of `magnetar admin`: its words and usage.
type cliLeaf struct {
	words []string
	use   string
}

func cliLeaves(c *cobra.Command, words []string, out *[]cliLeaf) {
	for _, s := range c.Commands() {
		cliLeaves(s, append(slices.Clip(words), strings.Fields(s.Use)[0]), out)
	}
	if c.Runnable() {
		*out = append(*out, cliLeaf{words: words, use: c.Use})
	}
}

// givenValue reports whether a wildcard's value v came from the verb's
// arguments (args holds it), is a number the verb computed (a count, a
// timestamp, a message id) or a default pulsar-admin also uses (the
// public/default namespace, the persistent domain).
func givenValue(args []string, v string) bool {
	if v == "" {
		return false
	}
	if _, err := strconv.ParseInt(v, 10, 64); err == nil {
		return true
	}
	return slices.Contains([]string{"public", "default", "persistent"}, v) || strings.Contains(strings.Join(args, " "), v)
}

// TestCLIRequestsHaveRoutes runs every verb of `magnetar admin` (package
// admincli) against a server that records what it is asked, and looks
// each request up in the route table the broker serves (admin, cluster,
// console and function worker routes): a CLI path no route serves — a
// typo, or a route renamed on one side only — fails here rather than as
// a 404 in a user's hands. Every verb must send at least one request.
func TestCLIRequestsHaveRoutes(t *testing.T) {
	table := startFullSurface(t, nil).Router()
	var (
		mu   sync.Mutex
		seen []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.EscapedPath())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("{}"))
	}))
	defer srv.Close()

	schema := filepath.Join(t.TempDir(), "schema.json")
	if err := os.WriteFile(schema, []byte(`{"type":"STRING","schema":"","properties":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := maps.Clone(cliFlags)
	flags["schemas compatibility"] = []string{"--filename", schema}
	flags["schemas upload"] = []string{"--filename", schema}

	var leaves []cliLeaf
	cliLeaves(admincli.NewCommand(), nil, &leaves)
	if len(leaves) < 200 {
		t.Fatalf("only %d verbs found: is the walk broken?", len(leaves))
	}
	requests := 0
	for _, l := range leaves {
		args := slices.Clone(l.words)
		for _, f := range strings.Fields(l.use)[1:] {
			v, ok := cliArg[f]
			if !ok {
				t.Errorf("%s: no test value for %s", strings.Join(l.words, " "), f)
			}
			args = append(args, v)
		}
		args = append(args, flags[strings.Join(l.words, " ")]...)
		if slices.Contains([]string{"functions", "sources", "sinks"}, l.words[0]) && l.words[1] != "list" {
			args = append(args, fnFlags...)
		}
		args = append(args, "--admin-url", srv.URL)
		cmd := admincli.NewCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(args)
		mu.Lock()
		seen = seen[:0]
		mu.Unlock()
		err := cmd.Execute()
		mu.Lock()
		got := slices.Clone(seen)
		mu.Unlock()
		if len(got) == 0 {
			t.Errorf("%s sent no request (%v)", strings.Join(args, " "), err)
			continue
		}
		for _, req := range got {
			requests++
			method, path, _ := strings.Cut(req, " ")
			segs, ok := httpapi.SplitPath(path)
			if !ok {
				t.Errorf("%s: bad path %s", strings.Join(l.words, " "), path)
				continue
			}
			rt, params, _ := table.Lookup(method, segs)
			if rt == nil {
				t.Errorf("%s sends %s: no route serves it", strings.Join(l.words, " "), req)
				continue
			}
			// A wildcard takes any segment: a misspelt literal
			// ("brokers/leaderBrokr") would match a route's {cluster}.
			// Every wildcard must hold a value the verb was given.
			for name, v := range params {
				if !givenValue(args, v) {
					t.Errorf("%s sends %s: served by %s with {%s}=%q, which the verb was not given", strings.Join(l.words, " "), req, rt.ID(), name, v)
				}
			}
		}
	}
	t.Logf("%d verbs, %d requests, every one routed", len(leaves), requests)
}
