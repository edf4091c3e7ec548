package bookie

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/entrylog"
	"github.com/magnetar-mq/magnetar/internal/uring"
	"github.com/magnetar-mq/magnetar/journal"
)

// BenchmarkAddEntry measures the add path with the real journal and entry
// log on the OS file system (index faked: it is off the add path).
var (
	groupWait  = time.Millisecond
	writerMode = uring.ModeAuto
)

func BenchmarkAddEntry(b *testing.B) {
	if s := os.Getenv("GROUPWAIT"); s != "" {
		groupWait, _ = time.ParseDuration(s)
	}
	if os.Getenv("PWRITE") != "" {
		writerMode = uring.ModePwrite
	}
	for _, size := range []int{100, 1024, 65536} {
		for _, sync := range []bool{true, false} {
			b.Run(fmt.Sprintf("size=%d/sync=%v", size, sync), func(b *testing.B) {
				dir := b.TempDir()
				o := Options{JournalDir: dir + "/j", LedgerDirs: []string{dir + "/l"}, JournalNoSync: !sync,
					DiskCheckInterval: -1, GCInterval: -1, WriteCacheSize: 256 << 20, JournalMaxGroupWait: groupWait}
				o.EnsureDefaults()
				el, err := entrylog.Open(entrylog.Options{FS: o.FS, Dirs: o.LedgerDirs})
				if err != nil {
					b.Fatal(err)
				}
				j, err := journal.Open(journal.Options{Dir: o.JournalDir, FS: o.FS, MaxGroupWait: max(o.JournalMaxGroupWait, 0), NoSync: o.JournalNoSync, WriterMode: writerMode})
				if err != nil {
					b.Fatal(err)
				}
				d := newFakeDisk()
				bk, err := open(o, storageSet{j: walJournal{j}, el: entryLogStore{el}, idx: d.open().idx})
				if err != nil {
					b.Fatal(err)
				}
				defer bk.Close()
				payload := make([]byte, size)
				sem := make(chan struct{}, 256)
				done := func(err error) {
					if err != nil {
						panic(err)
					}
					<-sem
				}
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					sem <- struct{}{}
					bk.AddEntry(int64(i%4), int64(i/4), mk, payload, false, done)
				}
				for range cap(sem) {
					sem <- struct{}{}
				}
			})
		}
	}
}
