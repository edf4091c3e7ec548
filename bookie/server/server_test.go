package server_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/bookie/server"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
	"github.com/magnetar-mq/magnetar/protocol/bkproto"
)

func openBookie(t *testing.T, fs vfs.FS, dir string) *bookie.Bookie {
	t.Helper()
	b, err := bookie.Open(bookie.Options{FS: fs, JournalDir: dir + "/journal", LedgerDirs: []string{dir + "/ledgers"},
		WriteCacheSize: 4 << 20, DiskCheckInterval: -1, GCInterval: -1, JournalMaxGroupWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func exists(t *testing.T, s metadata.Store, p string) bool {
	t.Helper()
	ok, err := s.Exists(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestRegistrationFollowsReadOnly(t *testing.T) {
	ctx := ctxT(t)
	file := filepath.Join(t.TempDir(), "meta.db")
	observer, err := embedded.Open(file, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close()
	session, err := embedded.Open(file, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	efs := vfs.NewErrorFS(vfs.NewOS(), vfs.Never)
	b := openBookie(t, efs, t.TempDir())
	const id = "127.0.0.1:3181"
	reg, err := server.Register(ctx, session, id, b, server.RegisterOptions{CheckInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	writable, readonly := server.AvailablePath+"/"+id, server.ReadOnlyPath+"/"+id
	if !exists(t, observer, writable) || exists(t, observer, readonly) {
		t.Fatalf("after Register: %s exists %v, %s exists %v", writable, exists(t, observer, writable), readonly, exists(t, observer, readonly))
	}
	// The disk fills: read-only, the node moves.
	efs.SetDiskUsage(100, 1)
	if err := b.CheckDisks(); err != nil {
		t.Fatal(err)
	}
	if !b.IsReadOnly() {
		t.Fatal("bookie not read-only with a full disk")
	}
	if err := reg.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if exists(t, observer, writable) || !exists(t, observer, readonly) {
		t.Fatalf("read-only bookie: %s exists %v, %s exists %v", writable, exists(t, observer, writable), readonly, exists(t, observer, readonly))
	}
	// Placement skips it.
	lc, _ := ledger.NewClient(observer, ledger.NewStaticResolver(nil), ledger.Options{})
	defer lc.Close()
	if avail, err := lc.WritableBookies(ctx); err != nil || len(avail) != 0 {
		t.Fatalf("WritableBookies with the only bookie read-only = %v, %v", avail, err)
	}
	// Half full (not the real disk's usage, which may be above the
	// low-water mark on a crowded machine).
	efs.SetDiskUsage(100, 50)
	if err := b.CheckDisks(); err != nil {
		t.Fatal(err)
	}
	if err := reg.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if !exists(t, observer, writable) || exists(t, observer, readonly) {
		t.Fatal("writable again: node did not move back")
	}
	if avail, _ := lc.WritableBookies(ctx); len(avail) != 1 || avail[0] != id {
		t.Fatalf("WritableBookies = %v, want [%s]", avail, id)
	}
	// The session ends (process death): the node disappears.
	session.Close()
	if exists(t, observer, writable) {
		t.Fatal("registration survived the end of its session")
	}
	reg.Close()
}

func TestCookies(t *testing.T) {
	ctx := ctxT(t)
	store, err := embedded.Open(filepath.Join(t.TempDir(), "meta.db"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	fs := vfs.NewOS()
	dir := t.TempDir()
	j, l := dir+"/journal", []string{dir + "/l1", dir + "/l2"}
	c, err := server.CheckCookie(ctx, store, fs, "bk1", j, l)
	if err != nil {
		t.Fatalf("new bookie: %v", err)
	}
	if c.InstanceID == "" || c.BookieID != "bk1" {
		t.Fatalf("cookie %+v", c)
	}
	if !exists(t, store, server.CookiesPath+"/bk1") {
		t.Fatal("cookie not registered")
	}
	if _, err := server.CheckCookie(ctx, store, fs, "bk1", j, l); err != nil {
		t.Fatalf("restart on the same disks: %v", err)
	}
	// Wrong or wiped disks refuse to start.
	other := t.TempDir()
	for name, tc := range map[string]struct {
		id, j string
		l     []string
	}{
		"wiped ledger dir":   {"bk1", j, []string{dir + "/l1", other + "/empty"}},
		"empty disks":        {"bk1", other + "/j", []string{other + "/l"}},
		"other bookie's dir": {"bk2", j, l},
	} {
		if _, err := server.CheckCookie(ctx, store, fs, tc.id, tc.j, tc.l); !errors.Is(err, server.ErrCookieMismatch) {
			t.Errorf("%s: CheckCookie err = %v, want ErrCookieMismatch", name, err)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	// Removing a VERSION file is caught too.
	if err := fs.Remove(dir + "/l2/" + server.CookieFile); err != nil {
		t.Fatal(err)
	}
	if _, err := server.CheckCookie(ctx, store, fs, "bk1", j, l); !errors.Is(err, server.ErrCookieMismatch) {
		t.Fatalf("missing VERSION: %v, want ErrCookieMismatch", err)
	}
}

type tokenAuth struct{ token string }

func (a tokenAuth) Authenticate(_ net.Addr, p []byte) ([]byte, error) {
	if string(p) != a.token {
		return nil, errors.New("bad token")
	}
	return []byte("welcome"), nil
}
func (tokenAuth) Required() bool { return true }

type authClient interface {
	Auth(ctx context.Context, payload []byte) ([]byte, error)
}

type longPoller interface {
	LongPoll(ctx context.Context, ledgerID, prevLAC int64, timeout time.Duration) (int64, []byte, error)
}

func serve(t *testing.T, opts server.Options) (*bookie.Bookie, ledger.BookieClient) {
	t.Helper()
	b := openBookie(t, vfs.NewOS(), t.TempDir())
	s, err := server.New(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	res := ledger.NewNetResolver(ledger.NetOptions{})
	t.Cleanup(func() { res.Close() })
	bc, err := res.Client(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	return b, bc
}

func TestAuthHook(t *testing.T) {
	ctx := ctxT(t)
	_, bc := serve(t, server.Options{Auth: tokenAuth{"sesame"}})
	if _, err := bc.ReadEntry(ctx, 1, 0, false, nil); !errors.Is(err, bkproto.ErrUnauthorized) {
		t.Fatalf("read before auth: %v, want ErrUnauthorized", err)
	}
	ac := bc.(authClient)
	if _, err := ac.Auth(ctx, []byte("wrong")); !errors.Is(err, bkproto.ErrUnauthorized) {
		t.Fatalf("bad token: %v, want ErrUnauthorized", err)
	}
	reply, err := ac.Auth(ctx, []byte("sesame"))
	if err != nil || string(reply) != "welcome" {
		t.Fatalf("Auth = %q, %v", reply, err)
	}
	if _, err := bc.ReadEntry(ctx, 1, 0, false, nil); !errors.Is(err, bkproto.ErrNoLedger) {
		t.Fatalf("read after auth: %v, want ErrNoLedger", err)
	}
}

func addSync(t *testing.T, bc ledger.BookieClient, l, e, lac int64) {
	t.Helper()
	done := make(chan error, 1)
	entry := bkproto.AppendEntry(nil, bkproto.EntryHeader{LedgerID: l, EntryID: e, LAC: lac}, []byte("data"))
	bc.AddEntry(l, e, []byte("k"), entry, false, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestLongPoll(t *testing.T) {
	ctx := ctxT(t)
	_, bc := serve(t, server.Options{})
	lp := bc.(longPoller)
	addSync(t, bc, 5, 0, -1)
	addSync(t, bc, 5, 1, 0)
	// Already past: immediate answer with the entry after the previous LAC.
	lac, entry, err := lp.LongPoll(ctx, 5, -1, time.Second)
	if err != nil || lac != 0 {
		t.Fatalf("LongPoll(-1) = %d, %v", lac, err)
	}
	if h, _, err := bkproto.DecodeEntry(entry); err != nil || h.EntryID != 0 {
		t.Fatalf("LongPoll(-1) entry %+v, %v", h, err)
	}
	// Parked until an add raises the LAC.
	type res struct {
		lac   int64
		entry []byte
		err   error
	}
	ch := make(chan res, 1)
	go func() {
		lac, entry, err := lp.LongPoll(ctx, 5, 0, 10*time.Second)
		ch <- res{lac, entry, err}
	}()
	select {
	case r := <-ch:
		t.Fatalf("long poll answered before the LAC moved: %+v", r)
	case <-time.After(50 * time.Millisecond):
	}
	addSync(t, bc, 5, 2, 1)
	r := <-ch
	if r.err != nil || r.lac != 1 {
		t.Fatalf("woken long poll = %d, %v; want LAC 1", r.lac, r.err)
	}
	if h, _, err := bkproto.DecodeEntry(r.entry); err != nil || h.EntryID != 1 {
		t.Fatalf("woken long poll entry %+v, %v", h, err)
	}
	// Timeout: the LAC, no entry.
	start := time.Now()
	lac, entry, err = lp.LongPoll(ctx, 5, 7, 60*time.Millisecond)
	if err != nil || lac != 1 || entry != nil || time.Since(start) < 60*time.Millisecond {
		t.Fatalf("timed-out long poll = %d, %d bytes, %v after %v", lac, len(entry), err, time.Since(start))
	}
}

// TestPipelinedAddsAcrossConnections: many adds in flight on one
// connection all complete, each answer matched to its request.
func TestPipelinedAdds(t *testing.T) {
	b, bc := serve(t, server.Options{})
	const n = 2000
	errs := make(chan error, n)
	for e := range int64(n) {
		l := e % 7
		entry := bkproto.AppendEntry(nil, bkproto.EntryHeader{LedgerID: l, EntryID: e}, []byte("x"))
		bc.AddEntry(l, e, []byte("k"), entry, false, func(err error) { errs <- err })
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for e := range int64(n) {
		if _, err := b.ReadEntry(e%7, e); err != nil {
			t.Fatalf("entry %d: %v", e, err)
		}
	}
}

// TestPipelinedAddRuns: adds pipelined on one connection in runs per
// ledger (the reader hands each read's adds to the bookie together), with
// a wrong master key inside runs and a fenced ledger taking only recovery
// adds: every answer carries its own add's outcome and the accepted
// entries read back.
func TestPipelinedAddRuns(t *testing.T) {
	b, bc := serve(t, server.Options{})
	if err := b.Fence(3, []byte("k")); err != nil {
		t.Fatal(err)
	}
	const n = 3000
	type res struct {
		e   int64
		err error
	}
	results := make(chan res, n)
	want := make([]error, n)
	for e := range int64(n) {
		l := 1 + (e/40)%3 // runs of 40 adds per ledger
		key, recovery := []byte("k"), false
		switch {
		case e%97 == 13:
			key, want[e] = []byte("wrong"), bkproto.ErrUnauthorized
		case l == 3 && e%2 == 0:
			want[e] = bkproto.ErrFenced
		case l == 3:
			recovery = true
		}
		entry := bkproto.AppendEntry(nil, bkproto.EntryHeader{LedgerID: l, EntryID: e}, []byte("x"))
		bc.AddEntry(l, e, key, entry, recovery, func(err error) { results <- res{e, err} })
	}
	for range n {
		r := <-results
		if w := want[r.e]; (w == nil) != (r.err == nil) || (w != nil && !errors.Is(r.err, w)) {
			t.Fatalf("add %d: %v, want %v", r.e, r.err, w)
		}
	}
	for e := range int64(n) {
		_, err := b.ReadEntry(1+(e/40)%3, e)
		if (want[e] == nil) != (err == nil) {
			t.Fatalf("entry %d reads back: %v (add wanted %v)", e, err, want[e])
		}
	}
}

// TestRegistrationReplacesStale: a bookie restarted after a crash finds
// the registration node of its previous session (alive on the server
// until it expires). With its own token it takes the node over at once;
// a node with another token (another bookie claiming the id) is waited
// for until it goes, and Register fails if it outlives StaleWait.
func TestRegistrationReplacesStale(t *testing.T) {
	ctx := ctxT(t)
	file := filepath.Join(t.TempDir(), "meta.db")
	open := func() *embedded.Store {
		s, err := embedded.Open(file, embedded.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	observer := open()
	b := openBookie(t, vfs.NewOS(), t.TempDir())
	const id = "127.0.0.1:3181"
	writable := server.AvailablePath + "/" + id
	opts := func(token string, wait time.Duration) server.RegisterOptions {
		return server.RegisterOptions{CheckInterval: time.Hour, Token: token, StaleWait: wait}
	}

	// The previous run of this bookie (token "mine") still holds the
	// node: the next one takes it over without waiting.
	prev := open()
	if _, err := server.Register(ctx, prev, id, b, opts("mine", 0)); err != nil {
		t.Fatal(err)
	}
	next := open()
	t0 := time.Now()
	reg, err := server.Register(ctx, next, id, b, opts("mine", time.Minute))
	if err != nil {
		t.Fatalf("register over this bookie's own stale node: %v", err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("took %v to reclaim its own node", d)
	}
	prev.Close() // the old session ends: the node (now next's) stays
	if !exists(t, observer, writable) {
		t.Fatal("registration gone with the previous session")
	}
	reg.Close()

	// Another bookie's node (another token): Register waits for it and
	// registers once that session ends.
	other := open()
	if _, err := server.Register(ctx, other, id, b, opts("theirs", 0)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	mine := open()
	go func() {
		_, err := server.Register(ctx, mine, id, b, opts("mine", time.Minute))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("registered (%v) over another session's node while it lived", err)
	case <-time.After(300 * time.Millisecond):
	}
	other.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("register after the other session ended: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting 10 s after the other session ended")
	}
	mine.Close()

	// ... and gives up after StaleWait.
	other = open()
	if _, err := server.Register(ctx, other, id, b, opts("theirs", 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Register(ctx, open(), id, b, opts("mine", 200*time.Millisecond)); !errors.Is(err, metadata.ErrExists) {
		t.Fatalf("register over a live foreign node = %v, want ErrExists", err)
	}
}
