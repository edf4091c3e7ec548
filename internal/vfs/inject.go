package vfs

import (
	"math/rand/v2"
	"path"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Never is an Injector that never fails.
var Never Injector = InjectorFunc(func(Op, string) error { return nil })

func orInjected(err error) error {
	if err == nil {
		return ErrInjected
	}
	return err
}

func opSet(ops []Op) (set [numOps]bool) {
	if len(ops) == 0 {
		for i := range set {
			set[i] = true
		}
	}
	for _, op := range ops {
		set[op] = true
	}
	return set
}

// Error fails every op in ops (every op when none are given) with err, or
// ErrInjected when err is nil.
func Error(err error, ops ...Op) Injector {
	err, set := orInjected(err), opSet(ops)
	return InjectorFunc(func(op Op, _ string) error {
		if set[op] {
			return err
		}
		return nil
	})
}

// DiskFull fails the operations that allocate space (Create, MkdirAll,
// Write, Truncate, Preallocate) with ENOSPC.
func DiskFull() Injector {
	return Error(unix.ENOSPC, OpCreate, OpMkdirAll, OpWrite, OpTruncate, OpPreallocate)
}

// IOError fails ops (every op when none are given) with EIO.
func IOError(ops ...Op) Injector { return Error(unix.EIO, ops...) }

// Counter counts calls of one Op and fails some of them; see FailNth and
// FailAfter.
type Counter struct {
	op     Op
	n      int64
	sticky bool
	err    error
	seen   atomic.Int64
}

// FailNth fails only the nth (1-based) call of op that reaches it, with err
// (ErrInjected when nil).
func FailNth(op Op, n int, err error) *Counter {
	return &Counter{op: op, n: int64(n), err: orInjected(err)}
}

// FailAfter fails the nth call of op that reaches it and every later one:
// a disk that stays broken.
func FailAfter(op Op, n int, err error) *Counter {
	return &Counter{op: op, n: int64(n), sticky: true, err: orInjected(err)}
}

// MaybeError implements Injector.
func (c *Counter) MaybeError(op Op, _ string) error {
	if op != c.op {
		return nil
	}
	i := c.seen.Add(1)
	if i == c.n || (c.sticky && i > c.n) {
		return c.err
	}
	return nil
}

// Seen returns how many calls of the counted op reached c.
func (c *Counter) Seen() int { return int(c.seen.Load()) }

// PathMatch passes to inj only the operations whose path matches pattern
// (path.Match syntax). A pattern without "/" is matched against the last
// element of the path, so "*.log" matches "dir/0001.log"; otherwise against
// the whole cleaned path.
func PathMatch(pattern string, inj Injector) Injector {
	base := !strings.Contains(pattern, "/")
	return InjectorFunc(func(op Op, p string) error {
		name := path.Clean(p)
		if base {
			name = path.Base(name)
		}
		if ok, _ := path.Match(pattern, name); !ok {
			return nil
		}
		return inj.MaybeError(op, p)
	})
}

// Toggle passes operations to an inner Injector only while enabled. A new
// Toggle is disabled, so a test can set up its files first.
type Toggle struct {
	inj Injector
	on  atomic.Bool
}

// NewToggle returns a disabled Toggle around inj.
func NewToggle(inj Injector) *Toggle { return &Toggle{inj: inj} }

// Enable turns injection on.
func (t *Toggle) Enable() { t.on.Store(true) }

// Disable turns injection off.
func (t *Toggle) Disable() { t.on.Store(false) }

// Enabled reports whether injection is on.
func (t *Toggle) Enabled() bool { return t.on.Load() }

// MaybeError implements Injector.
func (t *Toggle) MaybeError(op Op, p string) error {
	if !t.on.Load() {
		return nil
	}
	return t.inj.MaybeError(op, p)
}

// And fails only if every injector fails, and then returns the last one's
// error. Injectors are asked in order and asking stops at the first that
// does not fail, so stateful injectors (FailNth) only count operations that
// passed the ones before them: put filters first.
func And(injs ...Injector) Injector {
	return InjectorFunc(func(op Op, p string) error {
		var err error
		for _, inj := range injs {
			if err = inj.MaybeError(op, p); err == nil {
				return nil
			}
		}
		return err
	})
}

// Or returns the first error of injs, asked in order; the ones after it are
// not asked.
func Or(injs ...Injector) Injector {
	return InjectorFunc(func(op Op, p string) error {
		for _, inj := range injs {
			if err := inj.MaybeError(op, p); err != nil {
				return err
			}
		}
		return nil
	})
}

// Randomly passes each operation to inj with probability p, drawing from a
// PCG generator seeded with seed: the same call sequence fails the same way.
func Randomly(p float64, seed uint64, inj Injector) Injector {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return InjectorFunc(func(op Op, path string) error {
		mu.Lock()
		hit := rng.Float64() < p
		mu.Unlock()
		if !hit {
			return nil
		}
		return inj.MaybeError(op, path)
	})
}
