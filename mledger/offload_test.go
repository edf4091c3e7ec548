package mledger_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/offload"
)

type offEnv struct {
	*env
	dir string
	o   *offload.Offloader
	mo  mledger.Offloader
}

func newOffEnv(t *testing.T) *offEnv {
	dir := filepath.Join(t.TempDir(), "tier")
	o, err := offload.New(offload.Config{Driver: offload.DriverFilesystem, Directory: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &offEnv{env: newEnv(t), dir: dir, o: o, mo: mledger.NewOffloader(o)}
	_ = e.f.Close()
	e.opts.Offloader = e.mo
	e.f = e.newFactory()
	return e
}

func (e *offEnv) objects(t *testing.T) []string {
	t.Helper()
	keys, err := e.o.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func offCfg(lag time.Duration) mledger.Config {
	c := mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 10}
	c.Offload = mledger.OffloadPolicy{ThresholdBytes: -1, ThresholdSeconds: -1, DeletionLag: lag}
	return c
}

func checkAll(t *testing.T, ml *mledger.ManagedLedger, n int) {
	t.Helper()
	c, err := ml.NewNonDurableCursor(fmt.Sprintf("check-%d", time.Now().UnixNano()), mledger.Earliest)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ml.DeleteCursor(context.Background(), c.Name()) }()
	got := datas(readAll(t, c))
	if len(got) != n {
		t.Fatalf("read %d entries, want %d", len(got), n)
	}
	for i, d := range got {
		if want := fmt.Sprintf("e-%d", i); d != want {
			t.Fatalf("entry %d = %q, want %q", i, d, want)
		}
	}
}

func TestOffloadManualReadBackRestart(t *testing.T) {
	e := newOffEnv(t)
	ctx := ctxT(t)
	ml := e.open("t", offCfg(-1))
	pos := addMany(t, ml, "e", 35)
	s0 := ml.OffloadStatus()
	if s0.State != mledger.OffloadNotRun {
		t.Fatalf("status %+v", s0)
	}
	first, err := ml.Offload(ctx, pos[len(pos)-1])
	if err != nil {
		t.Fatal(err)
	}
	st := ml.Stats()
	if want := (mledger.Position{LedgerID: st.Ledgers[3].LedgerID}); first != want {
		t.Fatalf("first unoffloaded %v, want %v", first, want)
	}
	for i, l := range st.Ledgers {
		done := l.Offload != nil && l.Offload.Complete
		if done != (i < 3) {
			t.Fatalf("ledger %d offloaded=%v", i, done)
		}
	}
	if st.OffloadedSize == 0 || st.OffloadedSize >= st.TotalSize || st.BookieSize != st.TotalSize {
		t.Fatalf("sizes %+v", st)
	}
	if s := ml.OffloadStatus(); s.State != mledger.OffloadSuccess || s.LastOffloadLedgerID != st.Ledgers[2].LedgerID {
		t.Fatalf("status %+v", s)
	}
	if n := len(e.objects(t)); n != 3*4 { // data, index, and their .meta sidecars
		t.Fatalf("%d objects: %v", n, e.objects(t))
	}
	// Reads come from the object store: make the bookie copies unreadable
	// by deleting them behind the managed ledger's back.
	for _, l := range st.Ledgers[:3] {
		if err := e.store.Delete(ctx, l.LedgerID); err != nil {
			t.Fatal(err)
		}
	}
	checkAll(t, ml, 35)
	// Offloading again is a no-op.
	if _, err := ml.Offload(ctx, pos[len(pos)-1]); err != nil {
		t.Fatal(err)
	}
	if n := len(e.objects(t)); n != 12 {
		t.Fatalf("%d objects after a second offload", n)
	}
	// Restart: offload state survives; new adds interleave.
	e.restart()
	ml = e.open("t", offCfg(-1))
	if l := ml.Stats().Ledgers[0]; l.Offload == nil || !l.Offload.Complete {
		t.Fatalf("offload context lost on restart: %+v", l)
	}
	addMany(t, ml, "x", 5)
	c, err := ml.NewNonDurableCursor("r", mledger.Earliest)
	if err != nil {
		t.Fatal(err)
	}
	got := datas(readAll(t, c))
	if len(got) != 40 || got[0] != "e-0" || got[34] != "e-34" || got[39] != "x-4" {
		t.Fatalf("after restart: %d entries %v", len(got), got)
	}
	// Seek by publish time into an offloaded ledger ("e-12" is entry 2 of
	// ledger 2: the publish time is the number after the dash).
	pt := func(b []byte) (int64, error) {
		s := string(b)
		var n int64
		_, err := fmt.Sscanf(s[strings.IndexByte(s, '-')+1:], "%d", &n)
		if s[0] == 'x' {
			n += 100
		}
		return n, err
	}
	p, ok, err := ml.FindByPublishTime(ctx, 12, pt)
	if err != nil || !ok || p != pos[12] {
		t.Fatalf("find by time: %v %v %v, want %v", p, ok, err, pos[12])
	}
	// Invalid positions.
	if _, err := ml.Offload(ctx, mledger.Position{LedgerID: 999999, EntryID: 0}); !errors.Is(err, mledger.ErrInvalidPosition) {
		t.Fatalf("offload bad position: %v", err)
	}
}

// crashingOffloader writes the objects and then "dies" before the
// managed ledger can record completion.
type crashingOffloader struct {
	mledger.Offloader
	wrote chan offload.UID
}

func (c *crashingOffloader) Offload(ctx context.Context, src mledger.ReadLedger, uid offload.UID, name string) error {
	if err := c.Offloader.Offload(ctx, src, uid, name); err != nil {
		return err
	}
	c.wrote <- uid
	<-ctx.Done() // hang until the crash cancels us
	return ctx.Err()
}

func TestOffloadInterruptedThenCompletes(t *testing.T) {
	e := newOffEnv(t)
	ctx := ctxT(t)
	crash := &crashingOffloader{Offloader: e.mo, wrote: make(chan offload.UID, 1)}
	cfg := offCfg(-1)
	cfg.Offload.Offloader = crash
	ml := e.open("t", cfg)
	pos := addMany(t, ml, "e", 15) // ledger 1 closed (10), current has 5
	if err := ml.StartOffload(pos[14]); err != nil {
		t.Fatal(err)
	}
	if err := ml.StartOffload(pos[14]); !errors.Is(err, mledger.ErrOffloadInProgress) {
		t.Fatalf("second offload: %v", err)
	}
	uid := <-crash.wrote
	// The uid is recorded before the objects; completion is not.
	l0 := ml.Stats().Ledgers[0]
	if l0.Offload == nil || l0.Offload.UID != uid || l0.Offload.Complete {
		t.Fatalf("prepared context %+v", l0.Offload)
	}
	if keys, _ := e.o.List(ctx, uid.String()); len(keys) == 0 {
		t.Fatal("objects not written")
	}
	e.crash(ml)
	ml = e.open("t", offCfg(-1))
	if l := ml.Stats().Ledgers[0]; l.Offload == nil || l.Offload.Complete || l.Offload.UID != uid {
		t.Fatalf("after crash %+v", l.Offload)
	}
	checkAll(t, ml, 15) // still read from the bookies
	if _, err := ml.Offload(ctx, pos[14]); err != nil {
		t.Fatal(err)
	}
	l := ml.Stats().Ledgers[0]
	if l.Offload == nil || !l.Offload.Complete || l.Offload.UID == uid {
		t.Fatalf("after retry %+v", l.Offload)
	}
	if keys, _ := e.o.List(ctx, uid.String()); len(keys) != 0 {
		t.Fatalf("orphaned objects of the interrupted attempt: %v", keys)
	}
	for _, k := range e.objects(t) {
		if !strings.HasPrefix(k, l.Offload.UID.String()) {
			t.Fatalf("unexpected object %s", k)
		}
	}
	checkAll(t, ml, 15)
}

func TestOffloadStoreDownReads(t *testing.T) {
	e := newOffEnv(t)
	ctx := ctxT(t)
	ml := e.open("t", offCfg(0))
	if _, err := ml.OpenCursor(ctx, "hold", mledger.InitialEarliest); err != nil { // keeps the ledgers
		t.Fatal(err)
	}
	pos := addMany(t, ml, "e", 25)
	if _, err := ml.Offload(ctx, pos[24]); err != nil {
		t.Fatal(err)
	}
	if err := ml.Trim(ctx); err != nil { // lag 0: bookie copies go
		t.Fatal(err)
	}
	st := ml.Stats()
	for _, l := range st.Ledgers[:2] {
		if !l.Offload.BookkeeperDeleted || e.store.Exists(l.LedgerID) {
			t.Fatalf("bookie copy of %d not deleted: %+v", l.LedgerID, l.Offload)
		}
	}
	if st.BookieSize >= st.TotalSize {
		t.Fatalf("sizes %+v", st)
	}
	e.restart() // no cached handles
	ml = e.open("t", offCfg(0))
	if err := os.Rename(e.dir, e.dir+".away"); err != nil {
		t.Fatal(err)
	}
	_, err := ml.ReadEntry(ctx, pos[3])
	if !errors.Is(err, offload.ErrStoreUnavailable) || !strings.Contains(err.Error(), "offloaded ledger") {
		t.Fatalf("read with store down: %v", err)
	}
	// Local (not offloaded) reads are unaffected.
	if en, err := ml.ReadEntry(ctx, pos[22]); err != nil || string(en.Data) != "e-22" {
		t.Fatalf("local read: %v %q", err, en.Data)
	}
	if err := os.Rename(e.dir+".away", e.dir); err != nil {
		t.Fatal(err)
	}
	checkAll(t, ml, 25)
}

func TestOffloadDeletionLag(t *testing.T) {
	e := newOffEnv(t)
	ctx := ctxT(t)
	ml := e.open("t", offCfg(time.Hour))
	if _, err := ml.OpenCursor(ctx, "hold", mledger.InitialEarliest); err != nil {
		t.Fatal(err)
	}
	pos := addMany(t, ml, "e", 15)
	id := pos[0].LedgerID
	if _, err := ml.Offload(ctx, pos[14]); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(59 * time.Minute)
	if err := ml.Trim(ctx); err != nil {
		t.Fatal(err)
	}
	if !e.store.Exists(id) || ml.Stats().Ledgers[0].Offload.BookkeeperDeleted {
		t.Fatal("bookie copy deleted before the lag")
	}
	e.clock.Advance(2 * time.Minute)
	if err := ml.Trim(ctx); err != nil {
		t.Fatal(err)
	}
	if e.store.Exists(id) || !ml.Stats().Ledgers[0].Offload.BookkeeperDeleted {
		t.Fatal("bookie copy kept after the lag")
	}
	checkAll(t, ml, 15)
	// A negative lag never deletes.
	ml2 := e.open("t2", offCfg(-1))
	if _, err := ml2.OpenCursor(ctx, "hold", mledger.InitialEarliest); err != nil {
		t.Fatal(err)
	}
	p2 := addMany(t, ml2, "e", 15)
	if _, err := ml2.Offload(ctx, p2[14]); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(1000 * time.Hour)
	if err := ml2.Trim(ctx); err != nil {
		t.Fatal(err)
	}
	if !e.store.Exists(p2[0].LedgerID) {
		t.Fatal("negative lag deleted the bookie copy")
	}
}

func TestOffloadRetentionDeletesObjects(t *testing.T) {
	e := newOffEnv(t)
	ctx := ctxT(t)
	ml := e.open("t", offCfg(-1)) // retention 0: consumed ledgers go
	c, err := ml.OpenCursor(ctx, "sub", mledger.InitialEarliest)
	if err != nil {
		t.Fatal(err)
	}
	pos := addMany(t, ml, "e", 25)
	if _, err := ml.Offload(ctx, pos[24]); err != nil {
		t.Fatal(err)
	}
	if len(e.objects(t)) != 8 {
		t.Fatalf("objects %v", e.objects(t))
	}
	if err := c.MarkDelete(pos[19]); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ml.Trim(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(ml.Stats().Ledgers); n != 1 {
		t.Fatalf("%d ledgers after trim", n)
	}
	if keys := e.objects(t); len(keys) != 0 {
		t.Fatalf("objects left after retention: %v", keys)
	}
	// Deleting the managed ledger deletes its objects too.
	p2 := addMany(t, ml, "f", 15)
	if _, err := ml.Offload(ctx, p2[14]); err != nil {
		t.Fatal(err)
	}
	if len(e.objects(t)) == 0 {
		t.Fatal("nothing offloaded")
	}
	if err := ml.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if keys := e.objects(t); len(keys) != 0 {
		t.Fatalf("objects left after delete: %v", keys)
	}
}

func TestOffloadAutomaticThreshold(t *testing.T) {
	e := newOffEnv(t)
	ml := e.open("t", offCfg(-1))
	if _, err := ml.OpenCursor(ctxT(t), "hold", mledger.InitialEarliest); err != nil {
		t.Fatal(err)
	}
	pos := addMany(t, ml, "e", 35)
	e.f.Tick(ctxT(t)) // thresholds disabled: nothing
	if ml.OffloadStatus().State != mledger.OffloadNotRun {
		t.Fatal("offloaded with thresholds disabled")
	}
	// Keep about one ledger's bytes on the bookies.
	st := ml.Stats()
	p := mledger.OffloadPolicy{Offloader: e.mo, ThresholdBytes: st.Ledgers[3].Size + st.Ledgers[2].Size, ThresholdSeconds: -1, DeletionLag: -1}
	ml.SetOffloadPolicy(p)
	e.f.Tick(ctxT(t))
	deadline := time.Now().Add(10 * time.Second)
	for ml.OffloadStatus().State != mledger.OffloadSuccess {
		if time.Now().After(deadline) {
			t.Fatalf("status %+v", ml.OffloadStatus())
		}
		time.Sleep(5 * time.Millisecond)
	}
	st = ml.Stats()
	for i, l := range st.Ledgers {
		if done := l.Offload != nil && l.Offload.Complete; done != (i < 2) {
			t.Fatalf("ledger %d offloaded=%v", i, done)
		}
	}
	// By age: every closed ledger once it is a minute old.
	p.ThresholdBytes, p.ThresholdSeconds = -1, 60
	ml.SetOffloadPolicy(p)
	e.f.Tick(ctxT(t)) // would start an offload (status RUNNING) if one were due
	if ml.OffloadStatus().State != mledger.OffloadSuccess || ml.Stats().Ledgers[2].Offload != nil {
		t.Fatal("offloaded before the age threshold")
	}
	e.clock.Advance(time.Minute)
	e.f.Tick(ctxT(t))
	for ml.Stats().Ledgers[2].Offload == nil || !ml.Stats().Ledgers[2].Offload.Complete {
		if time.Now().After(deadline) {
			t.Fatalf("status %+v", ml.OffloadStatus())
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = pos
	checkAll(t, ml, 35)
}

// TestOffloadConcurrentReads: reads and adds keep going while ledgers are
// offloaded (read handles switch under them) and the bookie copies are
// deleted; every read returns the right bytes.
func TestOffloadConcurrentReads(t *testing.T) {
	e := newOffEnv(t)
	ctx := ctxT(t)
	ml := e.open("t", offCfg(0))
	if _, err := ml.OpenCursor(ctx, "hold", mledger.InitialEarliest); err != nil {
		t.Fatal(err)
	}
	pos := addMany(t, ml, "e", 60)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; ; i = (i + 7) % len(pos) {
				select {
				case <-stop:
					return
				default:
				}
				en, err := ml.ReadEntry(ctx, pos[i])
				if err != nil || string(en.Data) != fmt.Sprintf("e-%d", i) {
					errs <- fmt.Errorf("read %d: %q %v", i, en.Data, err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			add(t, ml, fmt.Sprintf("x-%d", i), 1)
		}
	}()
	if _, err := ml.Offload(ctx, pos[59]); err != nil {
		t.Fatal(err)
	}
	if err := ml.Trim(ctx); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	for _, l := range ml.Stats().Ledgers[:5] {
		if l.Offload == nil || !l.Offload.BookkeeperDeleted {
			t.Fatalf("ledger %d: %+v", l.LedgerID, l.Offload)
		}
	}
	for i, p := range pos {
		if en, err := ml.ReadEntry(ctx, p); err != nil || string(en.Data) != fmt.Sprintf("e-%d", i) {
			t.Fatalf("read %d after: %q %v", i, en.Data, err)
		}
	}
}
