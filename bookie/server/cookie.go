package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"

	"github.com/magnetar-mq/magnetar/internal/atomicfile"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/metadata"
)

// Cookie binds a bookie's identity to its directories and cluster
// (docs/storage-format.md, Cookies). It is kept in a VERSION file in the journal
// dir and every ledger dir, and at /ledgers/cookies/<bookieId>.
type Cookie struct {
	Format     int      `json:"format"` // CookieFormat
	BookieID   string   `json:"bookieId"`
	JournalDir string   `json:"journalDir"`
	LedgerDirs []string `json:"ledgerDirs"`
	InstanceID string   `json:"instanceId"`
}

// Cookie locations.
const (
	CookieFormat   = 1
	CookieFile     = "VERSION"
	CookiesPath    = "/ledgers/cookies"
	InstanceIDPath = "/ledgers/INSTANCEID"
)

// ErrCookieMismatch means the bookie's directories do not carry the cookie
// registered for its id (disk replaced or wiped, wrong directories, another
// cluster). The bookie must not start: it would serve missing data. Final
// until an operator fixes the disks or the cookie.
var ErrCookieMismatch = errors.New("server: cookie mismatch")

// Token is a short digest of the cookie: the same for every run of one
// bookie on its directories, different for another bookie or other
// directories (the registration node carries it, RegisterOptions.Token).
func (c Cookie) Token() string {
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

func (c *Cookie) equal(o *Cookie) bool {
	return c.Format == o.Format && c.BookieID == o.BookieID && c.JournalDir == o.JournalDir &&
		slices.Equal(c.LedgerDirs, o.LedgerDirs) && c.InstanceID == o.InstanceID
}

// InstanceID returns the cluster's instance id, creating it on first use.
func InstanceID(ctx context.Context, store metadata.Store) (string, error) {
	v, _, err := store.Get(ctx, InstanceIDPath)
	if err == nil {
		return string(v), nil
	}
	if !errors.Is(err, metadata.ErrNotFound) {
		return "", err
	}
	var b [16]byte
	rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	if _, err := store.Put(ctx, InstanceIDPath, []byte(id), metadata.NotExists); err != nil {
		if errors.Is(err, metadata.ErrExists) {
			return InstanceID(ctx, store)
		}
		return "", err
	}
	return id, nil
}

// CheckCookie verifies, before the bookie opens its directories, that they
// belong to bookieID: with no cookie anywhere (a new bookie) it writes the
// VERSION files and then the registered cookie; otherwise the registered
// cookie and every directory's VERSION file must be identical, else
// ErrCookieMismatch naming the directory.
func CheckCookie(ctx context.Context, store metadata.Store, fs vfs.FS, bookieID, journalDir string, ledgerDirs []string) (Cookie, error) {
	inst, err := InstanceID(ctx, store)
	if err != nil {
		return Cookie{}, err
	}
	want := Cookie{Format: CookieFormat, BookieID: bookieID, JournalDir: journalDir, LedgerDirs: slices.Clone(ledgerDirs), InstanceID: inst}
	dirs := append([]string{journalDir}, ledgerDirs...)
	cpath := path.Join(CookiesPath, bookieID)
	raw, _, err := store.Get(ctx, cpath)
	registered := err == nil
	if err != nil && !errors.Is(err, metadata.ErrNotFound) {
		return Cookie{}, err
	}
	var remote Cookie
	if registered {
		if err := json.Unmarshal(raw, &remote); err != nil {
			return Cookie{}, fmt.Errorf("%w: registered cookie of %s: %v", ErrCookieMismatch, bookieID, err)
		}
		if !remote.equal(&want) {
			return Cookie{}, fmt.Errorf("%w: bookie %s is registered with %+v, started with %+v", ErrCookieMismatch, bookieID, remote, want)
		}
	}
	anyLocal := false
	for _, d := range dirs {
		local, ok, err := readCookie(fs, d)
		if err != nil {
			return Cookie{}, fmt.Errorf("%w: %s: %v", ErrCookieMismatch, d, err)
		}
		switch {
		case ok && !local.equal(&want):
			return Cookie{}, fmt.Errorf("%w: %s/%s holds %+v, want %+v", ErrCookieMismatch, d, CookieFile, local, want)
		case !ok && registered:
			return Cookie{}, fmt.Errorf("%w: bookie %s has a registered cookie but %s has no %s file: wrong or wiped disk (restore it, or re-create the cookie deliberately)",
				ErrCookieMismatch, bookieID, d, CookieFile)
		}
		anyLocal = anyLocal || ok
	}
	if registered {
		return want, nil
	}
	if anyLocal {
		// VERSION files but nothing registered: written by a start that
		// died before registering, since they are written first.
		for _, d := range dirs {
			if _, ok, _ := readCookie(fs, d); !ok {
				return Cookie{}, fmt.Errorf("%w: %s has no %s file while other directories do", ErrCookieMismatch, d, CookieFile)
			}
		}
	}
	b, _ := json.Marshal(&want)
	for _, d := range dirs {
		if err := writeCookie(fs, d, b); err != nil {
			return Cookie{}, err
		}
	}
	if _, err := store.Put(ctx, cpath, b, metadata.NotExists); err != nil {
		return Cookie{}, fmt.Errorf("server: registering cookie of %s: %w", bookieID, err)
	}
	return want, nil
}

func readCookie(fs vfs.FS, dir string) (Cookie, bool, error) {
	f, err := fs.Open(path.Join(dir, CookieFile))
	if errors.Is(err, os.ErrNotExist) {
		return Cookie{}, false, nil
	}
	if err != nil {
		return Cookie{}, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Cookie{}, false, err
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && err != io.EOF {
		return Cookie{}, false, err
	}
	var c Cookie
	if err := json.Unmarshal(b, &c); err != nil {
		return Cookie{}, false, fmt.Errorf("bad %s file: %v", CookieFile, err)
	}
	return c, true, nil
}

// writeCookie writes dir/VERSION durably (temp file, sync, rename, sync
// dir).
func writeCookie(fs vfs.FS, dir string, b []byte) error {
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFS(fs, dir, CookieFile+".tmp", CookieFile, b)
}
