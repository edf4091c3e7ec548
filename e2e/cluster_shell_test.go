package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/autorecovery"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/tools"
)

// runShell runs `magnetar shell args... --metadata-url URL --json -q` as a
// process and decodes its stdout (one JSON value, or one per line into a
// slice when out is a *[]T of line records) into out.
func (c *testCluster) runShell(out any, args ...string) {
	c.t.Helper()
	args = append(append([]string{"shell"}, args...), "--metadata-url", c.url, "--json", "-q")
	cmd := magnetarCommand(c.t, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("magnetar %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	if out == nil {
		return
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		c.t.Fatalf("magnetar %s: output %q: %v", strings.Join(args, " "), stdout.String(), err)
	}
}

// The shell tools against a live cluster: simpletest, listbookies,
// listledgers, ledgermetadata, readledger, bookiesanity,
// listunderreplicated, decommission of a live bookie, and recover of a
// killed one, each checked against the metadata and the data.
func TestClusterShellTools(t *testing.T) {
	c := newTestCluster(t)
	procs := map[string]*bookieProc{}
	for range 5 { // E=3 with two bookies gone
		b := c.startBookie("")
		procs[b.id] = b
	}
	var st tools.SimpleTestResult
	c.runShell(&st, "simpletest", "--entries", "300", "--keep", "--ensemble", "3", "--write-quorum", "2", "--ack-quorum", "2")
	if st.Entries != 300 || st.Deleted || len(st.Ensemble) != 3 {
		t.Fatalf("simpletest: %+v", st)
	}
	id := strconv.FormatInt(st.Ledger, 10)

	var bks []tools.BookieState
	c.runShell(&bks, "listbookies")
	if len(bks) != 5 || bks[0].State != "writable" {
		t.Fatalf("listbookies: %+v", bks)
	}
	var ls []tools.LedgerInfo
	c.runShell(&ls, "listledgers", "--meta")
	if len(ls) != 1 || ls[0].ID != st.Ledger || ls[0].State != "CLOSED" || *ls[0].LastEntryID != 299 || ls[0].WriteQuorum != 2 {
		t.Fatalf("listledgers: %+v", ls)
	}
	var md struct {
		Metadata ledger.Metadata `json:"metadata"`
	}
	c.runShell(&md, "ledgermetadata", id)
	if md.Metadata.State != ledger.StateClosed || md.Metadata.LastEntryID != 299 || md.Metadata.Password != nil {
		t.Fatalf("ledgermetadata: %+v", md.Metadata)
	}
	c.checkReadLedger(st.Ledger, 10, 12)

	var san []tools.Sanity
	c.runShell(&san, "bookiesanity")
	if len(san) != 5 || slices.ContainsFunc(san, func(s tools.Sanity) bool { return !s.OK }) {
		t.Fatalf("bookiesanity: %+v", san)
	}
	n := c.clusterClient()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	if ids, _ := n.lc.Ledgers(ctx); len(ids) != 1 {
		t.Fatalf("ledgers after bookiesanity: %v, want its ledgers deleted", ids)
	}

	// Decommission a live bookie of the ledger: its copies move, then its
	// cookie goes.
	live := st.Ensemble[0]
	var dec tools.Repair
	c.runShell(&dec, "decommission", live)
	if dec.Ledgers != 1 || len(dec.Repaired) != 1 || dec.Copied == 0 {
		t.Fatalf("decommission: %+v", dec)
	}
	if ok, _ := n.store.Exists(ctx, autorecovery.CookiesPath+"/"+live); ok {
		t.Fatalf("cookie of %s still there", live)
	}
	m, _, err := n.lc.Metadata(ctx, st.Ledger)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(tools.DescribeLedger(st.Ledger, &m).Bookies, live) {
		t.Fatalf("ledger still on %s: %+v", live, m.Ensembles)
	}
	checkReplicas(t, n, st.Ledger, &m, 299, simpleTestBody)
	procs[live].kill()

	// Kill another bookie of the ledger; once its registration is gone,
	// mark the ledger (as the auditor would) and recover the bookie.
	victim := m.Ensembles[0].Bookies[1]
	procs[victim].kill()
	deadline := time.Now().Add(30 * time.Second)
	for {
		reg, err := autorecovery.ListBookies(ctx, n.store)
		if err != nil {
			t.Fatal(err)
		}
		if !reg.Available(victim) && !reg.Available(live) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("killed bookies still registered: %+v", reg)
		}
		time.Sleep(100 * time.Millisecond) // polling the metadata store
	}
	if err := autorecovery.MarkUnderReplicated(ctx, n.store, st.Ledger, []string{victim}); err != nil {
		t.Fatal(err)
	}
	var marks []tools.Mark
	c.runShell(&marks, "listunderreplicated")
	if len(marks) != 1 || marks[0].Ledger != st.Ledger || !slices.Equal(marks[0].Bookies, []string{victim}) {
		t.Fatalf("listunderreplicated: %+v", marks)
	}
	var rec tools.Repair
	c.runShell(&rec, "recover", victim)
	if len(rec.Repaired) != 1 || rec.Copied == 0 {
		t.Fatalf("recover: %+v", rec)
	}
	c.runShell(&marks, "listunderreplicated")
	if len(marks) != 0 {
		t.Fatalf("marks after recover: %+v", marks)
	}
	if m, _, err = n.lc.Metadata(ctx, st.Ledger); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(tools.DescribeLedger(st.Ledger, &m).Bookies, victim) {
		t.Fatalf("ledger still on %s: %+v", victim, m.Ensembles)
	}
	checkReplicas(t, n, st.Ledger, &m, 299, simpleTestBody)
	c.checkReadLedger(st.Ledger, 0, 299)
}

// checkReadLedger runs readledger over first..last and checks each entry
// against what simpletest wrote.
func (c *testCluster) checkReadLedger(id, first, last int64) {
	c.t.Helper()
	args := []string{"shell", "readledger", strconv.FormatInt(id, 10), "--first", strconv.FormatInt(first, 10),
		"--last", strconv.FormatInt(last, 10), "--metadata-url", c.url, "--json", "-q"}
	cmd := magnetarCommand(c.t, args...)
	out, err := cmd.Output()
	if err != nil {
		c.t.Fatalf("readledger: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	e := first
	for dec.More() {
		var o tools.Entry
		if err := dec.Decode(&o); err != nil {
			c.t.Fatal(err)
		}
		want := "entry " + strconv.FormatInt(e, 10) + " of ledger " + strconv.FormatInt(id, 10) + " "
		if o.Entry != e || !strings.HasPrefix(string(o.Payload), want) || o.Size != 100 {
			c.t.Fatalf("readledger entry %+v, want %d starting %q", o, e, want)
		}
		e++
	}
	if e != last+1 {
		c.t.Fatalf("readledger returned entries %d..%d, want ..%d", first, e-1, last)
	}
}

// simpleTestBody is entry e of a 100-byte simpletest ledger.
func simpleTestBody(id, e int64) []byte {
	p := []byte("entry " + strconv.FormatInt(e, 10) + " of ledger " + strconv.FormatInt(id, 10) + " ")
	for len(p) < 100 {
		p = append(p, byte('a'+e%26))
	}
	return p
}
