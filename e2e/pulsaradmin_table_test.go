package e2e

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/rest"
)

// TestPulsarAdminTable drives pulsar-client-go's pulsaradmin (the version
// in go.mod) against a real `magnetar standalone`: one row per method of
// the interfaces issue 33 names, run in order, each checking the answer
// (a value read back, a list that holds what was created, the status a
// wrong call gets), not only that the call returned without error.
//
// A method of those interfaces with neither a row nor an entry in
// pulsarAdminGaps fails the test, so a pulsaradmin upgrade that adds a
// method shows up here. The plain method and its ...WithContext twin
// (the client's plain method calls the twin with context.Background())
// share one row, keyed by the plain name. pulsarAdminGaps are printed:
// the methods Magnetar does not answer as Pulsar does yet, each with
// why. A gap's row, where one is written, runs too and must still fail:
// a gap that passes fails the test, so the list shrinks as endpoints
// land.
func TestPulsarAdminTable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a standalone")
	}
	e := newAdminEnv(t)
	var all []adminRow
	for _, rows := range []func(*adminEnv) []adminRow{
		clusterRows, tenantRows, brokerRows, brokerStatsRows, resourceQuotaRows,
		nsIsolationRows, namespaceRows, topicsRows, schemaRows, functionRows, subscriptionRows, topicPolicyRows,
		functionsWorkerRows, packageRows, sourceRows, sinkRows,
	} {
		all = append(all, rows(e)...)
	}
	have := map[string]bool{}
	for _, r := range all {
		key := r.iface + "." + r.method
		if have[key] {
			t.Fatalf("two rows for %s", key)
		}
		have[key] = true
	}
	missing, stale := pulsarAdminCoverage(have)
	if len(stale) > 0 {
		t.Errorf("pulsarAdminGaps names methods that are no pulsaradmin methods: %s", strings.Join(stale, ", "))
	}
	if len(missing) > 0 {
		t.Errorf("pulsaradmin methods with no row and no gap entry: %s", strings.Join(missing, ", "))
	}
	for _, r := range all {
		key := r.iface + "." + r.method
		why, gap := pulsarAdminGaps[key]
		if !gap {
			t.Run(key, func(t *testing.T) { r.run(t) })
			continue
		}
		// A known gap's row runs too and must still fail: when it
		// passes, the gap is closed and its entry must go.
		if msg, failed := runGapRow(r); !failed {
			t.Errorf("%s passes now: remove it from pulsarAdminGaps (%s)", key, why)
		} else {
			t.Logf("known gap %s: %s; the row fails with: %s", key, why, msg)
		}
	}
	logPulsarAdminGaps(t, have)
}

// rowT is what a row needs of its *testing.T; a known gap's row runs
// with a gapRecorder instead.
type rowT interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	TempDir() string
}

// gapRecorder records a known gap's row failing without failing the
// test. Fatal ends the row's goroutine, as testing.T's does.
type gapRecorder struct {
	msgs []string
	dirs []string
}

func (g *gapRecorder) Helper() {}
func (g *gapRecorder) Fatal(args ...any) {
	g.msgs = append(g.msgs, fmt.Sprint(args...))
	runtime.Goexit()
}
func (g *gapRecorder) Fatalf(format string, args ...any) {
	g.msgs = append(g.msgs, fmt.Sprintf(format, args...))
	runtime.Goexit()
}
func (g *gapRecorder) Errorf(format string, args ...any) {
	g.msgs = append(g.msgs, fmt.Sprintf(format, args...))
}
func (g *gapRecorder) TempDir() string {
	d, err := os.MkdirTemp("", "pulsaradmin-gap-*")
	if err != nil {
		g.Fatal(err)
	}
	g.dirs = append(g.dirs, d)
	return d
}

// runGapRow runs r's checks and reports whether they failed, and how.
func runGapRow(r adminRow) (string, bool) {
	g := &gapRecorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.run(g)
	}()
	<-done
	for _, d := range g.dirs {
		os.RemoveAll(d)
	}
	return strings.Join(g.msgs, "; "), len(g.msgs) > 0
}

// pulsarAdminInterfaces are the interfaces of issue 33 item 1, by the
// name rows use.
var pulsarAdminInterfaces = map[string]reflect.Type{
	"Clusters":          reflect.TypeFor[admin.Clusters](),
	"Tenants":           reflect.TypeFor[admin.Tenants](),
	"Namespaces":        reflect.TypeFor[admin.Namespaces](),
	"Topics":            reflect.TypeFor[admin.Topics](),
	"TopicPolicies":     reflect.TypeFor[admin.TopicPolicies](),
	"Subscriptions":     reflect.TypeFor[admin.Subscriptions](),
	"Schema":            reflect.TypeFor[admin.Schema](),
	"Brokers":           reflect.TypeFor[admin.Brokers](),
	"BrokerStats":       reflect.TypeFor[admin.BrokerStats](),
	"ResourceQuotas":    reflect.TypeFor[admin.ResourceQuotas](),
	"NsIsolationPolicy": reflect.TypeFor[admin.NsIsolationPolicy](),
	"Functions":         reflect.TypeFor[admin.Functions](),
	"Sources":           reflect.TypeFor[admin.Sources](),
	"Sinks":             reflect.TypeFor[admin.Sinks](),
	"FunctionsWorker":   reflect.TypeFor[admin.FunctionsWorker](),
	"Packages":          reflect.TypeFor[admin.Packages](),
}

