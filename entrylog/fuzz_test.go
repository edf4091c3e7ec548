package entrylog

import (
	"os"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// FuzzScanEntryLog: ScanFile, Open, LedgerBytes and reads over arbitrary
// file bytes return errors, never panic or hang.
func FuzzScanEntryLog(f *testing.F) {
	golden, err := os.ReadFile(goldenPath)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(golden)
	f.Add(golden[:HeaderSize+30])
	f.Add(AppendHeader(nil, Header{Version: Version}))
	torn := append([]byte(nil), golden...)
	torn[HeaderSize+40] ^= 0xff
	f.Add(torn)
	f.Fuzz(func(t *testing.T, b []byte) {
		fs := vfs.NewMem()
		writeMem(t, fs, "/d/00000001.log", b)
		var locs []Record
		_ = ScanFile(fs, "/d/00000001.log", func(r Record) error {
			locs = append(locs, Record{Ledger: r.Ledger, Entry: r.Entry, Loc: r.Loc})
			return nil
		})
		l, err := Open(Options{FS: fs, Dirs: []string{"/d"}})
		if err != nil {
			return
		}
		defer l.Close()
		_, _ = l.LedgerBytes(1)
		_, _ = l.Usage(func(int64) bool { return true })
		for _, r := range locs {
			if _, err := l.Read(r.Loc, r.Ledger, r.Entry); err != nil {
				t.Fatalf("Read(%x) of a scanned record = %v", r.Loc, err)
			}
		}
		_, _ = l.Read(Location(1, uint32(len(b)/2)), 0, 0)
	})
}
