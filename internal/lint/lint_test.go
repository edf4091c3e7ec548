package lint

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/magnetar-mq/magnetar"

// allowed lists, for each project package (by path prefix relative to the
// module root), the project packages its non-test files may import.
// Imports point downward only. The most specific prefix wins.
var allowed = map[string][]string{
	"internal": {"internal"},
	// internal/inflight: a count of operations in flight one can wait
	// to drain (the broker's walks over its loaded topics); a leaf.
	"internal/inflight": {},
	// internal/ratemeter: counters to per-second rates (the core's
	// bundle loads, the replicators' stats); a leaf.
	"internal/ratemeter": {},
	// internal/listenset: the binary and HTTP listeners, plain and TLS,
	// of the broker and the proxy (bound all or none); a leaf.
	"internal/listenset": {},
	"protocol":           {"internal", "protocol"},
	"metadata":           {"internal", "metadata"},
	"metadata/embedded":  {"internal", "metadata"},
	"metadata/zookeeper": {"internal", "metadata"},
	"journal":            {"internal"},
	"entrylog":           {"internal"},
	"index":              {"internal"},
	"bookie":             {"internal", "journal", "entrylog", "index", "protocol/bkproto", "metadata"},
	"bookie/server":      {"internal", "bookie", "protocol/bkproto", "metadata"},
	"autorecovery":       {"internal", "ledger", "metadata", "protocol/bkproto"},
	"ledger":             {"internal", "protocol/bkproto", "metadata"},
	"mledger":            {"internal", "ledger", "metadata", "mledger", "offload"},
	"offload":            {"internal"},
	"auth":               {"internal", "metadata", "auth/htpasswd"},
	// httpapi: the route table, the guard (authentication, the routes'
	// authorization rules, cross-origin protection) and the hardened
	// server every HTTP listener uses. It knows no feature package.
	"httpapi":       {"internal", "auth"},
	"auth/htpasswd": {},
	"policy":        {"internal", "metadata", "bundle"},
	// broker is the core: it imports none of its features (entrymeta,
	// compact, enforcement, georep, schemareg, txn/..., and those that
	// follow them out), nor the schema rules (the registry's), nor
	// ratelimit (it declares the Limiter it calls), nor the client (only
	// features talk to other brokers), nor cluster and bundle (it
	// declares the Ownership brokercluster implements), nor offload.
	"broker": {"internal", "mledger", "metadata", "protocol", "policy", "broker", "auth", "httpapi", "topicreg", "brokerconf"},
	// brokerconf: the broker's configuration (Config, ClusterConfig),
	// its defaults and validation: data only, below the core and every
	// package that configures or reads it; it knows no broker.
	"brokerconf": {"auth", "httpapi", "policy"},
	// topicreg: the topic registry below the core (the metadata layout
	// of created and partitioned topics, namespaces and clusters, and
	// the operations on it); it knows no loaded topic and no broker.
	"topicreg": {"metadata", "policy", "protocol"},
	// broker/selector: which consumer of a subscription gets an entry
	// (the dispatch algorithms, Key_Shared's hash ring); pure, it
	// imports nothing of the project.
	"broker/selector": {},
	// broker/outqueue: a connection's outbound byte queue (writev
	// batches, entries by reference, byte bound, backpressure); a leaf
	// the core uses, it imports nothing of the project.
	"broker/outqueue": {},
	// broker/entryset: the ordered sets of a subscription's dispatch
	// (replay set, pending order, delayed set), generic over the core's
	// pending entry; a leaf the core uses, it imports nothing of the
	// project.
	"broker/entryset": {},
	// broker/dispatch: a topic's subscription and its dispatch loop
	// (consumers, permits, pending entries, redelivery, the selection
	// of a consumer, stats of a subscription) behind small interfaces
	// (the cursor, a consumer's Sink, the features' Hooks); a leaf
	// below the core, it imports none of broker's other packages but
	// the leaves it dispatches with.
	"broker/dispatch": {"broker/entryset", "broker/selector", "broker/snap", "broker/storage", "internal/ratelog", "protocol"},
	// broker/storage: what the core reads and writes a topic through
	// (Position, Cursor, ManagedLedger and their errors) and the adapter
	// over package mledger that implements it (Opener), with the ledger
	// policies a topic opens under. It knows no broker, so that the
	// core's own tests can open real managed ledgers.
	"broker/storage": {"mledger", "policy", "protocol"},
	// broker/snap: the read-only values of a loaded topic the core hands
	// the stats, metrics, history and console packages (snapshots,
	// history counters); plain data, it imports nothing of the project.
	"broker/snap": {},
	// broker/brokertest: the test kit of the packages built on the core
	// (tests only; a client package, see clientPackages). It runs policy
	// enforcement, the schema registry and /metrics, as the binary does.
	"broker/brokertest": {"bookieinfo", "broker", "brokerconf", "brokerauthz", "brokeradmin", "brokermetrics", "enforcement", "metadata", "mledger", "protocol", "schemareg", "tiered", "internal/testenv"},
	// Features behind the core's extension points (broker/extension.go):
	// they import the core, the core imports none of them.
	"entrymeta": {"broker", "mledger", "protocol"},
	// brokerauthz: per-command authorization of the binary protocol
	// (the rules over the protocol's command types) behind the core's
	// CommandAuthorizer; with authorization on, the core refuses to
	// start without it.
	"brokerauthz": {"broker", "auth", "protocol"},
	// schemareg: the schema registry (its versions in the metadata
	// store, the rules of package schema).
	"schemareg": {"broker", "metadata", "policy", "protocol", "schema"},
	// enforcement: admission limits and policies over time (TTL,
	// backlog quotas, inactive topics, rate limits) and idle topic
	// unloading behind the Admission and Limits the core declares.
	"enforcement": {"broker", "policy", "protocol", "ratelimit"},
	// topicstats: Pulsar's topic stats shapes (TopicStats, internal
	// stats, partitioned and namespace sums) built from the core's
	// read-only snapshots; features add their parts as Sources.
	"topicstats": {"broker", "mledger", "policy"},
	// brokermetrics: /metrics (Prometheus), read through the core's
	// views; the core declares the publish latency hook it feeds.
	"brokermetrics": {"broker", "topicstats", "auth", "httpapi", "bookieinfo"},
	// bookieinfo: the storage nodes as the admin API, the console and
	// /metrics report them, handed to each by the wiring (the core
	// never sees them); a leaf.
	"bookieinfo": {},
	// topichistory: the console's per-topic history (rates, backlog,
	// storage size), sampled from the core's counters.
	"topichistory": {"broker", "internal"},
	// ratelimit: token buckets in debt; knows no broker.
	"ratelimit": {},
	// compact: topic compaction and read_compacted subscriptions.
	"compact": {"broker", "topicstats", "mledger", "protocol", "internal/codec"},
	// tiered: tiered storage, the topics' offload policies and the
	// admin API's offload trigger (the managed ledger offloads).
	"tiered": {"broker", "mledger", "offload", "policy"},
	// dedupsnap: deduplication snapshots in the pulsar.dedup cursor.
	"dedupsnap": {"broker", "topicstats", "mledger", "protocol"},
	// georep: geo-replication (replicators, replicated subscriptions).
	"georep": {"broker", "topicstats", "mledger", "policy", "protocol", "pulsarclient", "auth", "internal/ratemeter"},
	// txn/server: a broker's transactions (coordinators served, the
	// participant side of its topics).
	"txn/server": {"broker", "brokercluster", "topicreg", "topicstats", "txn", "mledger", "metadata", "protocol", "cluster", "auth", "pulsarclient"},
	// brokercluster: the broker's cluster membership (package cluster)
	// behind the core's Ownership seam, joined through Deps.JoinCluster.
	"brokercluster": {"broker", "bundle", "cluster", "metadata", "protocol"},
	"bundle":        {},
	"cluster":       {"internal", "metadata", "bundle", "isolation"},
	// isolation: failure domains and namespace isolation policies (their
	// store and the placement rules the cluster applies).
	"isolation": {"metadata"},
	// brokeradmin: the admin roles over the core's seams (registry,
	// topic views, loaded-topics walk, policies, ownership); the core
	// never imports it.
	"brokeradmin": {"broker", "brokercluster", "topicstats", "topicreg", "cluster", "metadata", "mledger", "policy", "protocol"},
	"admin":       {"internal", "bookieinfo", "broker", "brokeradmin", "topicreg", "topicstats", "policy", "protocol", "auth", "bundle", "cluster", "isolation", "schema", "txn", "httpapi", "metadata", "ledgerinfo", "dynconfig", "ledger", "tiered"},
	"schema":      {},
	// dynconfig: the broker's dynamic configuration over the policy
	// store's defaults overlay.
	"dynconfig": {"metadata", "policy"},
	// ledgerinfo: a persistent topic's managed ledger as the admin API
	// reads it (internal-info, message id by time).
	"ledgerinfo": {"broker", "mledger", "protocol"},
	// txn: the transaction id and participant interface; txn/... the
	// coordinator (its log is a managed ledger).
	"txn":     {"internal", "mledger", "metadata", "protocol", "txn"},
	"proxy":   {"internal", "metadata", "protocol", "auth", "cluster", "httpapi"},
	"console": {"internal", "bookieinfo", "broker", "brokeradmin", "brokercluster", "topicstats", "topichistory", "policy", "bundle", "cluster", "auth", "httpapi"},
	// functions: the function worker (REST routes declared on an httpapi
	// table, state and assignments in the metadata store). functions/sdk is linked into
	// user programs and imports only the client (and what it imports); the
	// builtin connectors are SDK programs (the webhook serves on an
	// httpapi server); functions/iopolicy is the operator's allow-list
	// both the worker and the connectors check.
	"functions":     {"internal", "metadata", "auth", "httpapi", "functions", "pulsarclient"},
	"functions/sdk": {"pulsarclient"},
	// packages: package management (/admin/v3/packages): records in the
	// metadata store, contents in ledgers; the function worker reads it
	// through an interface of its own.
	"packages":             {"metadata", "ledger", "auth", "httpapi"},
	"functions/iopolicy":   {},
	"functions/connectors": {"functions/sdk", "functions/iopolicy", "pulsarclient", "httpapi", "auth"},
	// admincli: `magnetar admin`, a REST client; knows no server package.
	"admincli": {"auth"},
	// localcluster: `magnetar cluster`, a supervisor of child processes.
	"localcluster": {"internal"},
	// clientcli, tokencli: `magnetar client` (on pulsarclient) and
	// `magnetar tokens` (auth's key and token formats).
	"clientcli": {"pulsarclient"},
	"tokencli":  {"auth"},
	// tools/shell: `magnetar shell`, flags and output around tools (the
	// binary opens the cluster for it).
	"tools/shell": {"tools", "internal", "ledger"},
	// pulsarclient: the project's Pulsar protocol client (wire codecs and
	// the TLS handshake only).
	"pulsarclient": {"internal/codec", "internal/tlsconn", "protocol"},
	// internal/stack: the wiring of the server roles (metadata store,
	// bookie, ledger client, managed ledgers, broker, features, admin,
	// console, function worker) that cmd/magnetar and magnetartest share;
	// only they import it (TestWiringImporters).
	"internal/stack": {"internal", "bookieinfo", "admin", "auth", "httpapi", "bookie", "broker", "brokerconf", "brokerauthz", "brokermetrics", "topichistory", "compact", "console", "dedupsnap", "enforcement", "entrymeta", "functions", "georep", "isolation", "ledger", "metadata", "mledger", "offload", "packages", "schemareg", "tiered", "txn/server", "dynconfig", "cluster", "brokercluster"},
	// internal/cliflags: flag groups the server commands share, each
	// turned into the options of the package it configures.
	"internal/cliflags": {"internal", "auth", "bookie", "brokerconf", "functions", "httpapi", "ledger", "mledger", "offload", "policy"},
	// magnetartest: the in-process standalone for Go tests (imports
	// testing; only tests import it, TestTestKitsOnlyInTests).
	"magnetartest": {"internal/stack", "auth", "brokerconf", "functions"},
	// The top of the graph imports anything in the project.
	// tools: the ops tools as a library (only cmd and tools/shell import it).
	"tools": {"internal", "ledger", "bookie", "journal", "entrylog", "index", "metadata", "autorecovery", "protocol"},
	"cmd":   {""},
	"bench": {""},
	"fuzz":  {""},
	// e2e: the process-level end-to-end tests (tests only: they run the
	// built binary and talk to it over the network, whatever project
	// packages they need to check what it did; doc.go imports nothing).
	"e2e": {""},
}