// pulsarAdminMethods lists "Iface.Method" for every method of the
// interfaces, a WithContext twin under its plain name.
func pulsarAdminMethods() []string {
	var out []string
	for name, ty := range pulsarAdminInterfaces {
		seen := map[string]bool{}
		for i := range ty.NumMethod() {
			m := ty.Method(i).Name
			if base, ok := strings.CutSuffix(m, "WithContext"); ok {
				if _, plain := ty.MethodByName(base); plain {
					m = base
				}
			}
			if !seen[m] {
				seen[m] = true
				out = append(out, name+"."+m)
			}
		}
	}
	sort.Strings(out)
	return out
}

// pulsarAdminCoverage returns the methods with neither a row nor a gap
// entry, and the gap entries that name no method.
func pulsarAdminCoverage(have map[string]bool) (missing, stale []string) {
	methods := pulsarAdminMethods()
	for _, m := range methods {
		if !have[m] && pulsarAdminGaps[m] == "" {
			missing = append(missing, m)
		}
	}
	for m := range pulsarAdminGaps {
		if !slices.Contains(methods, m) {
			stale = append(stale, m)
		}
	}
	sort.Strings(stale)
	return missing, stale
}

// logPulsarAdminGaps prints the gaps and, per interface, how many
// methods pass, how many are gaps whose row fails, and how many have no
// row yet.
func logPulsarAdminGaps(t *testing.T, have map[string]bool) {
	counts := map[string][3]int{}
	for _, m := range pulsarAdminMethods() {
		iface, _, _ := strings.Cut(m, ".")
		c := counts[iface]
		_, gap := pulsarAdminGaps[m]
		switch {
		case have[m] && !gap:
			c[0]++
		case have[m]:
			c[1]++
		default:
			c[2]++
		}
		counts[iface] = c
	}
	var names []string
	for n := range counts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := counts[n]
		t.Logf("pulsaradmin %s: %d methods pass, %d known gaps (row fails), %d without a row", n, c[0], c[1], c[2])
	}
	var gaps []string
	for m, why := range pulsarAdminGaps {
		if !have[m] {
			gaps = append(gaps, m+": "+why)
		}
	}
	sort.Strings(gaps)
	for _, g := range gaps {
		t.Logf("known gap %s", g)
	}
}

// adminRow is one method's call and checks.
type adminRow struct {
	iface, method string
	run           func(t rowT)
}

func row(iface, method string, run func(t rowT)) adminRow {
	return adminRow{iface: iface, method: method, run: run}
}

// adminEnv is the standalone the rows share, with the names they create.
type adminEnv struct {
	p       *proc
	c       pulsaradmin.Client
	v3      pulsaradmin.Client // /admin/v3: functions, sources, sinks, packages (as pulsarctl uses them)
	cluster string             // the standalone's cluster
	tenant  string             // created by the Tenants rows, holding ns
	ns      string             // tenant/ns, created for the rows
	dataDir string
	connDir string // the standalone's connectorsDirectory
	fnBin   string // testdata/fnprog, the Functions rows' function
}

func newAdminEnv(t *testing.T) *adminEnv {
	// The data directory is the test's temporary directory itself:
	// function instances (another account) reach it through its parent.
	data := t.TempDir()
	connDir := t.TempDir()
	p := startStandalone(t, data, "--connectors-directory", connDir)
	c, err := pulsaradmin.NewClient(&pulsaradmin.Config{WebServiceURL: p.http})
	if err != nil {
		t.Fatal(err)
	}
	clusters, err := c.Clusters().List()
	if err != nil || len(clusters) != 1 {
		t.Fatalf("clusters of the standalone: %v %v", clusters, err)
	}
	v3, err := pulsaradmin.NewClient(&pulsaradmin.Config{WebServiceURL: p.http, PulsarAPIVersion: config.V3})
	if err != nil {
		t.Fatal(err)
	}
	return &adminEnv{p: p, c: c, v3: v3, cluster: clusters[0], tenant: "tbl", ns: "tbl/ns", dataDir: data, connDir: connDir, fnBin: buildFnProg(t, "1")}
}

// ok fails the row on err.
func ok(t rowT, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantStatus checks that err is the admin API's answer with this status.
func wantStatus(t rowT, err error, status int) {
	t.Helper()
	var re rest.Error
	if !errors.As(err, &re) {
		t.Fatalf("want HTTP %d, got %v", status, err)
	}
	if re.Code != status {
		t.Fatalf("want HTTP %d, got %d (%s)", status, re.Code, re.Reason)
	}
}

// same fails the row unless got equals want (reflect.DeepEqual).
func same(t rowT, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: got %#v, want %#v", what, got, want)
	}
}
