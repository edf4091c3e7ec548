package functions

import (
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/magnetar-mq/magnetar/internal/atomicfile"
)

// DefaultInstanceUser is the account instances of a root worker run as
// unless Options.InstanceUser names another.
const DefaultInstanceUser = "nobody"

// account is the unprivileged identity instances run as.
type account struct {
	name     string
	uid, gid uint32
}

func lookupAccount(name string) (*account, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("functions: the worker runs as root and instances run as functionsInstanceUser %q, which does not exist on this host: create that account or name another (%v)", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("functions: account %q has uid %q gid %q", name, u.Uid, u.Gid)
	}
	return &account{name: name, uid: uint32(uid), gid: uint32(gid)}, nil
}

// credential is the process credential of an instance: the account's
// uid and gid with no supplementary groups (none of the worker's).
func (a *account) credential() *syscall.Credential {
	if a == nil {
		return nil
	}
	return &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: []uint32{}}
}

// canExec reports whether the account may reach and execute path: every
// directory above it searchable, the file executable, for its uid, gid
// or others.
func (a *account) canExec(path string) bool {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		if !a.may(dir, 1) {
			return false
		}
		if dir == "/" {
			break
		}
	}
	return a.may(abs, 1)
}

// may reports whether the account has permission bit perm (1 execute or
// search, 4 read) on path.
func (a *account) may(path string, perm os.FileMode) bool {
	st, err := os.Stat(path)
	if err != nil {
		return false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	m := st.Mode().Perm()
	switch {
	case sys.Uid == a.uid:
		return m&(perm<<6) != 0
	case sys.Gid == a.gid:
		return m&(perm<<3) != 0
	}
	return m&perm != 0
}

// reachableCopy returns a path the account can execute holding the same
// program as path: path itself, or a hard link (else a copy) in dir,
// which the worker creates for the purpose.
func (a *account) reachableCopy(path, dir string) (string, error) {
	if a == nil || a.canExec(path) {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	_ = os.Chmod(dir, 0o755)
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(dir, filepath.Base(path)+"-"+strconv.FormatInt(st.ModTime().UnixNano(), 36))
	if _, err := os.Stat(dst); err == nil && a.canExec(dst) {
		return dst, nil
	}
	if err := placeProgram(path, dst); err != nil {
		return "", err
	}
	if !a.canExec(dst) {
		return "", fmt.Errorf("functions: instances run as %q cannot reach %s: make the directories above it searchable for that account", a.name, dst)
	}
	return dst, nil
}

// placeProgram puts the program at src under dst, executable, in one
// step a crash cannot split: a hard link renamed into place (the program
// is already on disk), else a copy written with atomicfile (synced before
// the rename), the directory synced either way. A partial copy under
// dst's name would pass the check above and run.
func placeProgram(src, dst string) error {
	tmp := dst + atomicfile.TempInfix + strconv.Itoa(os.Getpid())
	_ = os.Remove(tmp)
	if err := os.Link(src, tmp); err != nil {
		in, err := os.Open(src)
		if err != nil {
			return err
		}
		defer in.Close()
		return atomicfile.Write(dst, atomicfile.Options{Perm: 0o755, SyncDir: true}, func(f *os.File) error {
			_, err := io.Copy(f, in)
			return err
		})
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.Remove(tmp)
		return err
	}
	return atomicfile.Rename(tmp, dst)
}