// Nothing below the top packages may import them, and only cmd (the
// binary's subcommands, such as perf and shell) may import the other top
// packages. Nothing imports cmd or e2e. cmd, bench, fuzz and e2e may
// import anything; tools has its own rule above.
var top = []string{"cmd", "bench", "fuzz", "tools", "e2e"}

// clientOnly (pulsar-client-go, the independent client of the end-to-end
// tests) may appear only in tests and in clientPackages, top packages the
// binary does not link for it (TestBinaryDoesNotLinkTesting checks the
// binary). Everything else uses the project's own client, pulsarclient.
const clientOnly = "github.com/apache/pulsar-client-go"

var clientPackages = []string{"bench", "fuzz", "broker/brokertest"}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

func hasPrefixPath(p, prefix string) bool {
	return prefix == "" || p == prefix || strings.HasPrefix(p, prefix+"/")
}

// rule returns the allow-list for package rel: the longest matching key.
func rule(rel string) ([]string, bool) {
	best, found := "", false
	for k := range allowed {
		if hasPrefixPath(rel, k) && (!found || len(k) > len(best)) {
			best, found = k, true
		}
	}
	return allowed[best], found
}

type goFile struct {
	rel     string // package dir relative to the module root
	path    string
	imports []string
	test    bool
}

func parseTree(t *testing.T, root string) []goFile {
	t.Helper()
	var files []goFile
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		relDir, _ := filepath.Rel(root, filepath.Dir(path))
		gf := goFile{rel: filepath.ToSlash(relDir), path: path, test: strings.HasSuffix(path, "_test.go")}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			gf.imports = append(gf.imports, p)
		}
		// The tools.go pin file is build-tagged and imports nothing at run time.
		for _, c := range f.Comments {
			if strings.Contains(c.Text(), "go:build tools") || strings.HasPrefix(strings.TrimSpace(c.List[0].Text), "//go:build tools") {
				return nil
			}
		}
		files = append(files, gf)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestImportDirection enforces docs/architecture.md's package graph on every
