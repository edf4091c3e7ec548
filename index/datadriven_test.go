package index

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// TestDataDriven runs the scripts in testdata/datadriven. Commands:
//
//	open [slots=N pages=N]      (re)create an empty index on a new MemFS
//	set ledger=L entry=E loc=X  (entry may be a range A..B: loc X, X+1, ...)
//	get ledger=L entry=E|A..B    prints locations, "-" when absent
//	meta ledger=L [fenced] [key=K] [lac=V]
//	show ledger=L               last entry and metadata
//	delete ledger=L
//	flush | ledgers | stats
//	crash                       reopen a crash clone (synced state only)
//	reopen                      Close and Open
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata/datadriven", func(t *testing.T, path string) {
		var fs *vfs.MemFS
		var ix *Index
		openIx := func(t *testing.T, o Options) {
			o.FS, o.Dir = fs, "/ix"
			var err error
			if ix, err = Open(o); err != nil {
				t.Fatal(err)
			}
		}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			var ledger int64
			if td.HasArg("ledger") {
				td.ScanArgs(t, "ledger", &ledger)
			}
			entries := func() (lo, hi int64) {
				var s string
				td.ScanArgs(t, "entry", &s)
				if a, b, ok := strings.Cut(s, ".."); ok {
					fmt.Sscan(a, &lo)
					fmt.Sscan(b, &hi)
					return lo, hi
				}
				fmt.Sscan(s, &lo)
				return lo, lo
			}
			errOr := func(err error, ok string) string {
				if err != nil {
					return "error: " + err.Error()
				}
				return ok
			}
			switch td.Cmd {
			case "open":
				slots, pages := 4, 4
				if td.HasArg("slots") {
					td.ScanArgs(t, "slots", &slots)
				}
				if td.HasArg("pages") {
					td.ScanArgs(t, "pages", &pages)
				}
				fs = vfs.NewMem()
				openIx(t, Options{SlotsPerPage: slots, PagesPerSegment: pages})
				return "ok"
			case "set":
				var loc uint64
				td.ScanArgs(t, "loc", &loc)
				lo, hi := entries()
				for e := lo; e <= hi; e++ {
					if err := ix.Set(ledger, e, loc+uint64(e-lo)); err != nil {
						return "error: " + err.Error()
					}
				}
				return "ok"
			case "get":
				lo, hi := entries()
				var out []string
				for e := lo; e <= hi; e++ {
					if loc, ok := ix.Get(ledger, e); ok {
						out = append(out, fmt.Sprint(loc))
					} else {
						out = append(out, "-")
					}
				}
				return strings.Join(out, " ")
			case "meta":
				return errOr(ix.UpdateMeta(ledger, func(m *Meta) {
					m.Fenced = m.Fenced || td.HasArg("fenced")
					if td.HasArg("key") {
						var k string
						td.ScanArgs(t, "key", &k)
						m.MasterKey = []byte(k)
					}
					if td.HasArg("lac") {
						var v string
						td.ScanArgs(t, "lac", &v)
						m.ExplicitLAC = []byte(v)
					}
				}), "ok")
			case "show":
				last, ok := ix.LastEntry(ledger)
				if !ok {
					return "unknown"
				}
				m, _ := ix.GetMeta(ledger)
				return fmt.Sprintf("last=%d fenced=%v key=%q lac=%q", last, m.Fenced, m.MasterKey, m.ExplicitLAC)
			case "delete":
				return errOr(ix.Delete(ledger), "ok")
			case "flush":
				return errOr(ix.Flush(), "ok")
			case "ledgers":
				return fmt.Sprint(ix.Ledgers())
			case "stats":
				return fmt.Sprintf("%+v", ix.Stats())
			case "crash":
				fs = fs.CrashClone()
				openIx(t, Options{})
				return "ok"
			case "reopen":
				if err := ix.Close(); err != nil {
					return "error: " + err.Error()
				}
				openIx(t, Options{})
				return "ok"
			}
			t.Fatalf("unknown command %q", td.Cmd)
			return ""
		})
	})
}