// non-test file.
func TestImportDirection(t *testing.T) {
	root := repoRoot(t)
	var problems []string
	for _, f := range parseTree(t, root) {
		if f.rel == "." {
			continue
		}
		for _, imp := range f.imports {
			clientOK := false
			for _, cp := range clientPackages {
				if hasPrefixPath(f.rel, cp) {
					clientOK = true
				}
			}
			if strings.HasPrefix(imp, clientOnly) && !f.test && !clientOK {
				problems = append(problems, f.path+": imports "+imp+" outside tests, bench and fuzz (use pulsarclient)")
			}
			if !strings.HasPrefix(imp, module+"/") || f.test {
				continue
			}
			target := strings.TrimPrefix(imp, module+"/")
			for _, tp := range top {
				if hasPrefixPath(target, tp) && !hasPrefixPath(f.rel, tp) && (tp == "cmd" || tp == "e2e" || !hasPrefixPath(f.rel, "cmd")) {
					problems = append(problems, f.path+": imports "+target+", which is the top of the graph")
				}
			}
			allow, ok := rule(f.rel)
			if !ok {
				problems = append(problems, f.path+": package "+f.rel+" has no import rule in internal/lint")
				continue
			}
			okImp := false
			for _, a := range allow {
				if hasPrefixPath(target, a) {
					okImp = true
				}
			}
			if !okImp {
				problems = append(problems, f.path+": "+f.rel+" may not import "+target)
			}
		}
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

// TestStorageEnginePackagesIndependent: journal, entrylog and index never
// import each other (docs/architecture.md, Package graph).
func TestStorageEnginePackagesIndependent(t *testing.T) {
	engine := []string{"journal", "entrylog", "index"}
	for _, f := range parseTree(t, repoRoot(t)) {
		for _, e := range engine {
			if !hasPrefixPath(f.rel, e) {
				continue
			}
			for _, imp := range f.imports {
				for _, other := range engine {
					if other != e && hasPrefixPath(strings.TrimPrefix(imp, module+"/"), other) && strings.HasPrefix(imp, module) {
						t.Errorf("%s: %s imports %s", f.path, e, other)
					}
				}
			}
		}
	}
}

// TestTypedAtomicsOnly bans the function-style sync/atomic API on integers
// (atomic.AddInt64 and friends) in favour of atomic.Int64 and friends.
func TestTypedAtomicsOnly(t *testing.T) {
	root := repoRoot(t)
	banned := []string{"atomic.AddInt", "atomic.AddUint", "atomic.LoadInt", "atomic.LoadUint",
		"atomic.StoreInt", "atomic.StoreUint", "atomic.CompareAndSwapInt", "atomic.CompareAndSwapUint",
		"atomic.SwapInt", "atomic.SwapUint"}
	for _, f := range parseTree(t, root) {
		// internal/uring publishes ring indexes shared with the kernel
		// through raw pointers into mmap'd memory; typed atomics cannot
		// overlay those.
		if hasPrefixPath(f.rel, "internal/uring") || hasPrefixPath(f.rel, "internal/lint") {
			continue
		}
		src, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range banned {
			if strings.Contains(string(src), b) {
				t.Errorf("%s: uses %s...; use the typed atomics (atomic.Int64 etc.)", f.path, b)
			}
		}
	}
}

// TestOneCRC32CTable: CRC-32C goes through internal/crc32c; no other
// package builds its own table.
func TestOneCRC32CTable(t *testing.T) {
	for _, f := range parseTree(t, repoRoot(t)) {
		if f.test || hasPrefixPath(f.rel, "internal/crc32c") || hasPrefixPath(f.rel, "internal/lint") {
			continue
		}
		src, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(src), "crc32.Castagnoli") {
			t.Errorf("%s: builds a CRC-32C table; use internal/crc32c", f.path)
		}
	}
}

// payloadCodecs are the libraries of Pulsar's payload codecs; only
// internal/codec imports them (docs/compression.md).
var payloadCodecs = []string{"compress/zlib", "github.com/pierrec/lz4", "github.com/klauspost/compress/zstd",
	"github.com/klauspost/compress/snappy", "github.com/golang/snappy"}

// TestOnePayloadCodec: LZ4, ZLIB, ZSTD and SNAPPY payloads are encoded
// and decoded by internal/codec only.
func TestOnePayloadCodec(t *testing.T) {
	for _, f := range parseTree(t, repoRoot(t)) {
		if f.test || hasPrefixPath(f.rel, "internal/codec") {
			continue
		}
		for _, imp := range f.imports {
			for _, c := range payloadCodecs {
				if hasPrefixPath(imp, c) {
					t.Errorf("%s: imports %s; use internal/codec", f.path, imp)
				}
			}
		}
	}
}

// TestBinaryDoesNotLinkTesting lists the magnetar binary's dependencies
// (go list -deps ./cmd/magnetar) and fails when any of them imports
// package testing, or when pulsar-client-go is among them (the binary's
// Pulsar clients are pulsarclient; pulsar-client-go pulled in testing
// through AthenZ). The project's own packages the binary links
// (internal/zkserver, not internal/zktest, for `magnetar cluster`'s
// ZooKeeper) never import testing.
func TestBinaryDoesNotLinkTesting(t *testing.T) {
	cmd := exec.Command(goBinary(t), "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./cmd/magnetar")
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		checked++
		pkg, imports := fields[0], fields[1:]
		if pkg == "github.com/magnetar-mq/magnetar/internal/zktest" {
			t.Errorf("the binary links internal/zktest")
		}
		if strings.HasPrefix(pkg, clientOnly) {
			t.Errorf("the binary links %s (use pulsarclient)", pkg)
		}
		if slices.Contains(imports, "testing") {
			t.Errorf("%s imports testing and is linked into the magnetar binary", pkg)
		}
	}
	if checked < 100 {
		t.Fatalf("go list reported only %d packages: the check saw nothing", checked)
	}
}

// goBinary is the go command running the tests.
func goBinary(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not in PATH: %v", err)
	}
	return p
}

// TestStaticcheck runs staticcheck (honnef.co/go/tools, pinned in
// go.mod through tools.go) over the module with its default checks,
// which include unused (U1000): dead code, deprecated calls, suspicious
// constructs. A finding that is intended carries a //lint:ignore
// directive with the reason.
func TestStaticcheck(t *testing.T) {
	if testing.Short() {
		t.Skip("staticcheck takes about a minute; the full run (scripts/test) does it")
	}
	cmd := exec.Command(goBinary(t), "run", "honnef.co/go/tools/cmd/staticcheck", "./...")
	cmd.Dir = repoRoot(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("staticcheck: %v\n%s", err, out)
	}
}

// testKits are packages for tests only: they import package testing
// (or run servers a test owns), so no non-test file outside the kits
// themselves may import them (the binary would link testing).
var testKits = []string{"magnetartest", "broker/brokertest", "internal/zktest"}

// TestTestKitsOnlyInTests: the test kits are imported by tests (and
// bench, fuzz, whose packages are test harnesses) only.
func TestTestKitsOnlyInTests(t *testing.T) {
	checked := 0
	for _, f := range parseTree(t, repoRoot(t)) {
		if f.test || hasPrefixPath(f.rel, "bench") || hasPrefixPath(f.rel, "fuzz") {
			continue
		}
		for _, imp := range f.imports {
			target, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			for _, kit := range testKits {
				if hasPrefixPath(target, kit) && !hasPrefixPath(f.rel, kit) {
					t.Errorf("%s: imports the test kit %s outside tests", f.path, target)
				}
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no project imports seen: the check saw nothing")
	}
}

// TestWiringImporters: internal/stack (the server wiring) is imported
// only by the binary (cmd) and the in-process test server
// (magnetartest), so the wiring stays at the top of the graph.
func TestWiringImporters(t *testing.T) {
	users := 0
	for _, f := range parseTree(t, repoRoot(t)) {
		for _, imp := range f.imports {
			if imp != module+"/internal/stack" {
				continue
			}
			if !hasPrefixPath(f.rel, "cmd") && !hasPrefixPath(f.rel, "magnetartest") && !hasPrefixPath(f.rel, "internal/stack") {
				t.Errorf("%s: imports internal/stack (only cmd and magnetartest wire servers)", f.path)
			}
			users++
		}
	}
	if users == 0 {
		t.Fatal("nothing imports internal/stack: the check saw nothing")
	}
}

// TestOneSoakSwitch: MAGNETAR_SOAK is read in internal/testenv only, and
// only tests and the broker test kit (broker/brokertest, itself imported
// by tests only) import that package.
func TestOneSoakSwitch(t *testing.T) {
	for _, f := range parseTree(t, repoRoot(t)) {
		if hasPrefixPath(f.rel, "internal/testenv") || hasPrefixPath(f.rel, "internal/lint") {
			continue
		}
		src, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{`Getenv("MAGNETAR_SOAK")`, `Getenv("SOAK")`, `LookupEnv("MAGNETAR_SOAK")`} {
			if strings.Contains(string(src), bad) {
				t.Errorf("%s: reads the soak switch itself; use testenv.Soak()", f.path)
			}
		}
		if !f.test && !hasPrefixPath(f.rel, "broker/brokertest") && slices.Contains(f.imports, module+"/internal/testenv") {
			t.Errorf("%s: imports internal/testenv outside tests", f.path)
		}
	}
}

// TestDocsInRepo: comments and notes cite the repository's own docs/, no
// design document outside it and no machine path.
func TestDocsInRepo(t *testing.T) {
	root := repoRoot(t)
	// The forbidden strings are assembled, so that this file does not
	// contain them itself: the machine's work directory, the shared
	// reference directory beside the repository, and the names of the
	// reference documents there.
	bad := []string{"/" + "work" + "/", ".." + "/" + "shared", "pulsar-" + "georep"}
	for _, doc := range []string{"bookkeeper-design", "pulsar-protocol", "pulsar-cluster", "pulsar-security", "style", "environment"} {
		bad = append(bad, doc+"."+"md")
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "build" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, ".md") && !strings.HasSuffix(name, ".conf") {
			return nil
		}
		if rel, _ := filepath.Rel(root, path); rel == filepath.Join("internal", "lint", "lint_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, b := range bad {
			if strings.Contains(string(src), b) {
				t.Errorf("%s: cites %q; cite docs/ in this repository", path, b)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"architecture.md", "replication.md", "protocol.md", "storage-format.md", "benchmark-machine.md", "locking.md"} {
		if _, err := os.Stat(filepath.Join(root, "docs", f)); err != nil {
			t.Errorf("docs/%s: %v", f, err)
		}
	}
}
